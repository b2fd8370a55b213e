"""A model folder whose config.json is broken (-m FOLDER, a truncated or damaged file) is refused in one line that
names the file and what is wrong with it, exit 1 as the other model-loading errors, before anything loads; it was
"could not load the tokenizer of badmodel from badmodel: OSError" (docs/results/hostile-inputs.md, fifth round)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.errors import ModelError
from infinipot_cli.runtime import loading
from helpers import one_line

CONFIG = '{\n  "architectures": ["LlamaForCausalLM"],\n  "model_type": "llama",\n  "hidden_size": 576\n}\n'


@pytest.fixture
def doc(tmp_path):
    p = tmp_path / "doc.txt"
    p.write_text("The keeper of the light was Tobias Fenwick.\n")
    return str(p)


def _folder(tmp_path, content: bytes) -> str:
    d = tmp_path / "badmodel"
    d.mkdir(parents=True)
    (d / "config.json").write_bytes(content)
    (d / "tokenizer.json").write_text("{}")
    return str(d)


@pytest.fixture
def no_load(monkeypatch):
    """The tokenizer and the weights are never reached: the folder is refused first."""
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the config was checked")
    import transformers

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", refuse)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", refuse)


@pytest.mark.parametrize("content,says", [
    (CONFIG.encode()[:60], "is not valid JSON (Unterminated string starting at: line 3, column 17)"),
    (b"", "is not valid JSON (Expecting value: line 1, column 1)"),
    (b'{"model_type": "llama",', "is not valid JSON"),
    (b"[1, 2, 3]", "is not a model config: it holds a list"),
    (b"{}", "is not a model config: it holds an empty object"),
    (b'"llama"', "is not a model config: it holds a string"),
    (b"\xff\xfe{\x00}\x00", "is not a model config: it is not text"),
])
def test_a_broken_config_is_one_line_naming_the_file(tmp_path, doc, no_load, content, says):
    folder = _folder(tmp_path, content)
    for args in (["ask", doc, "Who kept the light?", "-m", folder, "-q"], ["read", doc, "-m", folder, "--save-pot", str(tmp_path / "d.pot"), "-q"]):
        err = one_line(CliRunner().invoke(app, args), code=ModelError.exit_code)
        assert err.startswith("infinipot: error: ") and f"{folder}/config.json" in err and says in err, err
        assert "OSError" not in err and "Traceback" not in err


def test_the_json_error_is_one_object(tmp_path, doc, no_load):
    import json

    folder = _folder(tmp_path, CONFIG.encode()[:60])
    r = CliRunner().invoke(app, ["ask", doc, "Who?", "-m", folder, "--json", "-q"])
    assert r.exit_code == 1
    got = json.loads(r.stdout)
    assert got["exit_code"] == 1 and "is not valid JSON" in got["error"]


def test_a_good_config_passes_the_check(tmp_path):
    folder = _folder(tmp_path, CONFIG.encode())
    assert loading.resolve_model_path(folder) == (folder, loading.Path(folder))
    with pytest.raises(ModelError, match="not valid JSON"):
        loading.check_config(loading.Path(_folder(tmp_path / "x", b"{")) / "config.json")
