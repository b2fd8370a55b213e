"""The `infinipot` command: commands, formats, stdin, --json schema, stdout/stderr split, exit codes."""

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLES = os.path.join(ROOT, "sample_docs")
CLI = [sys.executable, "-m", "infinipot_cli"]
FAST = ["--pot-size", "512", "--keep", "256", "--max-new-tokens", "24", "-q"]


def runner():
    try:
        return CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart by default
        return CliRunner()


def invoke(args, input=None):
    return runner().invoke(app, args, input=input)


# ---- usage and bad input: exit 2 and one line on stderr, before any model is loaded -----------------

STORY = os.path.join(SAMPLES, "lighthouse.txt")


@pytest.mark.parametrize("args,says", [
    (["ask"], "missing question"),
    (["ask", "a", "b", "c"], "too many arguments"),
    (["ask", STORY, "q", "--method", "nope"], "unknown method"),
    (["ask", STORY, "q", "--format", "docx"], "--format"),
    (["read", STORY], "--save-pot"),  # read needs --save-pot
    (["summarize", "--max-new-tokens", "0", STORY], "--max-new-tokens"),
    (["ask", STORY, "q", "--method", "infinipot+segment=-1"], "segment"),
    (["ask", STORY, "q", "--method", "infinipot+segment"], "bad method option"),  # an option without a value
    (["ask", STORY, "q", "--keep", "4096"], "--keep"),
    (["ask", STORY, "q", "--nuc-ratio", "2"], "--nuc-ratio"),
    (["ask", "--load-pot", STORY, "q"], "not an infinipot pot file"),  # checked before the model loads
])
def test_usage_errors_exit_2(args, says, monkeypatch):
    import infinipot_cli.runtime.loading as model_mod

    def no_model(*a, **k):
        raise AssertionError("the model must not be loaded for a usage error")

    monkeypatch.setattr(model_mod, "load_model", no_model)
    r = invoke(args)
    assert r.exit_code == 2, r.output
    err = r.stderr.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert says.lower() in err.lower(), err


def test_a_file_with_piped_stdin_is_ambiguous(monkeypatch):
    monkeypatch.setattr("infinipot_cli.cli.commands._stdin_piped", lambda: True)
    r = invoke(["ask", STORY, "-q"], input="What was the cat called?")
    assert r.exit_code == 2 and "piped on stdin" in r.stderr


def _bad_input(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return str(p)


@pytest.mark.parametrize("name,data,words", [
    ("empty.txt", b"", "empty"),
    ("blob.bin", bytes(range(256)) * 64, "binary"),
    ("broken.pdf", b"%PDF-1.7\n1 0 obj <<", "pdf"),
])
def test_bad_input_one_line_exit_2(tmp_path, name, data, words):
    path = _bad_input(tmp_path, name, data)
    r = invoke(["ask", path, "what?", "-q"])
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert err.startswith("infinipot: error:") and len(err.splitlines()) == 1, err
    assert words in err.lower()
    assert r.stdout == ""


def test_missing_file(tmp_path):
    r = invoke(["summarize", str(tmp_path / "nope.pdf"), "-q"])
    assert r.exit_code == 2 and "nope.pdf" in r.stderr


def test_binary_stdin_refused():
    p = subprocess.run(CLI + ["ask", "-", "what?", "-q"], input=b"\x00\x01\x02" * 5000, capture_output=True)
    assert p.returncode == 2
    assert b"binary" in p.stderr and b"Traceback" not in p.stderr and p.stdout == b""


def test_closed_stdin_is_one_line_exit_2():
    """`ask - Q <&-`: standard input closed, not empty: one line saying so, exit 2 (was an AttributeError)."""
    p = subprocess.run(["bash", "-c", " ".join(CLI) + " ask - 'what?' -q <&-"], capture_output=True)
    assert p.returncode == 2, p.stderr
    assert b"standard input is closed" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert b"Traceback" not in p.stderr and p.stdout == b""


def test_missing_model_is_one_line_exit_1(tmp_path):
    r = invoke(["ask", os.path.join(SAMPLES, "lighthouse.txt"), "q", "-q", "-m", str(tmp_path / "no-model")])
    assert r.exit_code == 1
    assert "not found" in r.stderr and len(r.stderr.strip().splitlines()) == 1


# ---- real runs on the built-in model ---------------------------------------------------------------

def test_ask_text_json_schema(builtin):
    r = invoke(["ask", os.path.join(SAMPLES, "lighthouse.txt"), "What was the keeper's cat called?", "--json"] + FAST)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)  # exactly one JSON object, nothing else on stdout
    for k in ("answer", "model", "method", "tokens_read", "sources", "pot", "timings"):
        assert k in out
    assert out["method"] == "infinipot" and out["tokens_read"] > 2000
    # the whole story through a 512-entry pot read with the question: the clause with the answer survives ~13
    # distillations and the model answers from it (the pot's own entries: test_passkey_builtin.py, make test-all)
    assert "Biscuit" in out["answer"], out["answer"]
    pot = out["pot"]
    for k in ("size", "keep", "entries", "peak_entries", "cycles", "kv_bytes"):
        assert k in pot
    assert pot["peak_entries"] <= pot["size"] == 512 and pot["cycles"] >= 5
    for k in ("load_s", "read_s", "distill_s", "answer_s"):
        assert out["timings"][k] >= 0
    src = out["sources"][0]
    assert src["format"] == "text" and src["tokens"] == out["tokens_read"] and src["path"].endswith("lighthouse.txt")
    # each evidence passage with the scores that ranked it: the words', the words the model expected there while
    # reading, and the model's where it judged; read with the question, the last is the read's own, ranked by the
    # question's attention while reading
    *found, read = out["evidence"]
    assert found and all(set(e["scores"]) <= {"words", "expected", "model"} for e in found)
    assert all(e["scores"]["words"] > 0 or e["scores"].get("expected", 0) > 0 for e in found)
    assert {"words", "read"} <= set(read["scores"]) <= {"words", "expected", "read"} and read["scores"]["words"] >= 0
    # read with the question: where its attention was strongest while reading (the live view's "focus" line)
    assert 0 <= out["focus"]["token"] < out["tokens_read"] and out["focus"]["where"].startswith("line ")


def test_answer_streams_to_stdout_only(builtin):
    """Plain run in a subprocess: the answer alone on stdout, progress lines on stderr."""
    p = subprocess.run(CLI + ["ask", os.path.join(SAMPLES, "report.html"), "What was the puffin count on Kestrel Rock?",
                              "--max-new-tokens", "40"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "412" in p.stdout
    assert "tok" in p.stderr  # the plain progress / summary lines
    assert "pot" not in p.stdout.lower()


def test_stdin_and_multiple_inputs(builtin, story_opening, monkeypatch):
    text = open(story_opening, encoding="utf-8").read()
    r = invoke(["ask", "-i", "-", "-i", os.path.join(SAMPLES, "report.html"), "--json"] + FAST
               + ["Who led the survey?"], input=text)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert [s["path"] for s in out["sources"]][0] == "-"
    assert len(out["sources"]) == 2 and out["tokens_read"] == sum(s["tokens"] for s in out["sources"])
    # piped stdin without a SOURCE argument
    monkeypatch.setattr("infinipot_cli.cli.commands._stdin_piped", lambda: True)
    r2 = invoke(["summarize", "--json", "--max-new-tokens", "8", "-q"], input="A short note about the harbour. " * 40)
    assert r2.exit_code == 0, r2.stderr
    assert json.loads(r2.stdout)["sources"][0]["path"] == "-"


# every method's mechanics: test_engine.py on tiny models; make test runs --method through the CLI with tova, on
# the story's first part (~1,200 tokens: a 512-entry pot distils)
@pytest.mark.parametrize("method", ["tova", pytest.param("full", marks=pytest.mark.slow)])
def test_baseline_methods_run(builtin, story_part, method):
    r = invoke(["ask", story_part, "Who kept the lighthouse?", "--json", "--method", method] + FAST)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["method"] == method
    if method not in ("full", "snapkv"):
        assert out["pot"]["peak_entries"] <= 512 < out["tokens_read"] and out["pot"]["cycles"] >= 1


def test_dev_null_on_stdin_is_not_piped_text():
    """`infinipot ask FILE </dev/null`: the question is missing, not "text is piped on stdin"."""
    with open(os.devnull, "rb") as null:
        p = subprocess.run([sys.executable, "-m", "infinipot_cli", "ask", STORY], stdin=null,
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "missing QUESTION" in p.stderr, p.stderr
