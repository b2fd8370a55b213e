"""One switch for the answer runtime, $INFINIPOT_DECODE (infinipot_cli/runtime/switch.py): hf (the forward for every token),
eager (the hand-written step, no compiled library or CUDA graph) and compiled (the default) write the same greedy
answer token for token; each mode runs only its own pieces; a bad value is one line and exit 2 before anything
loads; `infinipot models` shows the runtime."""

import json

import pytest
import torch
from transformers import DynamicCache
from typer.testing import CliRunner

from infinipot_cli.runtime import compiled_step, decode_step, q4, switch
from infinipot_cli.app import app
from infinipot_cli.runtime.generate import AnswerCache, answer_room, generate
from infinipot_cli.runtime.loading import load_model, with_cache
from test_engine import PROMPT, doc_ids
from tiny_models import LetterTokenizer, make_model


def runner():
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart by default
        return CliRunner()


class _Spy:
    """Stands for a loaded compiled_step.Compiled: counts its calls and runs the eager layers (the real libraries'
    tokens are the eager step's: tests/test_compiled_step.py)."""

    def __init__(self):
        self.calls = 0

    @staticmethod
    def fits(keys):
        return True

    def __call__(self, step, x, rows, ropes, masks, keys, values):
        self.calls += 1
        return step.layers_forward(x, rows, ropes, masks, keys, values)


def _answer(model, ctx, n):
    cache = DynamicCache()
    with torch.no_grad():
        model.model(input_ids=torch.tensor([ctx]), **with_cache(model.model, cache), use_cache=True)
    return generate(model, AnswerCache.from_cache(cache, answer_room(len(PROMPT), n)), PROMPT, n, stop_ids=set())


@pytest.mark.parametrize("arch", ["llama", "qwen3"])
def test_hf_eager_and_compiled_write_the_same_answer(arch, monkeypatch):
    model = make_model(arch)
    spy = _Spy()
    monkeypatch.setattr(compiled_step, "load", lambda step: spy)
    ctx, n = doc_ids(70, seed=3), 40
    answers = {}
    for mode in ("hf", "eager", "compiled", None):
        if mode is None:
            monkeypatch.delenv(switch.ENV, raising=False)
        else:
            monkeypatch.setenv(switch.ENV, mode)
        calls = spy.calls
        step = decode_step.for_model(model)
        assert (step is None) == (mode == "hf")
        answers[mode] = _answer(model, ctx, n)
        ran_compiled = spy.calls - calls
        assert ran_compiled == (0 if mode in ("hf", "eager") else n - 1), mode  # the first token: the prefill's
    assert len(answers["hf"]) == n
    assert answers["eager"] == answers["hf"] and answers["compiled"] == answers["hf"] and answers[None] == answers["hf"]


def test_decode_mode_values(monkeypatch):
    monkeypatch.delenv(switch.ENV, raising=False)
    assert switch.decode_mode() == "compiled"
    for raw, want in (("hf", "hf"), (" Eager ", "eager"), ("compiled", "compiled"), ("", "compiled")):
        monkeypatch.setenv(switch.ENV, raw)
        assert switch.decode_mode() == want
    monkeypatch.setenv(switch.ENV, "fast")
    with pytest.raises(switch.UsageError, match="INFINIPOT_DECODE='fast'"):
        switch.decode_mode()


def test_hf_loads_no_four_bit_matrices_and_no_step(tmp_path, monkeypatch):
    folder = tmp_path / "tiny"
    make_model("llama").save_pretrained(str(folder))
    (folder / "infinipot.json").write_text("{}")  # as a GGUF converted by infinipot: 4-bit matrices wanted
    attached = []
    monkeypatch.setattr(q4, "attach", lambda model, path: attached.append(path) or 0)
    for mode, q4_runs in (("hf", False), ("eager", True), ("compiled", True)):
        monkeypatch.setenv(switch.ENV, mode)
        attached.clear()
        lm = load_model(str(folder), "cpu", "float32", tokenizer=LetterTokenizer())
        assert bool(attached) == q4_runs, mode
        step = getattr(lm.model, "_infinipot_decode_step", None)
        assert (step is None) == (mode == "hf"), mode
        if step is not None:
            assert step.fast == (mode == "compiled")


@pytest.mark.parametrize("args", [["models"], ["models", "--json"], ["models", "--compile"],
                                  ["ask", "nothing-here.txt", "what?"], ["summarize", "nothing-here.txt"]])
def test_a_bad_value_is_one_line_and_exit_2(args, monkeypatch):
    monkeypatch.setenv(switch.ENV, "fastest")
    r = runner().invoke(app, args)
    assert r.exit_code == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "INFINIPOT_DECODE='fastest'" in lines[0] and "hf, eager or compiled" in lines[0]


def test_models_shows_the_runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path / "ipcache"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))  # the default cache (looked in too) empty as well
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "no-ollama"))
    monkeypatch.delenv(switch.ENV, raising=False)
    r = runner().invoke(app, ["models", "--json"])
    assert r.exit_code == 0, r.stderr
    rt = json.loads(r.stdout)["runtime"]
    # nothing built in this cache: no compiled step, no exact operations
    assert rt["decode"] == "compiled" and rt["decode_step"] and rt["q4"]
    assert not rt["compiled_step"] and not rt["exact_ops"]
    built = tmp_path / "ipcache" / "compiled"
    built.mkdir(parents=True)
    (built / "decode-step-0123.so").write_bytes(b"")
    (built / "exact-ops-0123.so").write_bytes(b"")
    rt = json.loads(runner().invoke(app, ["models", "--json"]).stdout)["runtime"]
    assert rt["compiled_step"] and rt["exact_ops"]
    monkeypatch.setenv(switch.ENV, "eager")
    rt = json.loads(runner().invoke(app, ["models", "--json"]).stdout)["runtime"]
    assert (rt["decode"], rt["decode_step"], rt["compiled_step"], rt["exact_ops"], rt["graphed"]) == \
        ("eager", True, False, False, False)
    monkeypatch.setenv(switch.ENV, "hf")
    rt = json.loads(runner().invoke(app, ["models", "--json"]).stdout)["runtime"]
    assert not any(rt[k] for k in ("decode_step", "compiled_step", "exact_ops", "q4", "graphed"))
    r = runner().invoke(app, ["models"])
    assert r.exit_code == 0 and "INFINIPOT_DECODE=hf" in r.stdout and "transformers' forward only" in r.stdout


def test_compile_refuses_under_hf_and_eager(monkeypatch):
    for mode in ("hf", "eager"):
        monkeypatch.setenv(switch.ENV, mode)
        r = runner().invoke(app, ["models", "--compile"])
        assert r.exit_code == 2 and f"INFINIPOT_DECODE={mode} answers without the compiled step" in r.stderr
