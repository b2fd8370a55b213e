"""Page furniture: lines that repeat at the top or bottom of most pages (PDF running headers and footers, page
numbers, Sphinx "Navigation … next | previous |" blocks and "© Copyright" footers in EPUB chapters) and table-of-
contents dot leaders. They cost pot entries and look like content to the model, so they are dropped.

Streaming: a page is judged against a window of its neighbours (`window` pages, `window // 2` read ahead), so a
1000-page PDF is never held whole and a header that changes with the chapter is still found. A line counts as
furniture when it sits among the first or last `edge` non-empty lines of a page and the same line (every page
number counts as one line: "12", "xiv", "Page 3 of 40") also sits at an edge of at least half the pages of the window (and of at least 3 pages),
and is at most MAX_CHARS long.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")

_SPACES = re.compile(r"\s+")
# "Introduction ........ 5", "2.1 Setup . . . . . 12", "Chapter 3 ___ 40"
DOT_LEADER = re.compile(r"(?:\.\s?){4,}\s*[\divxlcdm]+\s*$|_{4,}\s*\d+\s*$", re.IGNORECASE)
MIN_PAGES = 3
MAX_CHARS = 80  # longer lines are text, never furniture


# A page number alone: "12", "xiv", "- 12 -", "Page 3", "Page 3 of 40", "3 / 40"
PAGE_NUMBER = re.compile(r"[-–—\s]*(?:page\s+)?(?:\d+|[ivxlcdm]+)(?:\s*(?:of|/)\s*\d+)?[-–—\s]*", re.IGNORECASE)


def _key(line: str) -> str:
    line = line.strip()
    if len(line) > MAX_CHARS:
        return ""
    if PAGE_NUMBER.fullmatch(line):
        return "#page-number#"
    return _SPACES.sub(" ", line.lower())


def _edges(lines: list[str], edge: int) -> set[int]:
    """Indices of the first and last `edge` non-empty lines."""
    filled = [i for i, x in enumerate(lines) if x.strip()]
    return set(filled[:edge]) | set(filled[-edge:]) if edge else set()


def _edge_keys(text: str, edge: int) -> set[str]:
    lines = text.split("\n")
    return {_key(lines[i]) for i in _edges(lines, edge)}


def clean_page(text: str, furniture: set[str], edge: int) -> tuple[str, int]:
    """`text` without its edge lines whose key is in `furniture` and without dot-leader lines; (text, lines dropped)."""
    lines = text.split("\n")
    edges = _edges(lines, edge)
    keep, dropped = [], 0
    for i, line in enumerate(lines):
        if (i in edges and _key(line) in furniture) or DOT_LEADER.search(line):
            dropped += 1
            continue
        keep.append(line)
    return "\n".join(keep).strip("\n"), dropped


def strip_furniture(pages: Iterable[tuple[T, str]], edge: int = 3, window: int = 9) -> Iterator[tuple[T, str, int]]:
    """(key, text) pages in -> (key, cleaned text, lines dropped) out, in order, reading `window // 2` pages ahead."""
    ahead = max(1, window // 2)
    buf: deque[tuple[T, str, set[str]]] = deque()   # pages not yet yielded (the current one first)
    behind: deque[set[str]] = deque(maxlen=ahead)   # edge keys of the pages already yielded
    counts: Counter[str] = Counter()                # edge keys over behind + buf

    def emit() -> tuple[T, str, int]:
        key, text, keys = buf.popleft()
        n = len(behind) + 1 + len(buf)
        need = max(MIN_PAGES, (n + 1) // 2)
        furniture = {k for k in keys if k and counts[k] >= need} if n >= MIN_PAGES else set()
        if len(behind) == behind.maxlen:
            counts.subtract(behind[0])
        behind.append(keys)
        cleaned, dropped = clean_page(text, furniture, edge)
        return key, cleaned, dropped

    for key, text in pages:
        keys = _edge_keys(text, edge)
        counts.update(keys)
        buf.append((key, text, keys))
        if len(buf) > ahead:
            yield emit()
    while buf:
        yield emit()
