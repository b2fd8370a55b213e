"""A pot made by another model is refused in one line, before this model's weights load (the check needs only
its config and tokenizer), naming the model that made it; `inspect` still shows it."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from infinipot_cli.runtime import loading as model_mod
from infinipot_cli.app import app
from infinipot_cli.pot.config import PotConfig
from infinipot_cli.pot.engine import Engine
from infinipot_cli.pot.potfile import save_pot


def _folder(tmp_path, tok, name, layers):
    from transformers import AutoModelForCausalLM, LlamaConfig

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, head_dim=16)
    folder = tmp_path / name
    AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def made(tmp_path_factory, builtin_tok):
    """(pot made by tiny model A, folder of A, folder of another tiny model B)"""
    tmp = tmp_path_factory.mktemp("models")
    a, b = _folder(tmp, builtin_tok, "tiny-a", 2), _folder(tmp, builtin_tok, "tiny-b", 3)
    lm = model_mod.load_model(str(a))
    eng = Engine(lm.model, lm.tokenizer, PotConfig(size=128, keep=64).validate(), catalyst_ids=[11, 12])
    eng.pin([1, 2, 3])
    eng.feed(builtin_tok.encode("The keeper climbed the steps every night. " * 30))
    eng.finish()
    pot = tmp / "a.pot"
    save_pot(pot, eng, {"model": lm.name})
    return pot, a, b


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the check")
    monkeypatch.setattr(model_mod, "load_model", refuse)


@pytest.mark.parametrize("other", ["builtin", "tiny-b"])
def test_another_models_pot_is_refused_before_the_load(made, no_model, other):
    pot, a, b = made
    args = ["ask", "--load-pot", str(pot), "Who climbed the steps?", "-q"] + (["-m", str(b)] if other == "tiny-b" else [])
    r = CliRunner().invoke(app, args)
    err = r.stderr.strip()
    assert r.exit_code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, r.output
    assert f"was made by another model: {a}" in err and f"load it with -m {a}" in err


def test_inspect_shows_which_model_made_it(made):
    pot, a, _ = made
    r = CliRunner().invoke(app, ["inspect", str(pot)])
    assert r.exit_code == 0 and any(line.startswith("model") and str(a) in line for line in r.stdout.splitlines())
