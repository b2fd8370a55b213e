#!/usr/bin/env python3
"""Check corpus.json and questions.json against the text infinipot itself extracts from each document.

The corpus's checks (bench/corpus/verify.py), for every question: the passage occurs verbatim (whitespace-normalised)
in the extracted text; at least one answer string occurs in the passage (case-insensitive); `support` lines follow the
passage; unanswerable questions have no answers and no passage; `paraphrase_of` names a question on the same
document. For every part: each term occurs in the text. And, for this test set:

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

import collections
import hashlib
import json
import os
import re
import sys

from testset_lib import HERE, extracted_text, passages, squash

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


def main() -> int:
    from infinipot_cli.evaluate.qa import answered

    cached = "--cached" in sys.argv
    docs = json.load(open(os.path.join(HERE, "corpus.json"), encoding="utf-8"))
    questions = json.load(open(os.path.join(HERE, "questions.json"), encoding="utf-8"))
    by_id = {q["id"]: q for q in questions}
    failures: list[str] = []
    texts: dict[str, str] = {}
    for d in docs:
        path = d["path"] if os.path.isabs(d["path"]) else os.path.join(HERE, d["path"])
        if not os.path.exists(path):
            failures.append(f"{d['id']}: missing file {d['path']}")
            continue
        if cached:
            text = extracted_text(d["id"], path, d.get("stdin", False))
        else:  # a "stdin" document is read as the bench reads it: piped on standard input
            text = "\n\n".join(t for _, t in passages(path, d.get("stdin", False)))
        texts[d["id"]] = text
        low = squash(text).lower()
        for p in d["parts"]:
            for t in p["terms"]:
                if t.lower() not in low:
                    failures.append(f"{d['id']}: part {p['title']!r}: term {t!r} not in text")
    doc_ids = {d["id"] for d in docs}
    per_doc = collections.defaultdict(collections.Counter)
    positions = collections.defaultdict(list)
    for q in questions:
        tag = f"{q['id']} ({q['doc']})"
        if q["doc"] not in doc_ids:
            failures.append(f"{tag}: unknown doc")
            continue
        c = per_doc[q["doc"]]
        c["questions"] += 1
        if q.get("phrasing") not in ("paraphrase", "document"):
            failures.append(f"{tag}: phrasing must be 'paraphrase' or 'document', not {q.get('phrasing')!r}")
        for a in q["answers"]:  # as the bench's scorer matches: whole words, case-sensitive when <= 2 characters
            if answered(q["question"], [a]):
                failures.append(f"{tag}: answer {a!r} occurs in the question itself")
        if q["kind"] == "unanswerable":
            c["unanswerable"] += 1
            if q["answers"] or q["passage"]:
                failures.append(f"{tag}: unanswerable but has answers/passage")
            if q.get("phrasing") == "paraphrase":
                failures.append(f"{tag}: an unanswerable question has no passage to be a paraphrase of")
        else:
            if not q["answers"] or not q["passage"]:
                failures.append(f"{tag}: answerable but no answers/passage")
                continue
            flat = squash(texts.get(q["doc"], ""))
            want = squash(q["passage"])
            pos = flat.find(want)
            if pos < 0:
                failures.append(f"{tag}: passage not found in extracted text: {q['passage'][:80]!r}")
            else:
                positions[q["doc"]].append(pos / max(1, len(flat)))
            if not any(a.lower() in want.lower() for a in q["answers"]):
                failures.append(f"{tag}: no answer string in passage")
            elif not answered(want, q["answers"], q["question"]):
                failures.append(f"{tag}: the bench's scorer does not find an answer in the passage")
            for extra in q.get("support", []):  # must follow the passage (e.g. an entry under its header)
                at = flat.find(squash(extra), max(pos, 0))
                if pos < 0 or at < 0:
                    failures.append(f"{tag}: support line not found after the passage: {extra[:80]!r}")
            if not q.get("where"):
                failures.append(f"{tag}: no 'where'")
            if q.get("phrasing") == "paraphrase":
                c["paraphrases"] += 1
                allow = [w.lower() for w in q.get("allow", [])]
                if len(allow) > 1:
                    failures.append(f"{tag}: 'allow' lists {len(allow)} words (at most 1)")
                against = " ".join([q["passage"], *q.get("support", [])])
                shared = shared_words(q["question"], against)
                for w in shared:
                    if w not in allow:
                        failures.append(f"{tag}: paraphrase shares the word {w!r} with its passage")
                for w in allow:
                    if w not in shared:
                        failures.append(f"{tag}: 'allow' word {w!r} is not shared with the passage (drop it)")
        if q.get("paraphrase_of"):
            c["rephrasings"] += 1
            orig = by_id.get(q["paraphrase_of"])
            if orig is None or orig["doc"] != q["doc"]:
                failures.append(f"{tag}: paraphrase_of {q['paraphrase_of']!r} missing or on another doc")
    print(f"{'doc':24} {'kind':9} {'tokens':>7} {'parts':>5} {'qs':>3} {'unans':>5} {'para':>4}  answer positions")
    for d in docs:
        c = per_doc[d["id"]]
        pos = " ".join(f"{p:.2f}" for p in sorted(positions[d["id"]]))
        print(f"{d['id']:24} {d['kind']:9} {d['approx_tokens']:7d} {len(d['parts']):5d} {c['questions']:3d} "
              f"{c['unanswerable']:5d} {c['paraphrases']:4d}  {pos}")
    total = collections.Counter()
    for c in per_doc.values():
        total.update(c)
    if 2 * total["paraphrases"] < total["questions"]:
        failures.append(f"only {total['paraphrases']} of {total['questions']} questions are paraphrases (< half)")
    print(f"total: {len(docs)} docs, {sum(d['approx_tokens'] for d in docs)} tokens, "
          f"{sum(len(d['parts']) for d in docs)} parts, {total['questions']} questions "
          f"({total['unanswerable']} unanswerable, {total['paraphrases']} paraphrases)")
    for w in check_checksums():
        print("WARNING", w)
    for f in failures:
        print("FAIL", f)
    print("OK" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
