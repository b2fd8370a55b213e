"""`bench qa`'s scoring, corpus loading and tables (evaluate/qa.py): no model involved."""

import json

import pytest

from infinipot_cli.evaluate import qa


def test_answers_match_as_whole_words():
    assert qa.answered("Squid runs as user PROXY.", ["proxy"]) and not qa.answered("squid proxying", ["proxy"])
    assert qa.answered("use -c to create", ["-c"]) and not qa.answered("use --create", ["-c"])
    assert qa.answered('the "u" command', ["u"]) and not qa.answered("the undo command", ["u"])
    assert not qa.answered("the U command", ["u"])  # one or two characters: case counts
    assert qa.answered("version 2.6.2 or later", ["2.6"]) and qa.answered("is 80 characters", ["80 characters"])
    # an answer the question holds counts only outside a restatement of the question
    q = "What is the default password of the live system user?"
    assert not qa.answered('The default password of the live system user is "user".', ["live"], q)
    assert qa.answered('The default password of the live system user is "live".', ["live"], q)
    q = "Which user name do you log in as by default on a live image?"
    assert qa.answered("you are logged in to the user account", ["user"], q)
    assert not qa.answered("The user name you log in as is root.", ["user"], q)


def test_evidence_hit():
    q = {"answers": ["proxy"], "passage": "For example, group proxy is used by pdnsd, and squid runs as user proxy."}
    assert qa.evidence_hit(["and squid runs as user proxy."], q)
    assert qa.evidence_hit(["For example, group proxy is used by pdnsd, and squid"], {**q, "answers": ["zzz"]})
    assert not qa.evidence_hit(["pdnsd"], {**q, "answers": ["zzz"]})


def test_non_answers():
    q = "Which pool has a depth of 1?"
    assert qa.non_answer("The document above contains the answer to the question.", q)
    assert qa.non_answer("The pool has a depth of 1.", q)
    assert not qa.non_answer("The console pool has a depth of 1.", q)
    assert not qa.non_answer('The default password of the live user is "live".', "What is the live user's password?")
    assert not qa.non_answer("The document does not seem to say.", q)  # a refusal is an answer of its kind


def test_bm25_and_chunks():
    chunks = qa.text_chunks([("one two three\nfour five\n" + "x " * 50, "p. 1")])
    assert len(chunks) == 2 and chunks[0][1] == "p. 1"
    assert qa.bm25_best(["apples and pears", "the uid of operator", "uid list"], "operator uid?", 2) == [1, 2]


def test_summary_rates():
    def rec(doc, flow, correct, una=False, invented=(), how="written", refused=False):
        return {"doc": doc, "flow": flow, "unanswerable": una, "correct": None if una else correct,
                "line_holds": None if una else correct, "correct_guess": None if una else correct,
                "evidence_recall": None if una else correct, "invented": list(invented),
                "invented_shown": [], "how": how, "withheld": how == "not-said", "refused": refused,
                "non_answer": False, "answer_s": 1.0}
    rows = qa.summarize([rec("a", "direct", True), rec("a", "direct", False, invented=["41"], how="not-said",
                                                            refused=True),
                         rec("b", "direct", None, una=True, refused=True, how="not-said")])
    top = next(r for r in rows if r["doc"] == "all")
    assert top["questions"] == 3 and top["right"] == 0.5 and top["refusal_unanswerable"] == 1.0
    assert top["invented"] == 1 and top["invented_shown"] == 0 and top["right_withheld"] == 0
    assert top["how"] == {"written": 1, "not-said": 2}
    md = qa.markdown(rows, {"model": "m", "config": {}})
    assert "| all | direct | 3 | 50 %" in md


def test_corpus_errors(tmp_path):
    from infinipot_cli.errors import UsageError

    with pytest.raises(UsageError, match="corpus.json"):
        qa.load_corpus(tmp_path)
    (tmp_path / "corpus.json").write_text(json.dumps([{"id": "d", "path": "d.txt"}]))
    (tmp_path / "questions.json").write_text(json.dumps([{"id": "q", "doc": "nope", "question": "?"}]))
    with pytest.raises(UsageError, match="unknown document"):
        qa.load_corpus(tmp_path)
