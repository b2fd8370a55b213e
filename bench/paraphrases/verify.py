#!/usr/bin/env python3
"""Check corpus.json and questions.json of the paraphrase tuning set against the text infinipot itself extracts.

The test set's checks, by the same code (bench/testset/verify.py's phrasing_checks and paraphrase_checks, run through
bench/corpus's corpus_lib.check_questions as bench/testset/verify.py runs them), for every question: the passage occurs
verbatim (whitespace-normalised) in the extracted text; an answer string occurs in the passage (case-insensitive) and
the bench's scorer (infinipot_cli.evaluate.qa.answered) finds it there; no answer occurs in the question itself; the
question shares no content word with its passage (nor its `support` lines) but for its one `allow` word, if any. For
every part (copied from bench/corpus's corpus.json): each term occurs in the text. And, for this set:

* every question is a paraphrase and answerable (this set has no "document"-worded or unanswerable questions);
* every document of corpus.json is bench/corpus's, with the same entry (but for `path`, which must resolve to the
  corpus's file), and has questions;
* no passage is the passage of one of bench/corpus's own questions (bench/corpus/make_questions.py's list), so the
  set asks about other facts than the corpus does.

Prints a per-document summary and every violation; exits 1 (and does not print OK) if anything fails.

Usage: .venv/bin/python verify.py [--cached]   (--cached reuses bench/corpus/text/<id>.txt if newer than the doc)
"""

from __future__ import annotations

import json
import os
import sys

from make_questions import CORPUS, HERE, corpus_lib, corpus_module, testset_module

tv = testset_module("verify")  # bench/testset/verify.py: phrasing_checks, paraphrase_checks (its STOP, stem, ...)


def corpus_checks(docs: list[dict], questions: list[dict]) -> list[str]:
    """This set's own checks: paraphrases only, the corpus's documents, none of the corpus's passages."""
    out = []
    for q in questions:
        if q.get("phrasing") != "paraphrase" or q["kind"] == "unanswerable":
            out.append(f"{q['id']} ({q['doc']}): every question of this set is an answerable paraphrase")
    with open(os.path.join(CORPUS, "corpus.json"), encoding="utf-8") as f:
        theirs = {d["id"]: d for d in json.load(f)}
    asked = {q["doc"] for q in questions}
    for d in docs:
        src = theirs.get(d["id"])
        if src is None:
            out.append(f"{d['id']}: not a document of bench/corpus")
            continue
        if {k: v for k, v in d.items() if k != "path"} != {k: v for k, v in src.items() if k != "path"}:
            out.append(f"{d['id']}: entry differs from bench/corpus/corpus.json's (rerun make_questions.py)")
        if os.path.realpath(os.path.join(HERE, d["path"])) != os.path.realpath(src["path"]):
            out.append(f"{d['id']}: path {d['path']!r} is not the corpus's file {src['path']!r}")
        if d["id"] not in asked:
            out.append(f"{d['id']}: no questions")
    corpus_passages = {corpus_lib.squash(p) for _, _, _, _, p, *_ in corpus_module("make_questions").Q if p}
    for q in questions:
        if q["passage"] and corpus_lib.squash(q["passage"]) in corpus_passages:
            out.append(f"{q['id']} ({q['doc']}): passage is one of bench/corpus's questions' (ask about another fact)")
    return out


def main() -> int:
    from infinipot_cli.evaluate.qa import answered

    docs, questions = corpus_lib.load_set(HERE)
    failures: list[str] = []
    # The corpus's files (paths resolved here), read afresh or, with --cached, through the corpus's own text/ cache.
    at_corpus = [dict(d, path=os.path.normpath(os.path.join(HERE, d["path"]))) for d in docs]
    texts = corpus_lib.doc_texts(CORPUS, at_corpus, "--cached" in sys.argv, failures)
    per_doc, positions = corpus_lib.check_questions(
        docs, questions, texts, failures, before=tv.phrasing_checks, after=tv.paraphrase_checks, scorer=answered,
        paraphrase_of_count="rephrasings")
    failures.extend(corpus_checks(docs, questions))
    total = corpus_lib.print_table(docs, per_doc, positions)
    print(corpus_lib.totals_line(docs, total))
    return corpus_lib.report(failures)


if __name__ == "__main__":
    sys.exit(main())
