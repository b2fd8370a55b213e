#!/usr/bin/env python3
"""Write corpus.json for the test set: every document with its top-level parts and distinctive terms.

bench/corpus/make_parts.py writes it (its write_corpus_json, given this folder and its document table), with its own
structure builders and term picker, so parts are found exactly as for the tuning corpus (PDF outline, HTML headings,
EPUB chapters, man section headers, changelog release groups, Vim numbered headings, Markdown ATX headings).
Differences from the corpus's corpus.json: `path` is relative to this folder ("docs/<file>", which `bench qa`/`bench
summary` resolve against the folder), so the file is the same wherever the checkout lives; everything else is the
same shape.
"""

from __future__ import annotations

import sys

from testset_lib import HERE, corpus_module, doc_rows

mp = corpus_module("make_parts")  # bench/corpus/make_parts.py: write_corpus_json (BUILDERS, pick_terms)


def main() -> int:
    out = mp.write_corpus_json(HERE, doc_rows(), relative=True, width=24)
    print(f"total {sum(d['approx_tokens'] for d in out)} tok", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
