"""A question too long for the pot, piped to `chat`, is a usage error as it is for `ask`: one "the question is too
long" line on stderr, its empty stdout line, the other lines answered all the same, and exit 2 at the end (it was
the engine's "the pot cannot hold the prompt" and exit 1). The exit code is the first failed line's."""

from __future__ import annotations

import io

import pytest

from infinipot_cli.cli.chat import ChatSession
from infinipot_cli.errors import InfinipotError, UsageError
from test_chat_lines import FakeSession

STORY = "The keeper of Skerrow Light was Tobias Fenwick. His cat was called Biscuit.\n"


class Refusing(FakeSession):
    """Answers from a table; "long" is refused as a usage error, "fail" fails (exit 1)."""

    def ask(self, question, max_new_tokens=128, grounded=True):
        if "long" in question:
            raise UsageError("the question is too long: 9,999 tokens; shorten the question")
        return super().ask(question, max_new_tokens, grounded)

    def save(self, path, sources=(), force=False):
        raise UsageError(f"cannot write the pot to {path}: it is a folder")


def run(text: str, session=None) -> tuple[int, list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    code = ChatSession(session or Refusing(), out=out, err=err).run_lines(io.StringIO(text))
    return code, out.getvalue().split("\n")[:-1], err.getvalue()


def test_the_first_failed_line_gives_the_exit_code():
    code, lines, err = run("q1\na long one\nq2\n")
    assert code == 2 and lines == ["answer to q1 over two lines", "", "answer to q2 over two lines"]
    assert err.splitlines() == ["infinipot: error: the question is too long: 9,999 tokens; shorten the question"]
    assert run("please fail\na long one\n")[0] == 1
    assert run("a long one\nplease fail\n")[0] == 2
    assert run("q1\nq2\n")[0] == 0
    assert run("/save somewhere\nq1\n")[:2] == (2, ["", "answer to q1 over two lines"])  # as --save-pot exits


@pytest.fixture(scope="module")
def chat_over_story(builtin, tmp_path_factory):
    """A chat over a two-sentence story read into a pot of 512 entries with the built-in model."""
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.session import Session

    path = tmp_path_factory.mktemp("story") / "story.txt"
    path.write_text(STORY)
    session = Session.start(builtin, PotConfig(size=512, keep=256))
    session.read(open_source(str(path), "auto"))
    return session


@pytest.mark.parametrize("words", [400, 25_000])  # over the pot's room; over half the model's window too
def test_a_line_too_long_for_the_pot_is_exit_2_and_the_rest_is_answered(chat_over_story, words):
    out, err = io.StringIO(), io.StringIO()
    chat = ChatSession(chat_over_story, max_new_tokens=32, out=out, err=err)
    long_q = "Why " + "and why " * words + "?"
    code = chat.run_lines(io.StringIO(f"Who kept the light?\n{long_q}\nWhat was the cat called?\n"))
    lines = out.getvalue().split("\n")[:-1]
    assert code == 2, err.getvalue()
    assert len(lines) == 3 and lines[0] and lines[1] == "" and "Biscuit" in lines[2], lines
    errors = [ln for ln in err.getvalue().splitlines() if ln.startswith("infinipot: error:")]
    assert len(errors) == 1 and errors[0].startswith("infinipot: error: the question is too long: "), errors
    assert errors[0].endswith("shorten the question") and "cannot hold the prompt" not in errors[0]
    assert "Traceback" not in err.getvalue()


def test_the_check_matches_the_engine(chat_over_story):
    """The longest question the check lets through is one the engine has room for (no "cannot hold")."""
    eng = chat_over_story.engine
    room = eng.cfg.size - eng.pot.n_pinned - 17
    with pytest.raises(UsageError, match="the question is too long"):
        chat_over_story._check_question(room, 1)
    chat_over_story._check_question(room - 1, 1)
    eng.answer_room(room - 1, 1)  # the engine's own check: no error either
    with pytest.raises(InfinipotError):
        eng.answer_room(room, 1)
