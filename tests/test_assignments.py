"""Questions for the names that hold a value, answered by following the document's assignments (assignments.py)."""

import json

import pytest

from infinipot_cli.answer import assignments
from infinipot_cli.evaluate import ruler_tasks

from test_cli import FAST, invoke

SCRIPT = """#!/bin/sh
# where the service listens
PORT=8080
export BACKUP_PORT=$PORT
HOST = example.org
ADMIN_PORT=${BACKUP_PORT};
OTHER=80
PORT_NAME=PORT
"""


@pytest.mark.parametrize("question,value", [
    ("Find all variables that are assigned the value 93008 in the text above.", "93008"),   # RULER's vt
    ("Which variables are set to 8080?", "8080"),
    ("Which settings are equal to `true`?", "true"),
    ("What names are bound to example.org?", "example.org"),
])
def test_a_question_for_the_names_of_a_value_names_the_value(question, value):
    assert assignments.asked(question) == value


@pytest.mark.parametrize("question", [
    "What is the value of PORT?",          # a name's value: answering.binding
    "Which option is set by default?",
    "Who was assigned to the project?",
    "Who kept the lighthouse?",
])
def test_other_questions_are_not_followed(question):
    assert assignments.asked(question) is None


def test_chains_of_names_are_followed_to_the_value():
    """Directly, through "$X" and "${X}"; a name holding another name's *name* ("PORT_NAME=PORT") is no link."""
    assert [n for n, _ in assignments.holding(SCRIPT, "8080")] == ["PORT", "BACKUP_PORT", "ADMIN_PORT"]
    assert [n for n, _ in assignments.holding(SCRIPT, "example.org")] == ["HOST"]
    assert assignments.holding(SCRIPT, "9999") == []
    loop = "A=$B\nB=$A\n"
    assert assignments.holding(loop, "A") == [] and assignments.holding(loop, "B") == []


def test_a_names_last_assignment_counts():
    assert assignments.holding("X=1\nY=$X\nX=2\n", "1") == []
    assert [n for n, _ in assignments.holding("X=1\nY=$X\nX=2\n", "2")] == ["Y", "X"]


def test_rulers_variable_chains_are_followed():
    """RULER's generator (its worked example included in the document, as it is read): the names followed to the
    asked value are the references, in the order they are assigned."""
    for index in range(3):
        s = ruler_tasks.generate("vt", 4096, index=index)
        assert [n for n, _ in assignments.holding(s.document, assignments.asked(s.question))] == s.outputs


def test_ask_names_the_variables_that_hold_a_value(builtin, tmp_path):
    path = tmp_path / "env.sh"
    path.write_text(SCRIPT + "\n".join(f"# note {i}: the service restarts nightly" for i in range(40)) + "\n")
    r = invoke(["ask", str(path), "Which variables are set to 8080?", "--json"] + FAST)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["answer"] == "PORT, BACKUP_PORT, ADMIN_PORT"
    assert out["evidence"] and "PORT=8080" in out["evidence"][0]["text"]
