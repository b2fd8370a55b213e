#!/usr/bin/env python3
"""Check corpus.json and questions.json against the text infinipot itself extracts from each document.

For every question: the passage occurs verbatim (whitespace-normalised) in the extracted text, and at least one
answer string occurs in the passage (case-insensitive); unanswerable questions have no answers and no passage;
paraphrases point to an existing question on the same document. For every part: each term occurs in the text.
Prints a per-document summary; exits 1 if anything fails.

Usage: .venv/bin/python verify.py [--cached]   (--cached reuses text/<id>.txt if newer than the doc)
"""

from __future__ import annotations

import collections
import json
import os
import sys

from corpus_lib import HERE, passages, squash


def main() -> int:
    cached = "--cached" in sys.argv
    docs = json.load(open(os.path.join(HERE, "corpus.json"), encoding="utf-8"))
    questions = json.load(open(os.path.join(HERE, "questions.json"), encoding="utf-8"))
    by_id = {q["id"]: q for q in questions}
    failures: list[str] = []
    texts: dict[str, str] = {}
    for d in docs:
        if not os.path.exists(d["path"]):
            failures.append(f"{d['id']}: missing file {d['path']}")
            continue
        if cached:
            from corpus_lib import extracted_text
            text = extracted_text(d["id"], d["path"], d.get("stdin", False))
        else:  # a "stdin" document is read as the bench reads it: piped on standard input
            text = "\n\n".join(t for _, t in passages(d["path"], d.get("stdin", False)))
        texts[d["id"]] = text
        low = squash(text).lower()
        for p in d["parts"]:
            for t in p["terms"]:
                if t.lower() not in low:
                    failures.append(f"{d['id']}: part {p['title']!r}: term {t!r} not in text")
    doc_ids = {d["id"] for d in docs}
    per_doc = collections.defaultdict(lambda: collections.Counter())
    positions = collections.defaultdict(list)
    for q in questions:
        tag = f"{q['id']} ({q['doc']})"
        if q["doc"] not in doc_ids:
            failures.append(f"{tag}: unknown doc")
            continue
        per_doc[q["doc"]]["questions"] += 1
        if q["kind"] == "unanswerable":
            per_doc[q["doc"]]["unanswerable"] += 1
            if q["answers"] or q["passage"]:
                failures.append(f"{tag}: unanswerable but has answers/passage")
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
            for extra in q.get("support", []):  # must follow the passage (e.g. an entry under its header)
                at = flat.find(squash(extra), max(pos, 0))
                if pos < 0 or at < 0:
                    failures.append(f"{tag}: support line not found after the passage: {extra[:80]!r}")
            if not q.get("where"):
                failures.append(f"{tag}: no 'where'")
        if q["paraphrase_of"]:
            per_doc[q["doc"]]["paraphrases"] += 1
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
    covered = sum(1 for d in docs if per_doc[d["id"]]["questions"] >= 4)
    print(f"total: {len(docs)} docs, {sum(d['approx_tokens'] for d in docs)} tokens, "
          f"{sum(len(d['parts']) for d in docs)} parts, {total['questions']} questions "
          f"({total['unanswerable']} unanswerable, {total['paraphrases']} paraphrases), "
          f"{covered} docs with >= 4 questions")
    for f in failures:
        print("FAIL", f)
    print("OK" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
