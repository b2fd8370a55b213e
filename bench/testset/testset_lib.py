"""Shared helpers for the test-set scripts: the document table, and the corpus scripts' code re-used by import.

bench/corpus's modules are imported from their folder: corpus_lib (infinipot's reader, `write_json`, verify.py's
checks; its functions take the folder they work on, so ours pass this one); corpus make_parts.py for
`write_corpus_json` (the per-kind structure builders and term picking); corpus make_questions.py for `locate` (the
"where" of a passage). The corpus's own scripts have the same file names as ours, so they are loaded under other module
names (corpus_make_parts, corpus_make_questions).

Run with the project's venv python (needs infinipot_cli, pypdf, bs4, ebooklib).
"""

from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.normpath(os.path.join(HERE, "..", "corpus"))

if CORPUS not in sys.path:
    sys.path.insert(1, CORPUS)  # after our own folder: our make_parts/make_questions/verify win for plain imports

import corpus_lib  # noqa: E402  (bench/corpus/corpus_lib.py)
from corpus_lib import write_json  # noqa: E402,F401


def folder_module(folder: str, prefix: str, name: str):
    """<folder>/<name>.py loaded as module <prefix>_<name>: a bench folder's script whose file name another
    folder's scripts also use."""
    key = prefix + "_" + name
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, os.path.join(folder, name + ".py"))
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


def corpus_module(name: str):
    """bench/corpus/<name>.py loaded as module corpus_<name> (its own `from corpus_lib import ...` still works)."""
    return folder_module(CORPUS, "corpus", name)


# id, file under docs/, kind, package, what it is[, options]. Options: {"stdin": True} = the bench feeds the
# document through a pipe on standard input (corpus.json's "stdin" field), so it is extracted that way here too.
# None of these is one of bench/corpus's 20 documents.
DOC_TABLE = [
    ("debian-history", "debian-history.pdf", "pdf", "debian-history",
     "A Brief History of Debian (Debian Documentation/Publicity Team, 2023), PDF"),
    ("libidn2", "libidn2.pdf", "pdf", "libidn2-doc",
     "GNU Libidn2 2.3.3 manual (internationalized domain names, IDNA2008/TR46), PDF"),
    ("lintian-manual", "lintian.html", "html", "lintian", "Lintian User's Manual (Debian package checker), HTML"),
    ("sqlite-datatypes", "sqlite-datatype3.html", "html", "sqlite3-doc",
     "SQLite documentation page: Datatypes In SQLite version 3 (storage classes, type affinity), HTML"),
    ("xz-man", "xz.1.txt", "man", "xz-utils", "xz(1) man page rendered to plain text"),
    ("xargs-man", "xargs.1.txt", "man", "findutils",
     "xargs(1) man page rendered to plain text, read piped on stdin", {"stdin": True}),
    ("grep-news", "grep-NEWS.txt", "changelog", "grep", "GNU grep upstream NEWS (release notes)"),
    ("vim-usr10", "vim-usr_10.txt", "text", "vim-runtime", "Vim user manual chapter 10: Making big changes"),
    ("puma-readme", "puma-README.md", "markdown", "puma", "Puma 5.6 README (Ruby web server), Markdown"),
]


def doc_rows() -> list[tuple[str, str, str, str, str, dict]]:
    """DOC_TABLE with the options filled in: (id, file, kind, package, description, {"stdin": bool})."""
    return corpus_lib.doc_rows(DOC_TABLE)


def doc_path(fname: str) -> str:
    return corpus_lib.doc_path(fname, HERE)
