"""Shared helpers for the corpus scripts: the document table and text extraction through infinipot's own reader.

Run with .venv/bin/python (needs infinipot_cli, pypdf, bs4, ebooklib).
"""

from __future__ import annotations

import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(HERE, "docs")
TEXT = os.path.join(HERE, "text")  # cache of the text infinipot extracts, one file per doc

# id, file under docs/, kind, package, what it is[, options]. Options: {"stdin": True} = the bench feeds the
# document through a pipe on standard input (corpus.json's "stdin" field), so it is extracted that way here too.
DOC_TABLE = [
    ("libtasn1", "libtasn1.pdf", "pdf", "libtasn1-doc", "GNU Libtasn1 reference manual (ASN.1 library), PDF"),
    ("shared-mime-info-spec", "shared-mime-info-spec.pdf", "pdf", "shared-mime-info",
     "freedesktop.org Shared MIME-info Database specification, PDF"),
    ("users-and-groups", "users-and-groups.html", "html", "base-passwd",
     "Debian base-passwd: the system users and groups and what they are for, HTML"),
    ("python-argparse", "python-argparse.html", "html", "python3.11-doc",
     "Python 3.11 library reference page for argparse, HTML"),
    ("python-logging-howto", "python-logging-howto.html", "html", "python3.11-doc",
     "Python 3.11 Logging HOWTO, HTML"),
    ("bashref", "bashref.html", "html", "bash-doc", "GNU Bash Reference Manual, single-page HTML (long manual)"),
    ("live-manual", "live-manual.en.epub", "epub", "live-manual-epub", "Debian Live Systems Manual (English), EPUB"),
    ("debian-policy", "debian-policy.epub", "epub", "debian-policy", "Debian Policy Manual 4.6.2.0, EPUB"),
    ("bash-man", "bash.1.txt", "man", "bash", "bash(1) man page rendered to plain text"),
    ("rsync-man", "rsync.1.txt", "man", "rsync", "rsync(1) man page rendered to plain text"),
    ("tar-man", "tar.1.txt", "man", "tar", "tar(1) man page rendered to plain text"),
    ("gzip-man", "gzip.1.txt", "man", "gzip", "gzip(1) man page rendered to plain text"),
    ("gzip-changelog", "gzip-changelog.Debian.txt", "changelog", "gzip", "Debian changelog of the gzip package"),
    ("coreutils-news", "coreutils-NEWS.txt", "changelog", "coreutils", "GNU coreutils upstream NEWS (release notes)"),
    ("vim-usr02", "vim-usr_02.txt", "text", "vim-runtime", "Vim user manual chapter 2: The first steps in Vim"),
    ("vim-usr41", "vim-usr_41.txt", "text", "vim-runtime", "Vim user manual chapter 41: Write a Vim script"),
    ("glib-keyfile", "glib-keyfile.html", "html", "libglib2.0-doc",
     "GLib 2.74 API reference page: Key-value file parser (GKeyFile), gtk-doc HTML"),
    ("r-intro", "R-intro.pdf", "pdf", "r-doc-pdf", "An Introduction to R (R 4.2.2 manual), PDF book"),
    ("ssh-man", "ssh.1.txt", "man", "openssh-client",
     "ssh(1) man page (BSD mdoc) rendered to plain text, read piped on stdin", {"stdin": True}),
    ("sinatra-readme", "sinatra-README.md", "markdown", "ruby-sinatra",
     "Sinatra 3.0 README (Ruby web framework), Markdown"),
]


def doc_rows() -> list[tuple[str, str, str, str, str, dict]]:
    """DOC_TABLE with the options filled in: (id, file, kind, package, description, {"stdin": bool})."""
    rows = []
    for doc_id, fname, kind, package, desc, *extra in DOC_TABLE:
        opts = {"stdin": False, **(extra[0] if extra else {})}
        rows.append((doc_id, fname, kind, package, desc, opts))
    return rows


def doc_path(fname: str) -> str:
    return os.path.join(DOCS, fname)


def passages(path: str, stdin: bool = False) -> list[tuple[str, str]]:
    """(where, text) for every passage infinipot's reader yields for ``path`` (read as a pipe on stdin if asked)."""
    from infinipot_cli.documents.opener import open_source

    if stdin:
        with open(path, "rb") as f, open_source("-", stdin=f) as src:
            return [(p.where, p.text) for p in src.passages()]
    with open_source(path) as src:
        return [(p.where, p.text) for p in src.passages()]


def extracted_text(doc_id: str, path: str, stdin: bool = False, text_dir: str = TEXT) -> str:
    """The whole text infinipot extracts (passages joined by blank lines), cached in `text_dir`/<id>.txt (this
    folder's text/ by default; bench/testset passes its own)."""
    os.makedirs(text_dir, exist_ok=True)
    cache = os.path.join(text_dir, doc_id + ".txt")
    if os.path.exists(cache) and os.path.getmtime(cache) >= os.path.getmtime(path):
        with open(cache, encoding="utf-8") as f:
            return f.read()
    text = "\n\n".join(t for _, t in passages(path, stdin))
    tmp = cache + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, cache)
    return text


def squash(text: str) -> str:
    """Whitespace-normalised, for verbatim matching: every run of whitespace becomes one space."""
    return " ".join(text.split())


def write_json(path: str, obj) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, path)


WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*")
