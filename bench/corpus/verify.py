#!/usr/bin/env python3
"""Check corpus.json and questions.json against the text infinipot itself extracts from each document.

For every question: the passage occurs verbatim (whitespace-normalised) in the extracted text, and at least one
answer string occurs in the passage (case-insensitive); unanswerable questions have no answers and no passage;
paraphrases point to an existing question on the same document. For every part: each term occurs in the text.
Prints a per-document summary; exits 1 if anything fails. The checks are corpus_lib's (bench/testset's verify.py
runs them too, with its own on top).

Usage: .venv/bin/python verify.py [--cached]   (--cached reuses text/<id>.txt if newer than the doc)
"""

from __future__ import annotations

import sys

from corpus_lib import HERE, check_questions, doc_texts, load_set, print_table, report, totals_line


def main() -> int:
    docs, questions = load_set(HERE)
    failures: list[str] = []
    texts = doc_texts(HERE, docs, "--cached" in sys.argv, failures)
    per_doc, positions = check_questions(docs, questions, texts, failures)
    total = print_table(docs, per_doc, positions)
    covered = sum(1 for d in docs if per_doc[d["id"]]["questions"] >= 4)
    print(f"{totals_line(docs, total)}, {covered} docs with >= 4 questions")
    return report(failures)


if __name__ == "__main__":
    sys.exit(main())
