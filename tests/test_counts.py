"""Questions about the words that occur most, answered by counting the document as read (counts.py)."""

import json
import os

import pytest

from infinipot_cli.answer import counts
from infinipot_cli.evaluate import ruler_tasks

from test_cli import FAST, invoke


@pytest.mark.parametrize("question,n", [
    ("What are the 10 most common words in the above list?", 10),                      # RULER's cwe
    ("Do not provide any explanation. Please ignore the dots '....'. What are the three most frequently "
     "appeared words in the above coded text?", 3),                                     # RULER's fwe
    ("Which word appears most often in this log?", 1),
    ("What are the most frequent words?", counts.DEFAULT_MANY),
    ("Which 5 words are used most?", 5),
    ("List the twelve commonest terms.", 12),
])
def test_a_question_for_the_words_that_occur_most_names_how_many(question, n):
    assert counts.wanted(question) == n


@pytest.mark.parametrize("question", [
    "How many times does the most common word appear?",   # a count of one word, not a list
    "What is the most common way to install it?",          # no word asked for
    "Which keyword is used most often?",
    "What is the most keystrokes one recorded macro can hold?",
    "Who kept the lighthouse?",
])
def test_other_questions_are_not_counted(question):
    assert counts.wanted(question) is None


def test_most_common_counts_words_not_function_words_numbers_or_marks():
    text = ("1. The keeper lit the lamp. 2. The Keeper's lamp .... blue-fish, Blue-fish; 3. keeper lamp "
            "it is what it is")
    assert counts.most_common(text, 3) == [("keeper", 3), ("lamp", 3), ("blue-fish", 2)]  # ties: first met
    assert counts.most_common("the of and ... 12 34", 2) == []
    assert counts.answer_line([("lamp", 3), ("fog", 1)]) == "lamp (3 times), fog (1 time)"


@pytest.mark.parametrize("task", ["cwe", "fwe"])
def test_rulers_common_and_frequent_words_are_the_counts_of_their_text(task):
    """RULER's generators (its example block included in the document, as it is read): the words counted first are
    the references."""
    for index in range(3):
        s = ruler_tasks.generate(task, 4096, index=index)
        top = counts.most_common(s.document, counts.wanted(s.question))
        assert sorted(w for w, _ in top) == sorted(s.outputs)


def test_ask_counts_the_document_as_read(builtin, tmp_path):
    """`infinipot ask` over a text: the words that occur most, with their counts, in the answer line; the evidence,
    where the most frequent first stands; the same after the read as with the question known while reading."""
    path = tmp_path / "log.txt"
    lines = [f"request {i} served by worker-{i % 3} in {i % 7} ms; cache hit" if i % 4 else
             f"request {i} failed: timeout on worker-{i % 3}, cache miss" for i in range(120)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    text = path.read_text(encoding="utf-8")
    expected = counts.most_common(text, 3)
    r = invoke(["ask", str(path), "Which three words appear most often in this log?", "--json"] + FAST)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["answer"] == counts.answer_line(expected) and out["answer"].startswith("request (120 times)")
    assert out["evidence"] and "request" in out["evidence"][0]["text"]
    r2 = invoke(["ask", str(path), "Which three words appear most often in this log?", "--json", "--no-cache"]
                + FAST + ["--method", "infinipot+retrieve=words"])
    assert r2.exit_code == 0, r2.stderr
    assert json.loads(r2.stdout)["answer"] == out["answer"]
    assert os.path.getsize(path) == len(text.encode())


@pytest.mark.parametrize("question,term", [
    ("How many times does the word \"timeout\" appear in this log?", ("timeout", False)),
    ("How many times is ERROR mentioned?", ("ERROR", False)),
    ("How often does Biscuit appear in the story?", ("Biscuit", False)),
    ("How many lines contain WARN?", ("WARN", True)),
    ("How many occurrences of 'cache miss' are there?", ("cache miss", False)),
    ("How many times has worker-2 been logged?", ("worker-2", False)),
])
def test_a_question_for_how_often_one_term_occurs_names_it(question, term):
    assert counts.occurrences(question) == term
    assert counts.wanted(question) is None


@pytest.mark.parametrize("question", [
    "How many times does the most common word appear?",   # no term named
    "How many times was the backup retried?",             # what happened, not a word
    "How many times does the keeper appear in the story?",
    "How many times has it been used?",                   # a function word
    "How many lines of output does ls print by default?",
])
def test_other_how_many_questions_are_not_occurrence_counts(question):
    assert counts.occurrences(question) is None


def test_an_occurrence_count_is_of_whole_words_any_case_unless_capitals_say_otherwise():
    text = "ERROR disk\nerror: retry; Errors seen\nsubERROR ERROR\n"
    assert counts.occurrence_line("ERROR", counts.pattern("ERROR"), text, False) == "“ERROR” occurs 2 times, on 2 lines."
    assert counts.occurrence_line("error", counts.pattern("error"), text, True) == "3 lines contain “error” (3 times in all)."
    assert counts.occurrence_line("retry", counts.pattern("retry"), text, True) == "1 line contains “retry” (1 time in all)."
    assert counts.occurrence_line("panic", counts.pattern("panic"), text, False) == "“panic” does not occur in the document."


def test_ask_counts_how_often_a_term_occurs(builtin, tmp_path):
    """`infinipot ask` over a log: the lines holding a term, counted exactly, the first of them as the evidence;
    a term the log lacks is counted as none, with no evidence."""
    path = tmp_path / "log.txt"
    lines = [f"request {i} served by worker-{i % 3} in {i % 7} ms; cache hit" if i % 4 else
             f"request {i} failed: timeout on worker-{i % 3}, cache miss" for i in range(120)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = invoke(["ask", str(path), "How many lines contain \"failed\"?", "--json"] + FAST)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["answer"] == "30 lines contain “failed” (30 times in all)."
    assert out["evidence"] and "request 0 failed" in out["evidence"][0]["text"]
    r = invoke(["ask", str(path), "How many times does the word panic appear?", "--json"] + FAST)
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["answer"] == "“panic” does not occur in the document." and not json.loads(r.stdout)["evidence"]
