"""Shared helpers for the corpus scripts: the document table, text extraction through infinipot's own reader, and
verify.py's checks.

bench/testset's scripts use them too (by import): every function that reads or writes a folder's files takes the
folder (its docs/, text/, versions.txt, corpus.json, questions.json), this folder by default.

Run with .venv/bin/python (needs infinipot_cli, pypdf, bs4, ebooklib).
"""

from __future__ import annotations

import collections
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
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


def doc_rows(table: list[tuple] = DOC_TABLE) -> list[tuple[str, str, str, str, str, dict]]:
    """A document table (this folder's DOC_TABLE by default) with the options filled in: (id, file, kind, package,
    description, {"stdin": bool})."""
    rows = []
    for doc_id, fname, kind, package, desc, *extra in table:
        opts = {"stdin": False, **(extra[0] if extra else {})}
        rows.append((doc_id, fname, kind, package, desc, opts))
    return rows


def doc_path(fname: str, folder: str = HERE) -> str:
    """A document's file: `folder`/docs/<fname>."""
    return os.path.join(folder, "docs", fname)


def read_versions(folder: str = HERE) -> dict[str, str]:
    """Package -> version, from `folder`/versions.txt (fetch.sh writes it); empty when there is none yet."""
    versions = {}
    try:
        for line in open(os.path.join(folder, "versions.txt"), encoding="utf-8"):
            m = re.match(r"Package: (\S+) Version: (\S+)", line)
            if m:
                versions[m.group(1)] = m.group(2)
    except FileNotFoundError:
        pass
    return versions


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


# ------------------------------------------------------------------------------------------------- verify.py
def load_set(folder: str = HERE) -> tuple[list[dict], list[dict]]:
    """`folder`'s corpus.json (the documents) and questions.json (the questions)."""
    with open(os.path.join(folder, "corpus.json"), encoding="utf-8") as f:
        docs = json.load(f)
    with open(os.path.join(folder, "questions.json"), encoding="utf-8") as f:
        questions = json.load(f)
    return docs, questions


def doc_texts(folder: str, docs: list[dict], cached: bool, failures: list[str]) -> dict[str, str]:
    """Each document's extracted text, by id (a relative `path` is taken against `folder`): with `cached`, through
    `folder`/text/, else read afresh (a "stdin" document piped on standard input, as the bench reads it). Appends to
    `failures` a missing file and every part term that does not occur in its document's text."""
    texts: dict[str, str] = {}
    for d in docs:
        path = d["path"] if os.path.isabs(d["path"]) else os.path.join(folder, d["path"])
        if not os.path.exists(path):
            failures.append(f"{d['id']}: missing file {d['path']}")
            continue
        if cached:
            text = extracted_text(d["id"], path, d.get("stdin", False), text_dir=os.path.join(folder, "text"))
        else:
            text = "\n\n".join(t for _, t in passages(path, d.get("stdin", False)))
        texts[d["id"]] = text
        low = squash(text).lower()
        for p in d["parts"]:
            for t in p["terms"]:
                if t.lower() not in low:
                    failures.append(f"{d['id']}: part {p['title']!r}: term {t!r} not in text")
    return texts


def check_questions(docs: list[dict], questions: list[dict], texts: dict[str, str], failures: list[str], *,
                    before=None, after=None, scorer=None, paraphrase_of_count: str = "paraphrases"):
    """Every question's checks, failures appended to `failures`: its doc is known; an unanswerable one has no answers
    and no passage; an answerable one has both, its passage occurs in the document's whitespace-normalised text, an
    answer string occurs in the passage (case-insensitive), its `support` lines follow the passage, it has a `where`;
    a `paraphrase_of` names a question on the same document.

    Hooks, for a folder's own checks (each returns an iterable of failure messages): before(q, tag, counter) runs
    first on every question of a known doc; after(q, tag, counter) once its answer checks are done (not for an
    answerable question without answers or passage, which goes no further). scorer(passage, answers, question):
    where given, a passage holding an answer string must also answer the question by it.

    Returns (per doc: a Counter of questions, unanswerable and, under `paraphrase_of_count`, the questions with a
    `paraphrase_of` (hooks may count more); per doc: the relative positions of the passages found)."""
    by_id = {q["id"]: q for q in questions}
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
        if before is not None:
            failures.extend(before(q, tag, c))
        if q["kind"] == "unanswerable":
            c["unanswerable"] += 1
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
            elif scorer is not None and not scorer(want, q["answers"], q["question"]):
                failures.append(f"{tag}: the bench's scorer does not find an answer in the passage")
            for extra in q.get("support", []):  # must follow the passage (e.g. an entry under its header)
                at = flat.find(squash(extra), max(pos, 0))
                if pos < 0 or at < 0:
                    failures.append(f"{tag}: support line not found after the passage: {extra[:80]!r}")
            if not q.get("where"):
                failures.append(f"{tag}: no 'where'")
        if after is not None:
            failures.extend(after(q, tag, c))
        if q.get("paraphrase_of"):
            c[paraphrase_of_count] += 1
            orig = by_id.get(q["paraphrase_of"])
            if orig is None or orig["doc"] != q["doc"]:
                failures.append(f"{tag}: paraphrase_of {q['paraphrase_of']!r} missing or on another doc")
    return per_doc, positions


def print_table(docs: list[dict], per_doc, positions) -> collections.Counter:
    """The per-document summary (counts and sorted answer positions); returns the counters summed."""
    print(f"{'doc':24} {'kind':9} {'tokens':>7} {'parts':>5} {'qs':>3} {'unans':>5} {'para':>4}  answer positions")
    for d in docs:
        c = per_doc[d["id"]]
        pos = " ".join(f"{p:.2f}" for p in sorted(positions[d["id"]]))
        print(f"{d['id']:24} {d['kind']:9} {d['approx_tokens']:7d} {len(d['parts']):5d} {c['questions']:3d} "
              f"{c['unanswerable']:5d} {c['paraphrases']:4d}  {pos}")
    total = collections.Counter()
    for c in per_doc.values():
        total.update(c)
    return total


def totals_line(docs: list[dict], total: collections.Counter) -> str:
    return (f"total: {len(docs)} docs, {sum(d['approx_tokens'] for d in docs)} tokens, "
            f"{sum(len(d['parts']) for d in docs)} parts, {total['questions']} questions "
            f"({total['unanswerable']} unanswerable, {total['paraphrases']} paraphrases)")


def report(failures: list[str], warnings: list[str] | tuple = ()) -> int:
    """Prints the warnings, the failures and OK (or their count); the exit code: 1 if anything failed."""
    for w in warnings:
        print("WARNING", w)
    for f in failures:
        print("FAIL", f)
    print("OK" if not failures else f"{len(failures)} failures")
    return 1 if failures else 0
