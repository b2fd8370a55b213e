#!/usr/bin/env python3
"""Write corpus.json for the test set: every document with its top-level parts and distinctive terms.

The structure builders and the term picker are bench/corpus/make_parts.py's own (imported, unchanged), so parts are
found exactly as for the tuning corpus (PDF outline, HTML headings, EPUB chapters, man section headers, changelog
release groups, Vim numbered headings, Markdown ATX headings). Differences from the corpus's corpus.json: `path` is
relative to this folder ("docs/<file>", which `bench qa`/`bench summary` resolve against the folder), so the file is
the same wherever the checkout lives; everything else is the same shape.
"""

from __future__ import annotations

import re
import sys

from testset_lib import HERE, corpus_module, doc_path, doc_rows, extracted_text, rel_path, write_json

mp = corpus_module("make_parts")  # bench/corpus/make_parts.py: BUILDERS, pick_terms


def main() -> int:
    versions = {}
    try:
        for line in open(f"{HERE}/versions.txt", encoding="utf-8"):
            m = re.match(r"Package: (\S+) Version: (\S+)", line)
            if m:
                versions[m.group(1)] = m.group(2)
    except FileNotFoundError:
        pass
    out = []
    for doc_id, fname, kind, package, desc, opts in doc_rows():
        path = doc_path(fname)
        text = extracted_text(doc_id, path, opts["stdin"])
        parts = mp.BUILDERS[kind](path)
        mp.pick_terms(parts, text)
        for p in parts:
            del p["_text"]
        out.append({"id": doc_id, "path": rel_path(fname), "kind": kind, "package": package,
                    "package_version": versions.get(package), "description": desc, "stdin": opts["stdin"],
                    "approx_tokens": len(text) // 4, "chars": len(text), "parts": parts})
        print(f"{doc_id:24} {kind:9} {len(text)//4:7d} tok  {len(parts):3d} parts", file=sys.stderr)
    print(f"total {sum(d['approx_tokens'] for d in out)} tok", file=sys.stderr)
    write_json(f"{HERE}/corpus.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
