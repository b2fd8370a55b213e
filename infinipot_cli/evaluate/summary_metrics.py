"""What `bench summary` measures in a summary, from its text and the document's (no model involved).

- **coverage**: the document's parts (headings, chapters, sections of a corpus entry) for which the summary
  states something specific: at least one of the part's distinctive terms appears in it as a word (any case).
  Parts without distinctive terms (an index) are not counted.
- **degeneration**: the most times any word 3-gram occurs (1 = no repeat; the target is at most 2) and
  distinct-2 (distinct word bigrams / word bigrams; 1.0 = none repeated).
- **unsupported content**: numbers (``4.19.0``, ``2024``) and capitalised words (names, acronyms) of the
  summary that the document's text does not contain (numbers as written; words case-insensitively).
"""

from __future__ import annotations

import re
from collections import Counter

_WORDS = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_'\-.]*[A-Za-z0-9_]|[A-Za-z0-9_]")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")
_CAPITAL = re.compile(r"\b[A-Z][A-Za-z0-9_\-]*\b")


def words(text: str) -> list[str]:
    return [w.casefold() for w in re.findall(r"\w+", text)]


def part_covered(summary: str, terms: list[str]) -> list[str]:
    """The part's terms the summary contains as whole words (case-insensitive)."""
    low = summary.casefold()
    return [t for t in terms if re.search(r"(?<!\w)" + re.escape(t.casefold()) + r"(?!\w)", low)]


def coverage(summary: str, parts: list[dict]) -> dict:
    """{"covered", "parts", "share", "per_part": [{"title", "hits"}]} over the parts that have terms."""
    rows = [{"title": p.get("title", "?"), "hits": part_covered(summary, list(p.get("terms") or []))}
            for p in parts if p.get("terms")]
    covered = sum(bool(r["hits"]) for r in rows)
    return {"covered": covered, "parts": len(rows), "share": round(covered / len(rows), 3) if rows else None,
            "per_part": rows}


def degeneration(summary: str) -> dict:
    """{"max_3gram": the most repeats of one word 3-gram, "distinct_2": distinct bigram share, "worst": it}."""
    w = words(summary)
    tri = Counter(tuple(w[i:i + 3]) for i in range(len(w) - 2))
    bi = [tuple(w[i:i + 2]) for i in range(len(w) - 1)]
    worst, n = tri.most_common(1)[0] if tri else ((), 0)
    return {"max_3gram": n, "worst_3gram": " ".join(worst) if n > 1 else "",
            "distinct_2": round(len(set(bi)) / len(bi), 3) if bi else 1.0}


def unsupported(summary: str, document: str) -> dict:
    """Numbers and capitalised words of `summary` that `document` does not contain."""
    doc_numbers = set(_NUMBER.findall(document))
    doc_words = set(words(document))
    numbers = sorted({n for n in _NUMBER.findall(summary) if n not in doc_numbers})
    names = sorted({c for c in _CAPITAL.findall(summary)
                    if not all(p in doc_words for p in words(c))})
    return {"numbers": numbers, "names": names, "count": len(numbers) + len(names)}


def measure(summary: str, document: str, parts: list[dict]) -> dict:
    return {"words": len(words(summary)), "coverage": coverage(summary, parts), "degeneration": degeneration(summary),
            "unsupported": unsupported(summary, document)}
