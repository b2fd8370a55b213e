"""`infinipot chat`: questions piped on stdin get one answer line each from one read; /save writes a pot that
loads; a bad question gives a line on stderr and the others are still answered; every question starts from
the pot as read; the terminal loop (fake input, and a real pseudo-terminal)."""

import io
import json
import os
import select
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from infinipot_cli.cli.chat import ChatSession
from infinipot_cli.app import app
from infinipot_cli.pot.config import PotConfig

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORY = os.path.join(ROOT, "sample_docs", "lighthouse.txt")
ANSWER = ["--max-new-tokens", "32"]  # a loaded pot keeps the pot settings it was read with
SMALL = ["--pot-size", "512", "--keep", "256"] + ANSWER
Q_CAT = "What was the keeper's cat called?"
Q_STEPS = "How many steps lead to the lamp room?"


def invoke(args, input=None):
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:  # click >= 8.2 keeps stderr apart by default
        runner = CliRunner()
    return runner.invoke(app, args, input=input)


@pytest.fixture(scope="module")
def story_pot(tmp_path_factory, builtin, story_part):
    """A pot of the story's first part read once with the general catalyst (small, so the tests stay fast)."""
    pot = str(tmp_path_factory.mktemp("chat") / "story.pot")
    r = invoke(["read", story_part, "--save-pot", pot, "-q"] + SMALL)
    assert r.exit_code == 0, r.stderr
    return pot


# ---- stdin is not a terminal: one answer line per question ------------------------------------------
def test_piped_questions_one_answer_line_each_and_save(story_pot, tmp_path):
    saved = str(tmp_path / "again.pot")
    r = invoke(["chat", "--load-pot", story_pot, "-q"] + ANSWER, input=f"{Q_CAT}\n\n/save {saved}\n{Q_STEPS}\n")
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.split("\n")
    assert len(lines) == 5 and lines[1:3] == ["", ""] and lines[4] == "", r.stdout  # a line for each line in
    lines = [lines[0], lines[3]]  # the two answers
    # each question starts from the pot as read: the same answer asked alone, and as `ask --load-pot` gives
    alone = invoke(["chat", "--load-pot", story_pot, "-q", "--json"] + ANSWER, input=f"{Q_STEPS}\n")
    one = json.loads(alone.stdout)  # --json: one object a line, with the evidence as `ask` gives it
    assert one["question"] == Q_STEPS and one["answer"] == lines[1] and one["evidence"]
    ask = invoke(["ask", "--load-pot", story_pot, Q_STEPS, "--json", "-q"] + ANSWER)
    assert json.loads(ask.stdout)["answer"] == lines[1]
    assert json.loads(ask.stdout)["evidence"] == one["evidence"]
    assert r.stderr.count("evidence:") == 2  # each answer's passages on stderr
    # /save wrote a pot that loads and holds the same read
    assert "pot saved to" in r.stderr
    again = invoke(["ask", "--load-pot", saved, Q_CAT, "--json", "-q"] + ANSWER)
    assert again.exit_code == 0, again.stderr
    assert json.loads(again.stdout)["answer"] == lines[0]
    assert json.loads(again.stdout)["tokens_read"] == json.loads(ask.stdout)["tokens_read"]


def test_a_bad_question_gives_stderr_and_the_rest_is_answered(story_pot):
    long_q = "Why " + "and why " * 400 + "?"
    r = invoke(["chat", "--load-pot", story_pot, "-q"] + ANSWER, input=f"{long_q}\n/nope\n{Q_STEPS}\n")
    assert r.exit_code == 2  # a question too long for the pot is a usage error, as in `ask`
    lines = r.stdout.split("\n")
    assert lines[:2] == ["", ""] and lines[2] and len(lines) == 4  # empty lines for the failed one and /nope
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("infinipot: error:")]
    assert len(errors) == 1 and "the question is too long" in errors[0]  # the exit code's reason
    assert "infinipot: warning: line 2: unknown command /nope" in r.stderr  # a slip, not a failure
    assert "Traceback" not in r.stderr


def test_usage_errors():
    r = invoke(["chat"])
    assert r.exit_code == 2 and "missing SOURCE" in r.stderr
    r = invoke(["chat", "-"])
    assert r.exit_code == 2 and "questions from stdin" in r.stderr


# ---- the pot is restored after each answer (tiny model) ---------------------------------------------
class IdTok:
    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


# ---- the terminal loop with fake input --------------------------------------------------------------
def _session(builtin, out, err):
    from infinipot_cli.documents import open_source
    from infinipot_cli.session import Session

    session = Session.start(builtin, PotConfig(size=512, keep=256))
    session.read(open_source(STORY, "auto"))
    return ChatSession(session, max_new_tokens=32, out=out, err=err)


@pytest.mark.slow  # the pipe and pseudo-terminal tests answer with the real model in make test
def test_terminal_loop_with_fake_input(builtin, monkeypatch):
    out, err = io.StringIO(), io.StringIO()
    chat = _session(builtin, out, err)
    n = len(chat.engine.pot)
    real_answer = chat.engine.answer_over  # a question of a whole document is written over its passages
    calls = []

    def answer_over(*a, **kw):  # the second question is interrupted by Ctrl-C while the model writes
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_answer(*a, **kw)

    monkeypatch.setattr(chat.engine, "answer_over", answer_over)
    lines = iter([Q_STEPS, Q_STEPS, "  ", "/help", "/inspect", "/bogus", Q_STEPS])

    def read_line(prompt):
        assert prompt == "? "
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    assert chat.run_terminal(read_line, banner="hello") == 0
    shown = out.getvalue()
    first = shown.split("\n")[0]
    assert first.strip()                      # an answer was streamed
    assert shown.count(first + "\n") == 2     # the question after the cancelled one answers as before
    assert "/save FILE" in shown and "what the pot remembers" in shown
    assert "(answer stopped)" in err.getvalue() and "unknown command /bogus" in err.getvalue()
    assert err.getvalue().startswith("hello\n")
    assert len(chat.engine.pot) == n


# ---- a real pseudo-terminal -------------------------------------------------------------------------
def _read_until(fd, marker: bytes, timeout: float) -> bytes:
    buf, end = b"", time.monotonic() + timeout
    while marker not in buf and time.monotonic() < end:
        r, _, _ = select.select([fd], [], [], 1.0)
        if r:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
    return buf


@pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")), reason="needs a pseudo-terminal")
def test_pty_session_answers_and_leaves_on_ctrl_d(story_pot):
    """On a terminal: the prompt alone (-q: no banner), the question echoed, the answer `ask --load-pot` gives
    for it, a new prompt; Ctrl-D leaves with exit 0."""
    import pty

    expected = json.loads(invoke(["ask", "--load-pot", story_pot, Q_STEPS, "--json", "-q"] + ANSWER).stdout)["answer"]
    assert expected
    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), "TERM": "dumb"}
    p = subprocess.Popen([sys.executable, "-m", "infinipot_cli", "chat", "--load-pot", story_pot, "-q"] + ANSWER,
                         stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, close_fds=True)
    os.close(slave)
    try:
        assert _read_until(master, b"? ", 300).replace(b"\r", b"") == b"? "
        os.write(master, (Q_STEPS + "\n").encode())
        got = _read_until(master, b"\n? ", 300).decode().replace("\r", "")
        # the echoed question, the answer, perhaps a note on how it was found (which path the model's wording
        # takes differs between CPUs: a span shown in the document's words says what the model wrote), its
        # evidence, a prompt
        echo, answer, *rest, prompt = got.split("\n")
        assert (echo, " ".join(answer.split()), prompt) == (Q_STEPS, " ".join(expected.split()), "? "), got
        assert "evidence:" in rest, got
        notes, evidence = rest[:rest.index("evidence:")], rest[rest.index("evidence:") + 1:]
        assert all(n.startswith("(") and n.endswith(")") for n in notes), got
        assert evidence and all(e.startswith("  [") for e in evidence), got
        os.write(master, b"\x04")  # Ctrl-D
        assert p.wait(timeout=60) == 0
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
