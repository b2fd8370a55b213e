"""Messages name what the user did: the option given, a device is never a pot target, a parser error is one
line, a pot given as a document points at --load-pot, --json errors are a JSON object, an answer budget the pot
cannot hold is refused before the model loads (so are a question too long and a pot too small), a question
forgotten or given before the file gets a hint, and a loaded pot is not called "read 0 tokens"."""

from __future__ import annotations

import io
import json
import os

import pytest
from typer.testing import CliRunner

from infinipot_cli.runtime import loading as model_mod
from infinipot_cli.app import app
from infinipot_cli.cli.display import Display
from infinipot_cli.pot.engine import Event
from infinipot_cli.errors import UsageError
from infinipot_cli.pot.potfile import check_save_target
from helpers import one_line

STORY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs", "lighthouse.txt")


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the check")
    monkeypatch.setattr(model_mod, "load_model", refuse)


def invoke(args, **kw):
    return CliRunner().invoke(app, args, **kw)


def test_a_pot_too_small_names_pot_size(no_model):
    err = one_line(invoke(["ask", STORY, "q", "--pot-size", "1", "-q"]))
    assert "--pot-size 1" in err and "--keep" not in err
    err = one_line(invoke(["ask", STORY, "q", "--pot-size", "10", "-q"]))
    assert "--pot-size 10" in err and "--keep (" not in err and "pinned header" in err
    err = one_line(invoke(["ask", STORY, "q", "--pot-size", "60", "--keep", "8", "-q"]))
    assert "--keep (8) must exceed the pinned header" in err


@pytest.mark.parametrize("target", ["/dev/stdout", "/dev/stderr", "/dev/fd/1", "/proc/self/fd/1"])
def test_a_stream_is_never_a_pot_target(target):
    with pytest.raises(UsageError, match="device or a process's stream") as e:
        check_save_target(target, force=True)
    assert "--force" not in str(e.value)


def test_parser_errors_are_one_line():
    err = one_line(invoke(["bench", "speed", "--threads", "0"]))
    assert err.startswith("infinipot: error: Invalid value for '--threads'") and "bench speed --help" in err
    err = one_line(invoke(["ask", "--pot-size", "abc", STORY, "q"]))
    assert "'--pot-size'" in err
    err = one_line(invoke(["ask", "--no-such-flag", STORY, "q"]))
    assert "No such option: --no-such-flag" in err


def test_a_pot_given_as_the_document_points_at_load_pot(tmp_path, no_model):
    header = json.dumps({"__metadata__": {"infinipot": "{}"}}, separators=(",", ":")).encode()
    pot = tmp_path / "book.pot"
    pot.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 64)
    err = one_line(invoke(["ask", str(pot), "Who is the keeper?", "-q"]))
    assert "is an infinipot pot file, not a document" in err and f"--load-pot {pot}" in err
    err = one_line(invoke(["ask", "-", "Who is the keeper?", "-q"], input=pot.read_bytes()))
    assert "stdin is an infinipot pot file" in err and "--load-pot FILE" in err


def test_json_errors_are_one_object_on_stdout(tmp_path, no_model):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    r = invoke(["summarize", str(empty), "--json", "-q"])
    assert r.exit_code == 2 and json.loads(r.stdout) == {"error": f"{empty} is empty", "exit_code": 2}
    one_line(r)
    r = invoke(["summarize", str(empty), "--json", "--pot-size", "abc"])
    assert r.exit_code == 2 and json.loads(r.stdout)["exit_code"] == 2
    r = invoke(["summarize", str(empty), "-q"])
    assert r.exit_code == 2 and r.stdout == ""  # without --json, stdout stays empty


def test_an_answer_budget_the_pot_cannot_hold_is_refused_before_the_model_loads(builtin_tok, tmp_path, no_model):
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.potfile import save_pot
    from infinipot_cli.pot.prompts import Prompts
    from tiny_models import make_model_for

    err = one_line(invoke(["ask", STORY, "Who is the keeper?", "--max-new-tokens", "100000", "-q"]))
    assert "--max-new-tokens 100000 does not fit the pot" in err and "raise --pot-size" in err
    model = make_model_for(builtin_tok)  # a model folder of its own: the pot is this model's
    folder = tmp_path / "tiny"
    model.save_pretrained(folder)
    builtin_tok.save_pretrained(folder)
    P = Prompts(builtin_tok)
    eng = Engine(model, builtin_tok, PotConfig(size=512, keep=256).validate(), catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    eng.feed(builtin_tok.encode(open(STORY).read()[:3000]))
    eng.finish()
    pot = tmp_path / "p.pot"
    save_pot(pot, eng, {"model": str(folder)})
    for cmd in (["ask", "--load-pot", str(pot), "Who is the keeper?"], ["summarize", "--load-pot", str(pot)]):
        err = one_line(invoke(cmd + ["-m", str(folder), "--max-new-tokens", "100000", "-q"]))
        assert "does not fit the pot: 512 entries hold the prompt" in err and "raise --pot-size" not in err


def test_a_loaded_pot_is_not_read_zero_tokens():
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    with d:
        d.on_event(Event(kind="answer", tokens_read=12_345, cycles=7, entries=1024, pinned=38, distilled=1024,
                         size=2048, where="", elapsed_s=0.1, kv_bytes=1))
    out = buf.getvalue()
    assert "read 0 tokens" not in out and "a pot of 12,345 tokens read before, 7 CCD cycles" in out


# ---- checks that need no model run before it loads; argument mix-ups get a hint ----------------------


def test_a_too_long_question_is_named_before_the_model_loads(no_model):
    q = "What did the keeper write about the storm and the ships? " * 900  # ~50,000 characters
    err = one_line(invoke(["ask", STORY, q, "-q"]))
    assert "question is too long" in err and "shorten the question" in err


def test_a_too_small_pot_fails_before_the_model_loads(no_model):
    err = one_line(invoke(["summarize", STORY, "--pot-size", "10", "-q"]))
    assert "pot is too small" in err or "must exceed the pinned header" in err
    err = one_line(invoke(["summarize", STORY, "--pot-size", "60", "--keep", "8", "-q"]))
    assert "must exceed the pinned header" in err


def test_ask_with_the_question_forgotten_or_after_the_file(no_model, monkeypatch):
    monkeypatch.setattr("infinipot_cli.cli.commands._stdin_piped", lambda: False)
    err = one_line(invoke(["ask", STORY]))
    assert "missing QUESTION" in err and STORY in err
    err = one_line(invoke(["ask", "What was the cat called?", STORY]))
    assert "document comes first" in err and f'ask {STORY} "What was the cat called?"' in err
