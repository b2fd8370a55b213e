"""The document's own parts, as read: where each chapter, section or heading starts, in token positions.

A summary lists its key points part by part (keypoints.py), so it needs the document's own structure, not
equal stretches. Two sources, in this order:

- the readers' provenance labels (documents/*.py): a PDF page's outline title ("p. 5 · 2 Parsing"), an HTML
  section ("§ Basic usage"), an EPUB chapter ("ch. 3 · Title"); a part starts where the label's section changes;
- for plain text, whose labels only say "line N", heading lines found in the text itself: man-page section
  headers (an all-capitals line at column 0), Markdown "#" headings, underlined headings ("Title" over "====="),
  numbered headings ("3.2 Title"), Vim help headings ("*02.1* Title"), Debian changelog entries
  ("pkg (1.2-1) unstable; urgency=low") and GNU NEWS releases ("* Noteworthy changes in release 9.1").

With fewer than MIN_PARTS parts the document counts as unstructured and the caller uses equal stretches.
More than `limit` parts are merged, in order, into `limit` groups of consecutive parts (the group keeps its
first part's title).

    Part(start: int, title: str)     start: the document position (token index) of the part's first token
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..documents.where import Where, join, kind_of, split, without

MIN_PARTS = 3
_HEADINGS = [
    re.compile(r"[A-Z][A-Z0-9 ,/&()'-]{1,60}"),                      # man page: all capitals at column 0
    re.compile(r"#{1,3} +\S.{0,80}"),                                 # Markdown
    re.compile(r"\*\d+(?:\.\d+)*\*\s+\S.{0,80}"),                     # Vim help: *02.1*  Title
    re.compile(r"\d+(?:\.\d+)*\.?\s+[A-Z][^.!?]{1,70}"),              # numbered: 3.2 Title (no sentence end)
    re.compile(r"[\w.+-]+ \([^)\s]+\) [^;]{1,60}; urgency=\S+"),      # Debian changelog entry
    re.compile(r"\* (?:Noteworthy|Major) changes in release \S+.*"),  # GNU NEWS release
]
_UNDERLINE = re.compile(r"(=+|-+|~+|\*+)")
_RULE = re.compile(r"([=\-~*_#+.])\1{2,}")
# A line of code, not prose or a heading: it ends on an operator or an opening bracket (the statement goes on:
# "DEFINITIONS ... TAGS ::=", "Group ::= SEQUENCE {"), is only brackets ("}", "});"), a statement ending in ";"
# with code punctuation, an ASN.1 / BNF rule ("::="), or a <placeholder>.
_CODE_LINE = re.compile(r"""(?:::=|:=|[=({\[,\\]|&&|\|\||->)\s*$|^[{}()\[\];,]+$|[(){}=].*;\s*$|::=|^<[^<>]+>$""")
# A C preprocessor line, which a "#" heading pattern would take for Markdown: "#  define SET_BINARY_MODE(file)",
# "# include <stdio.h>", "#ifdef WIN32", "#endif".
_DIRECTIVE = re.compile(r"""\s*#\s*(?:include\s*[<"]|(?:define|undef|ifn?def)\s+[A-Za-z_]\w*|(?:el)?if\s+\S|else\b|endif\b|"""
                        r"""pragma\s|error\s|line\s+\d)""")


@dataclass(frozen=True)
class Part:
    start: int    # document position of the part's first token
    title: str    # its heading ("" for an equal stretch)


def label_section(label: str) -> str:
    """The section a provenance label names, without its page or line: "p. 5 · 2 Parsing" -> "2 Parsing",
    "§ Basic usage" -> "Basic usage", "ch. 3 · Title" -> "ch. 3 · Title", "line 120" -> ""."""
    return without(label, "page", "line").removeprefix("§ ")


def _titled_page(label: str) -> bool:
    """Whether a provenance label is a PDF page's with an outline title ("p. 5 · 2 Parsing")."""
    w = Where.parse(label)
    return w.page is not None and bool(w.section)


def from_labels(provenance: list) -> list[Part]:
    """Parts where the provenance label's section changes (provenance: [(first token index, label)])."""
    out: list[Part] = []
    current = None
    for start, label in provenance:
        sec = label_section(label)
        if sec and sec != current:
            parts = split(sec)
            title = join(*parts[1:]) if len(parts) > 1 and kind_of(parts[0]) == "chapter" else sec
            out.append(Part(int(start), title))
        current = sec or current
    return out


def code_line(line: str) -> bool:
    """Whether `line` reads as a line of code (_CODE_LINE, a C preprocessor directive); a rule of one repeated
    mark ("=====") is not."""
    text = line.strip()
    return bool(text) and not _RULE.fullmatch(text) and (bool(_CODE_LINE.search(text)) or bool(_DIRECTIVE.match(text)))


def heading_of(line: str, next_line: str = "", prev_line: str = "") -> str | None:
    """The title when `line` (one line, column 0 kept) is a heading, else None. A line between lines of code
    is code, not a heading: ASN.1's "BEGIN" after "DEFINITIONS ... ::=", "END" after "}" (a PDF's text keeps
    no indentation to tell them apart from a man page's section headers)."""
    text = line.rstrip()
    if not text or len(text) > 90 or text[:1].isspace():
        return None
    if code_line(prev_line) or code_line(next_line) or code_line(text):
        return None
    if any(h.fullmatch(text) for h in _HEADINGS):
        return re.sub(r"^(#+|\*[\d.]+\*)\s*", "", text).strip()
    nxt = next_line.strip()
    if nxt and _UNDERLINE.fullmatch(nxt) and abs(len(nxt) - len(text)) <= 3 and len(nxt) >= 3:
        return text.strip()
    return None


def from_text(unit_pos: list[int], texts: list[str]) -> list[Part]:
    """Parts at heading lines of plain text: `texts` are consecutive units of the document (their first token
    at `unit_pos`); a heading line inside a unit is placed at the unit's start."""
    out: list[Part] = []
    at_line_start = True
    prev = ""  # the last line with text before this one
    for k, (pos, text) in enumerate(zip(unit_pos, texts)):
        lines = text.split("\n")
        for j, line in enumerate(lines):
            if j == 0 and not at_line_start:
                prev = line if line.strip() else prev
                continue
            nxt = lines[j + 1] if j + 1 < len(lines) else (texts[k + 1].split("\n")[0] if k + 1 < len(texts) else "")
            title = heading_of(line, nxt, prev)
            if title and (not out or out[-1].start != pos):
                out.append(Part(int(pos), title))
            prev = line if line.strip() else prev
        at_line_start = text.endswith("\n")
    return out


def merge(parts: list[Part], limit: int) -> list[Part]:
    """At most `limit` parts: consecutive parts grouped evenly (each group starts at its first part)."""
    if len(parts) <= limit:
        return parts
    n = len(parts)
    return [parts[(g * n) // limit] for g in range(limit)]


def outline(provenance: list, unit_pos: list[int], texts: list[str], limit: int) -> list[Part]:
    """The document's parts (at most `limit`), or [] when it shows fewer than MIN_PARTS. A PDF with an outline
    is divided by its outline alone (its text's heading-like lines are as often code or table rows)."""
    labelled = from_labels(provenance)
    if len(labelled) >= MIN_PARTS:
        return merge(labelled, limit)
    if labelled and any(_titled_page(label) for _, label in provenance):
        return []
    parts = from_text(unit_pos, texts)
    return merge(parts, limit) if len(parts) >= MIN_PARTS else []
