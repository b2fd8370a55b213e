#!/usr/bin/env python3
"""Write corpus.json: every document with its top-level parts (from its own structure) and distinctive terms.

Structure per kind:
  pdf        the PDF outline (pypdf); top level, or the level below when the top level has < 5 entries
  html       the shallowest heading level (h1..h4) with >= 4 headings (bs4)
  epub       infinipot's chapters (spine order, nav titles); numbered chapters ("3. Title") when there are >= 5
  man        section headers: all-caps lines at column 0
  changelog  version entries, grouped into ~12 consecutive groups
  text       Vim user manual numbered headings (*02.1*)
  markdown   ATX headings ("## Title") outside fenced code, at the shallowest level with >= 4 of them
Terms: words frequent in the part and rare in the rest of the document (score = count_in_part / (1 + count_rest)),
chosen only among words that occur in the text infinipot extracts for that part.
"""

from __future__ import annotations

import collections
import math
import os
import re
import sys

from corpus_lib import HERE, WORD, doc_path, doc_rows, extracted_text, passages, read_versions, write_json

STOP = set("""
about above after again against also although among another any anything are aren around because been before
being below between both but by can cannot could did does doing done down during each either else even ever
every few for from further had has have having here how however into its itself just last later least less
like made make makes many may might more most much must need never next none not now off often once one only
other others otherwise our out over own per rather same see should since some such than that the their them
then there these they this those though through thus too two under until upon use used uses using very was
way well were what when where whether which while who whom whose why will with within without would yet you
your first second new following example examples section chapter value values default set sets file files
name names option options command commands also given specified note line lines number text see also page
true false none null used time type types list string strings return returns argument arguments""".split())


# ----------------------------------------------------------------------------------------------- structures
def parts_pdf(path: str) -> list[dict]:
    from pypdf import PdfReader

    reader = PdfReader(path)
    labels = list(reader.page_labels)

    def entries(items):
        out = []
        for o in items:
            if isinstance(o, list):
                continue
            out.append((o.title.strip(), reader.get_destination_page_number(o) + 1))
        return out

    top = entries(reader.outline)
    if len(top) < 5:  # go one level down (keep top-level entries that have no children)
        flat = []
        items = reader.outline
        for i, o in enumerate(items):
            if isinstance(o, list):
                continue
            kids = items[i + 1] if i + 1 < len(items) and isinstance(items[i + 1], list) else None
            flat.extend(entries(kids) if kids else entries([o]))
        top = flat
    # infinipot page passages -> physical page index (labels in order)
    page_text: dict[int, list[str]] = collections.defaultdict(list)
    idx = 0
    for where, text in passages(path):
        m = re.match(r"p\. (\S+)", where)
        label = m.group(1) if m else None
        while idx < len(labels) and labels[idx] != label:
            idx += 1
        page_text[idx + 1].append(text)
    # one string of all pages, with each page's offset; a part starts where its title is found on its page
    whole, offset = "", {}
    for p in range(1, len(labels) + 1):
        offset[p] = len(whole)
        whole += "\n".join(page_text.get(p, [])) + "\n"
    offset[len(labels) + 1] = len(whole)
    starts = []
    for title, page in top:
        pos = offset[page]
        hay = whole[offset[page]: offset[page + 1]]
        m = re.search(r"\s+".join(re.escape(w) for w in title.split()), hay, re.IGNORECASE)
        if m:
            pos += m.start()
        starts.append(max(pos, starts[-1] if starts else 0))
    parts = []
    for i, (title, page) in enumerate(top):
        end = starts[i + 1] if i + 1 < len(top) else len(whole)
        parts.append({"title": title, "page": page, "page_label": labels[page - 1],
                      "_text": whole[starts[i]: end]})
    return parts


def parts_html(path: str) -> list[dict]:
    from bs4 import BeautifulSoup, NavigableString

    with open(path, "rb") as f:
        soup = BeautifulSoup(f.read(), "html.parser")
    for t in soup(["script", "style", "head", "nav"]):
        t.decompose()
    level = None
    for lv in range(1, 5):
        if len(soup.find_all(f"h{lv}")) >= 4:
            level = lv
            break
    skip_first = level is None
    if level is None:  # few headings: the chapters (h1 after the document title)
        level = 1
    heads = {f"h{i}" for i in range(1, level + 1)}
    parts: list[dict] = []
    cur = None
    for el in soup.descendants:
        if getattr(el, "name", None) in heads:
            title = " ".join(el.get_text(" ", strip=True).replace("¶", "").split())
            if el.name == f"h{level}":
                cur = {"title": title, "section": title, "_text": []}
                parts.append(cur)
            else:
                cur = None  # a higher-level heading (document title) ends the current part
        elif isinstance(el, NavigableString) and cur is not None:
            cur["_text"].append(str(el))
    if skip_first:
        parts = parts[1:]
    for p in parts:
        p["_text"] = " ".join(p["_text"])
    return [p for p in parts if p["title"] not in ("Table of Contents",)]


def parts_epub(path: str) -> list[dict]:
    chapters: dict[str, dict] = {}
    for where, text in passages(path):
        m = re.match(r"ch\. (\d+) · (.*)", where)
        if not m:
            continue
        key = m.group(1)
        if key not in chapters:
            chapters[key] = {"title": m.group(2).strip(), "chapter": int(key), "_text": ""}
        chapters[key]["_text"] += "\n" + text
    chs = list(chapters.values())
    numbered = [c for c in chs if re.match(r"\d+\. ", c["title"])]
    if len(numbered) >= 5:
        chs = numbered
    def is_toc(text: str) -> bool:  # front matter that is mostly a numbered table of contents
        lines = [l for l in text.split("\n") if l.strip()]
        return sum(bool(re.match(r"\d+(\.\d+)*\. ", l)) for l in lines) > 0.5 * len(lines)

    chs = [c for c in chs if len(c["_text"]) > 300 and c["title"] != "Table of Contents" and not is_toc(c["_text"])]
    for c in chs:
        c["section"] = c["title"]
    return chs


def _line_parts(lines: list[str], starts: list[tuple[int, str]]) -> list[dict]:
    parts = []
    for i, (ln, title) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(lines) + 1
        parts.append({"title": title, "start_line": ln, "_text": "\n".join(lines[ln - 1: end - 1])})
    return parts


def parts_man(path: str) -> list[dict]:
    lines = open(path, encoding="utf-8").read().split("\n")
    starts = [(i + 1, l.strip()) for i, l in enumerate(lines) if re.fullmatch(r"[A-Z][A-Z0-9 ,/-]+", l)]
    return _line_parts(lines, starts)


def parts_changelog(path: str, groups: int = 12) -> list[dict]:
    lines = open(path, encoding="utf-8").read().split("\n")
    entries = []
    for i, l in enumerate(lines):
        m = re.match(r"(\S+) \(([^)]+)\) \S+; urgency=", l)  # Debian changelog
        if m:
            entries.append((i + 1, m.group(2)))
            continue
        m = re.match(r"\* (?:Noteworthy|Major) changes in release (\S+)", l) or re.fullmatch(r"\[(\d[\w.]*)\]", l)
        if m:
            entries.append((i + 1, m.group(1)))
    per = max(1, math.ceil(len(entries) / groups))
    starts = []
    for g in range(0, len(entries), per):
        chunk = entries[g: g + per]
        title = f"{chunk[0][1]} .. {chunk[-1][1]}" if len(chunk) > 1 else chunk[0][1]
        starts.append((chunk[0][0], title))
    parts = _line_parts(lines, starts)
    for p, g in zip(parts, range(0, len(entries), per)):
        p["versions"] = [v for _, v in entries[g: g + per]]
    return parts


def parts_text(path: str) -> list[dict]:
    lines = open(path, encoding="utf-8").read().split("\n")
    starts = []
    for i, l in enumerate(lines):
        m = re.match(r"\*(\d+\.\d+)\*\s+(.*?)(?:\s{2,}|\t|$)", l)
        if m:
            starts.append((i + 1, f"{m.group(1)} {m.group(2).strip()}"))
    return _line_parts(lines, starts)


def parts_markdown(path: str) -> list[dict]:
    lines = open(path, encoding="utf-8").read().split("\n")
    heads, fence = [], None
    for i, l in enumerate(lines):
        m = re.match(r"\s*(```+|~~~+)", l)
        if m:
            if fence is None:
                fence = m.group(1)[0] * 3
            elif m.group(1).startswith(fence):
                fence = None
            continue
        m = re.match(r"(#{1,6}) +(.+?)\s*#*\s*$", l)
        if m and fence is None:
            heads.append((len(m.group(1)), i + 1, m.group(2).strip()))
    level = next((lv for lv in range(1, 7) if sum(h[0] == lv for h in heads) >= 4), 1)
    bounds = [(ln, lv, title) for lv, ln, title in heads if lv <= level]  # a part runs to the next of these
    bounds.append((len(lines) + 1, 0, ""))
    return [{"title": title, "start_line": ln, "_text": "\n".join(lines[ln - 1: bounds[i + 1][0] - 1])}
            for i, (ln, lv, title) in enumerate(bounds[:-1]) if lv == level and title != "Table of Contents"]


# ----------------------------------------------------------------------------------------------- terms
def words(text: str) -> list[str]:
    return [w.strip(".-").lower() for w in WORD.findall(text)]


def pick_terms(parts: list[dict], full_text: str, k: int = 5) -> None:
    counts = [collections.Counter(w for w in words(p["_text"]) if len(w) >= 4 and w not in STOP) for p in parts]
    total = collections.Counter(w for w in words(full_text) if len(w) >= 4)
    full_lower = full_text.lower()
    # the most common original spelling of each word
    spelling: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for w in WORD.findall(full_text):
        spelling[w.strip(".-").lower()][w.strip(".-")] += 1
    for p, c in zip(parts, counts):
        scored = []
        for w, n in c.items():
            rest = max(0, total[w] - n)
            if n < 2 or w.isdigit() or w not in full_lower:
                continue
            scored.append((n / (1 + rest) * math.log(1 + n), n, w))
        scored.sort(reverse=True)
        terms = []
        for _, n, w in scored:
            form = spelling[w].most_common(1)[0][0] if spelling[w] else w
            if form.lower() in p["_text"].lower():
                terms.append(form)
            if len(terms) == k:
                break
        p["terms"] = terms


BUILDERS = {"pdf": parts_pdf, "html": parts_html, "epub": parts_epub, "man": parts_man,
            "changelog": parts_changelog, "text": parts_text, "markdown": parts_markdown}


def write_corpus_json(folder: str = HERE, rows: list[tuple] | None = None, relative: bool = False,
                      width: int = 22) -> list[dict]:
    """Write `folder`/corpus.json: for each document of `rows` (doc_rows() of a document table; this folder's by
    default), read from `folder`/docs/ (its text cached in `folder`/text/), its parts and terms, with the package
    versions of `folder`/versions.txt. `path` is the document's absolute path, or with `relative` "docs/<file>"
    (resolved against the folder by bench qa/summary). Prints a line a document (its id padded to `width`) on stderr;
    returns the entries written. bench/testset's make_parts.py calls it on its own folder and table."""
    versions = read_versions(folder)
    out = []
    for doc_id, fname, kind, package, desc, opts in doc_rows() if rows is None else rows:
        path = doc_path(fname, folder)
        text = extracted_text(doc_id, path, opts["stdin"], text_dir=os.path.join(folder, "text"))
        parts = BUILDERS[kind](path)
        pick_terms(parts, text)
        for p in parts:
            del p["_text"]
        out.append({"id": doc_id, "path": "docs/" + fname if relative else path, "kind": kind, "package": package,
                    "package_version": versions.get(package), "description": desc, "stdin": opts["stdin"],
                    "approx_tokens": len(text) // 4, "chars": len(text), "parts": parts})
        print(f"{doc_id:{width}} {kind:9} {len(text)//4:7d} tok  {len(parts):3d} parts", file=sys.stderr)
    write_json(os.path.join(folder, "corpus.json"), out)
    return out


def main() -> int:
    write_corpus_json(HERE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
