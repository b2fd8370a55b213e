"""`chat` with piped input: an unknown /command gets a warning on stderr and its empty stdout line, and leaves the
exit code alone (0 when every question was answered; a failed question or a /save that could not write still
gives 1); /quit gets its stdout line too, and one line on stderr says how many input lines were left unread —
without waiting on a writer that keeps the pipe open."""

from __future__ import annotations

import io
import json
import os
import time

from infinipot_cli.cli import chat as chat_mod
from infinipot_cli.cli.chat import ChatSession, FdLines
from test_chat_lines import FakeSession
from test_pot_cache import tiny  # noqa: F401 - the tiny model folder fixture


def run(text: str, json_out: bool = False, session=None) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = ChatSession(session or FakeSession(), out=out, err=err, json_out=json_out).run_lines(io.StringIO(text))
    return code, out.getvalue().split("\n")[:-1], err.getvalue()


def test_an_unknown_command_warns_and_the_answers_go_on():
    code, lines, err = run("q1\n/bogus\nq2\n")
    assert code == 0 and lines == ["answer to q1 over two lines", "", "answer to q2 over two lines"]
    assert err.splitlines() == ["infinipot: warning: line 2: unknown command /bogus; /help lists them"]
    code, _, err = run("/bogus\nplease fail\n")  # a question that failed still says so in the exit code
    assert code == 1 and "infinipot: error: the question is too long" in err


def test_a_command_that_cannot_do_what_it_names_fails():
    class Unsavable(FakeSession):
        def save(self, path, sources=(), force=False):
            from infinipot_cli.errors import InfinipotError
            raise InfinipotError(f"could not write the pot to {path}: no space left on device")

    code, lines, err = run("/save\nq1\n")
    assert code == 1 and lines == ["", "answer to q1 over two lines"] and "needs a file name" in err
    code, lines, err = run("/save x.pot\nq1\n", session=Unsavable())
    assert code == 1 and lines == ["", "answer to q1 over two lines"] and "no space left" in err


def test_quit_prints_its_line_and_counts_what_it_leaves():
    code, lines, err = run("q1\n/quit\nq2\n\nq3")
    assert code == 0 and lines == ["answer to q1 over two lines", ""]
    assert err.splitlines() == ["infinipot: /quit on line 2: 3 more input lines left unread"]
    code, lines, err = run("q1\n/quit\n")
    assert code == 0 and lines == ["answer to q1 over two lines", ""] and err == ""  # nothing left: nothing said
    code, lines, _ = run("q1\n/exit\nq2\n", json_out=True)
    assert [json.loads(x) for x in lines][1] == {"command": "/exit"}


def test_piped_lines_after_quit_are_counted_without_waiting_on_an_open_pipe(monkeypatch):
    monkeypatch.setattr(chat_mod, "REST_WAIT_S", 0.3)
    r, w = os.pipe()
    try:
        os.write(w, "q1\n/quit\nq2\nq3 caf\xe9\n".encode("utf-8") + b"\xff\n")  # a byte that is not UTF-8 too
        out, err = io.StringIO(), io.StringIO()
        t0 = time.monotonic()
        lines = FdLines(r)
        first = next(iter(lines))
        assert first == "q1\n"
        code = ChatSession(FakeSession(), out=out, err=err).run_lines(lines)  # the writer never closes
        assert time.monotonic() - t0 < 5
        assert code == 0 and out.getvalue() == "\n"  # /quit's line (q1 was taken above)
        assert err.getvalue() == ("infinipot: /quit on line 1: 3 more input lines left unread "
                                  "(stdin is still open: not read further)\n")
    finally:
        os.close(w)
        os.close(r)


def test_fd_lines_read_what_comes_and_count_to_the_end():
    r, w = os.pipe()
    os.write(w, b"one\ntwo\nthree\nfour")
    os.close(w)
    lines = FdLines(r)
    it = iter(lines)
    assert next(it) == "one\n"
    assert lines.count_rest(wait_s=5) == (3, True)  # an ended pipe: counted at once, the last line unended
    os.close(r)
    r, w = os.pipe()
    os.write(w, b"a\nb\n")
    os.close(w)
    assert list(FdLines(r)) == ["a\n", "b\n"]
    os.close(r)


def test_the_terminal_loop_warns_too():
    out, err = io.StringIO(), io.StringIO()
    feed = iter(["/bogus", "q1"])

    def read_line(prompt):
        try:
            return next(feed)
        except StopIteration:
            raise EOFError from None

    assert ChatSession(FakeSession(), out=out, err=err).run_terminal(read_line) == 0
    assert "infinipot: warning: unknown command /bogus" in err.getvalue()
    assert "answer to q1" in out.getvalue()


def test_a_real_pipe_end_to_end(tiny, tmp_path, monkeypatch):  # noqa: F811 - the tiny model folder fixture
    """The chat loop on a pot of a tiny model, questions on a real pipe (read by FdLines, as piped stdin is): one
    stdout line per line up to /quit, the unknown command a warning, exit 0 — the writer still open."""
    from types import SimpleNamespace

    from typer.testing import CliRunner

    from infinipot_cli.app import app
    from infinipot_cli.cli.chat import run_chat
    from infinipot_cli.runtime.loading import load_model
    from infinipot_cli.session import Session
    from test_pot_cache import document

    monkeypatch.setattr(chat_mod, "REST_WAIT_S", 0.3)
    pot = str(tmp_path / "book.pot")
    small = ["-m", tiny, "--pot-size", "128", "--keep", "64", "--chunk", "64", "-q"]
    r = CliRunner().invoke(app, ["read", document(tmp_path / "book.txt"), "--save-pot", pot] + small)
    assert r.exit_code == 0, r.stderr
    session = Session.resume(load_model(tiny), pot)
    rfd, wfd = os.pipe()
    os.write(wfd, b"Who keeps the lamp?\n/bogus\n\n/quit\nq2\nq3\n")
    out, err = io.StringIO(), io.StringIO()
    with os.fdopen(rfd, "r") as stdin:
        code = run_chat(session, SimpleNamespace(max_new_tokens=4, json_out=False, quiet=True, load_pot=pot),
                        stdin=stdin, out=out, err=err)
    os.close(wfd)
    lines = out.getvalue().split("\n")[:-1]
    assert code == 0 and len(lines) == 4 and lines[0] and lines[1:] == ["", "", ""], out.getvalue()
    assert "infinipot: warning: line 2: unknown command /bogus" in err.getvalue()
    assert ("infinipot: /quit on line 4: 2 more input lines left unread (stdin is still open: not read further)"
            in err.getvalue())
