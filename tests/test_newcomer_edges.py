"""Rough edges a newcomer hits: checks that need no model run before it loads; argument mix-ups get a hint;
a FIFO with no writer says what it waits for; progress follows the tokens forwarded; Sphinx heading marks are
not text; `models` counts parameters once."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading

import pytest
from typer.testing import CliRunner

from infinipot_cli import model as model_mod
from infinipot_cli.cli import app
from infinipot_cli.documents.html import html_to_blocks

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs")
STORY = os.path.join(SAMPLES, "lighthouse.txt")


def invoke(args, **kw):
    return CliRunner().invoke(app, args, **kw)


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the check")
    monkeypatch.setattr(model_mod, "load_model", refuse)


def _one_line(r, code=2):
    err = r.stderr.strip()
    assert r.exit_code == code, r.output
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_a_too_long_question_is_named_before_the_model_loads(no_model):
    q = "What did the keeper write about the storm and the ships? " * 900  # ~50,000 characters
    err = _one_line(invoke(["ask", STORY, q, "-q"]))
    assert "question is too long" in err and "shorten the question" in err


def test_a_too_small_pot_fails_before_the_model_loads(no_model):
    err = _one_line(invoke(["summarize", STORY, "--pot-size", "10", "-q"]))
    assert "pot is too small" in err or "must exceed the pinned header" in err
    err = _one_line(invoke(["summarize", STORY, "--pot-size", "60", "--keep", "8", "-q"]))
    assert "must exceed the pinned header" in err


def test_a_damaged_pot_is_found_before_the_model_loads(builtin, tmp_path, monkeypatch):
    pot = tmp_path / "p.pot"
    r = invoke(["read", STORY, "--save-pot", str(pot), "--pot-size", "512", "--keep", "256", "-q"])
    assert r.exit_code == 0, r.stderr
    data = bytearray(pot.read_bytes())
    data[-100] ^= 0xFF  # flip bits in the tensor data: the header still parses
    pot.write_bytes(bytes(data))

    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the checksum check")
    monkeypatch.setattr(model_mod, "load_model", refuse)
    err = _one_line(invoke(["ask", "--load-pot", str(pot), "What was the cat called?", "-q"]))
    assert "checksum" in err


def test_load_pot_accepts_the_settings_it_already_has(builtin, tmp_path):
    pot = tmp_path / "p.pot"
    assert invoke(["read", STORY, "--save-pot", str(pot), "--pot-size", "512", "--keep", "256", "-q"]).exit_code == 0
    r = invoke(["ask", "--load-pot", str(pot), "What was the cat called?", "--pot-size", "512", "--keep", "256",
                "-q", "--max-new-tokens", "8", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["pot"]["size"] == 512
    err = _one_line(invoke(["ask", "--load-pot", str(pot), "q", "--pot-size", "1024", "-q"]))
    assert "--pot-size 1024 (the pot has 512)" in err


def test_ask_with_the_question_forgotten_or_after_the_file(no_model, monkeypatch):
    monkeypatch.setattr("infinipot_cli.cli._stdin_piped", lambda: False)
    err = _one_line(invoke(["ask", STORY]))
    assert "missing QUESTION" in err and STORY in err
    err = _one_line(invoke(["ask", "What was the cat called?", STORY]))
    assert "document comes first" in err and f'ask {STORY} "What was the cat called?"' in err


def test_dev_null_on_stdin_is_not_piped_text():
    """`infinipot ask FILE </dev/null`: the question is missing, not "text is piped on stdin"."""
    with open(os.devnull, "rb") as null:
        p = subprocess.run([sys.executable, "-m", "infinipot_cli.cli", "ask", STORY], stdin=null,
                           capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "missing QUESTION" in p.stderr, p.stderr


def test_a_fifo_with_no_writer_says_what_it_waits_for(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    p = subprocess.Popen([sys.executable, "-m", "infinipot_cli.cli", "ask", str(fifo), "q"],
                         stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    got = []
    t = threading.Thread(target=lambda: got.append(p.stderr.readline()), daemon=True)
    t.start()
    t.join(60)
    p.kill()
    p.wait()
    assert got and "waiting for a writer on the named pipe" in got[0], got


def test_progress_follows_the_tokens_forwarded():
    from infinipot_cli.reader import _ProgressMarks

    m = _ProgressMarks()
    for fed, f in ((100, 0.3), (200, 0.9)):
        m.reached(f)
        m.add(fed)
    assert m.at(0) == 0.0 and m.at(200) == 0.9 and m.at(500) == 0.9
    assert m.at(50) == pytest.approx(0.15) and m.at(150) == pytest.approx(0.6)


def test_progress_is_not_ahead_of_the_read(builtin, monkeypatch, tmp_path):
    """Each progress value reported for a text source is at most the share of its tokens forwarded (+ a piece)."""
    from infinipot_cli import reader

    seen = []
    real = reader.read_source

    def spy(engine, tok, src, rec, label="", skip_tokens=0, progress=None):
        def p(f):
            seen.append((f, engine.tokens_read))
            progress(f)
        return real(engine, tok, src, rec, label=label, skip_tokens=skip_tokens, progress=p)

    monkeypatch.setattr("infinipot_cli.reader.read_source", spy)
    r = invoke(["read", STORY, "--save-pot", str(tmp_path / "p.pot"), "--pot-size", "512", "--keep", "256", "-q"])
    assert r.exit_code == 0, r.stderr
    total = seen[-1][1]
    assert seen[-1][0] == pytest.approx(1.0, abs=0.02)
    for f, forwarded in seen[:-1]:
        assert f <= forwarded / total + 0.1, (f, forwarded, total)


def test_sphinx_heading_marks_are_not_text():
    html = ('<html><body><h1>Abstract<a class="headerlink" href="#abstract" title="Permalink">¶</a></h1>'
            '<p>Body text <a href="#x">a real link</a>.</p><h2>Usage<a href="#usage">#</a></h2></body></html>')
    text = " ".join(b.text for b in html_to_blocks(html))
    assert "¶" not in text and "Abstract" in text and "a real link" in text
    assert "Usage#" not in text and "Usage" in text


def test_models_counts_parameters_once(tmp_path):
    from infinipot_cli.models import Q4_SIDECAR, safetensors_params

    def write(name, shapes):
        header = {k: {"dtype": "F32", "shape": s, "data_offsets": [0, 0]} for k, s in shapes.items()}
        raw = json.dumps(header).encode()
        (tmp_path / name).write_bytes(struct.pack("<Q", len(raw)) + raw)

    write("model.safetensors", {"w": [10, 10]})
    write(Q4_SIDECAR, {"w.q": [10, 5], "w.s": [10, 1]})
    assert safetensors_params(tmp_path) == 100


def test_a_document_that_changes_while_read_is_flagged(builtin, tmp_path, monkeypatch):
    from infinipot_cli import engine as engine_mod

    doc = tmp_path / "log.txt"
    doc.write_text(open(STORY).read())
    real, calls = engine_mod.Engine.feed, {"n": 0}

    def feed_and_append(self, ids, where=""):
        calls["n"] += 1
        if calls["n"] == 2:
            with open(doc, "a") as f:
                f.write("a new line written by another program\n")
        return real(self, ids, where)

    monkeypatch.setattr(engine_mod.Engine, "feed", feed_and_append)
    r = invoke(["read", str(doc), "--save-pot", str(tmp_path / "p.pot"), "--pot-size", "512", "--keep", "256", "-q"])
    assert r.exit_code == 0, r.stderr
    assert "changed while it was read" in r.stderr
