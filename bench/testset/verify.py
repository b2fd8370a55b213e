#!/usr/bin/env python3
"""Check corpus.json and questions.json against the text infinipot itself extracts from each document.

The corpus's checks (bench/corpus/verify.py's, by the same code: corpus_lib's doc_texts and check_questions), for
every question: the passage occurs verbatim (whitespace-normalised) in the extracted text; at least one answer string
occurs in the passage (case-insensitive); `support` lines follow the passage; unanswerable questions have no answers
and no passage; `paraphrase_of` names a question on the same document. For every part: each term occurs in the text.
And, for this test set (phrasing_checks, paraphrase_checks, the scorer, check_checksums):

* every question has `phrasing` "paraphrase" or "document"; at least half of all questions are paraphrases;
* a paraphrase shares no content word with its passage: the question's words (lowercased, split at every
  non-alphanumeric character), minus STOP and minus words of <= 2 characters, are compared with the passage's words by
  a crude stem (`stem`: strip a trailing -ing/-ed/-es/-s, then a final -e), two stems matching when equal or when the
  shorter (>= 5 letters) starts the longer ("compress"/"compression"). Each shared word is a violation, unless the
  question lists it in `allow` (at most one word, and only where unavoidable, e.g. the program's own name); an
  `allow` word the passage does not share is flagged too;
* no answer string occurs in its own question (as the scorer matches it), and the passage is scored as answering the question by the bench's own
  scorer (infinipot_cli.evaluate.qa.answered: whole words, case-sensitive for answers of <= 2 characters);
* docs/ matches docs.sha256 (the files the questions were written against); a mismatch is only a warning, since the
  checks above tell whether the questions still hold.

Prints a per-document summary and every violation; exits 1 (and does not print OK) if anything fails.

Usage: .venv/bin/python verify.py [--cached]   (--cached reuses text/<id>.txt if newer than the doc)
"""

from __future__ import annotations

import hashlib
import os
import re
import sys

from testset_lib import HERE, corpus_lib  # corpus_lib: bench/corpus's, whose checks (load_set ... report) run here too

# Function words and question scaffolding; a paraphrase may share these with its passage.
STOP = set("""
the and for are but not nor you your yours all any both can could did does doing done had has have having how its
may might must our ours out own should shall that than then there their theirs them they this these those was were
what when where which while who whom whose why will with would into onto from about also just some such each other
more most only same very too been being get gets got getting use using used want wants need needs make makes made
happen happens tell let know way thing things something anything someone somebody there here over under after
before again once per via does don doesn isn aren won wasn didn cannot off yes one ever
""".split())


def words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2 and w not in STOP]


def stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if w.endswith(suf) and len(w) - len(suf) >= 3 and not (suf == "s" and w.endswith("ss")):
            w = w[: -len(suf)]
            break
    if w.endswith("e") and len(w) > 3:
        w = w[:-1]
    return w


def same(a: str, b: str) -> bool:
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return len(short) >= 5 and long_.startswith(short)


def shared_words(question: str, passage: str) -> list[str]:
    """The question's content words (as written) whose stem matches a stem of a word of the passage."""
    pstems = {stem(w) for w in words(passage)}
    out = []
    for w in dict.fromkeys(words(question)):
        s = stem(w)
        if any(same(s, p) for p in pstems):
            out.append(w)
    return out


def check_checksums() -> list[str]:
    warnings = []
    try:
        lines = open(os.path.join(HERE, "docs.sha256"), encoding="utf-8").read().split("\n")
    except FileNotFoundError:
        return ["docs.sha256 missing"]
    for line in lines:
        if not line.strip():
            continue
        digest, name = line.split(None, 1)
        path = os.path.join(HERE, "docs", name.strip())
        if not os.path.exists(path):
            continue  # reported as a missing file below
        if hashlib.sha256(open(path, "rb").read()).hexdigest() != digest:
            warnings.append(f"docs/{name.strip()} differs from docs.sha256 (another package version or renderer?)")
    return warnings


def phrasing_checks(q: dict, tag: str, c) -> list[str]:
    """Before the corpus's checks: a valid `phrasing`; no answer in the question itself."""
    from infinipot_cli.evaluate.qa import answered

    out = []
    if q.get("phrasing") not in ("paraphrase", "document"):
        out.append(f"{tag}: phrasing must be 'paraphrase' or 'document', not {q.get('phrasing')!r}")
    for a in q["answers"]:  # as the bench's scorer matches: whole words, case-sensitive when <= 2 characters
        if answered(q["question"], [a]):
            out.append(f"{tag}: answer {a!r} occurs in the question itself")
    return out


def paraphrase_checks(q: dict, tag: str, c) -> list[str]:
    """After the corpus's answer checks: a paraphrase is answerable, is counted, and shares no content word with its
    passage (nor its support lines) but for its `allow` word."""
    out = []
    if q.get("phrasing") != "paraphrase":
        return out
    if q["kind"] == "unanswerable":
        return [f"{tag}: an unanswerable question has no passage to be a paraphrase of"]
    c["paraphrases"] += 1
    allow = [w.lower() for w in q.get("allow", [])]
    if len(allow) > 1:
        out.append(f"{tag}: 'allow' lists {len(allow)} words (at most 1)")
    against = " ".join([q["passage"], *q.get("support", [])])
    shared = shared_words(q["question"], against)
    for w in shared:
        if w not in allow:
            out.append(f"{tag}: paraphrase shares the word {w!r} with its passage")
    for w in allow:
        if w not in shared:
            out.append(f"{tag}: 'allow' word {w!r} is not shared with the passage (drop it)")
    return out


def main() -> int:
    from infinipot_cli.evaluate.qa import answered

    docs, questions = corpus_lib.load_set(HERE)
    failures: list[str] = []
    texts = corpus_lib.doc_texts(HERE, docs, "--cached" in sys.argv, failures)
    per_doc, positions = corpus_lib.check_questions(
        docs, questions, texts, failures, before=phrasing_checks, after=paraphrase_checks, scorer=answered,
        paraphrase_of_count="rephrasings")
    total = corpus_lib.print_table(docs, per_doc, positions)
    if 2 * total["paraphrases"] < total["questions"]:
        failures.append(f"only {total['paraphrases']} of {total['questions']} questions are paraphrases (< half)")
    print(corpus_lib.totals_line(docs, total))
    return corpus_lib.report(failures, check_checksums())


if __name__ == "__main__":
    sys.exit(main())
