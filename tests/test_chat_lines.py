"""`chat` with questions piped on stdin gives one line on stdout for every line in, so a script can pair them:
an answer for a question, an empty line for an empty line, for a /command, for a failed question and for /quit."""

from __future__ import annotations

import io
import json
from types import SimpleNamespace

from infinipot_cli.cli.chat import ChatSession
from infinipot_cli.errors import InfinipotError


class FakeSession:
    """Just what ChatSession needs: an engine to listen on and an `ask` that answers from a table."""

    def __init__(self):
        self.engine = SimpleNamespace(listen=lambda cb: None, finish=lambda: None)

    def ask(self, question, max_new_tokens=128, grounded=True):
        if "fail" in question:
            raise InfinipotError("the question is too long")
        return SimpleNamespace(text=f"answer to {question}\nover two lines", grounded=None)


def run(text: str, json_out: bool = False) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = ChatSession(FakeSession(), out=out, err=err, json_out=json_out).run_lines(io.StringIO(text))
    return code, out.getvalue().split("\n")[:-1], err.getvalue()


def test_one_line_out_for_every_line_in():
    code, lines, err = run("q1\n\n   \n/help\nplease fail\nq2\n")
    assert code == 1
    assert lines == ["answer to q1 over two lines", "", "", "", "", "answer to q2 over two lines"]
    assert "the question is too long" in err and "/save FILE" in err  # /help's text went to stderr


def test_json_lines_pair_too():
    code, lines, _ = run("q1\n\n/help\nq2\n", json_out=True)
    objs = [json.loads(x) for x in lines]
    assert [o.get("question", o.get("command")) for o in objs] == ["q1", "", "/help", "q2"]
    assert objs[1] == {"question": "", "answer": ""} and objs[2] == {"command": "/help"}


def test_quit_ends_the_lines():
    code, lines, err = run("q1\n/quit\nq2\n")
    assert code == 0 and lines == ["answer to q1 over two lines", ""]  # /quit's own line too
    assert "infinipot: /quit on line 2: 1 more input line left unread" in err
