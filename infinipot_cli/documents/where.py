"""Location labels: where a piece of a document came from. The readers (documents/*.py, reader.py) write them
into the engine's provenance; evidence, key points and the outline read them back. This module is the one
place that writes and parses them, so the two sides cannot drift apart.

    "p. 12", "p. iv · 3 Utilities"   PDF: the page's printed label, then the outline title of the page
    "ch. 3", "ch. 3 · The Title"     EPUB: the chapter's number in reading order, then its title
    "§ Basic usage", ""              HTML: the section's heading (none before the first heading)
    "line 120"                       text and stdin: the first line of the piece
    "a.pdf · p. 3 · Usage"           several sources: the source's name first (reader.py)

Parts are joined by SEP; a title may itself contain SEP, so everything after the location is the title.
It lives outside documents/ so that reading a label never imports the readers (pypdf, ebooklib, bs4).

    Where.parse("a.pdf · p. 3 · Usage") == Where(source="a.pdf", page="3", section="Usage")
    Where(chapter=3, section="Storm").label() == "ch. 3 · Storm"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SEP = " · "
# one part of a label that says where: kind -> its form (the value is group 1)
_FORMS = {"page": re.compile(r"p\. (\S+)"), "chapter": re.compile(r"ch\. (\d+)"), "line": re.compile(r"line (\d+)")}


def split(label: str) -> list[str]:
    """A label's parts, stripped, empty ones left out."""
    return [p for p in (x.strip() for x in (label or "").split(SEP)) if p]


def join(*parts: str) -> str:
    """Parts joined into a label, empty ones left out (join("a.txt", "line 4") == "a.txt · line 4")."""
    return SEP.join(p for p in parts if p)


def read_part(part: str) -> tuple[str, str | int] | None:
    """("page", "iv") | ("chapter", 3) | ("line", 120) when `part` is a whole location part, else None. A
    page keeps its printed label (a string: "iv", "12"); chapters and lines are numbers."""
    for kind, rx in _FORMS.items():
        m = rx.fullmatch(part)
        if m:
            return kind, (m.group(1) if kind == "page" else int(m.group(1)))
    return None


def kind_of(part: str) -> str | None:
    """"page", "chapter" or "line" when `part` is a location part, else None."""
    found = read_part(part)
    return found[0] if found else None


def without(label: str, *kinds: str) -> str:
    """The label without its parts of these kinds: without("a.txt · line 40", "line") == "a.txt"."""
    return join(*(p for p in split(label) if kind_of(p) not in kinds))


@dataclass(frozen=True)
class Where:
    """One location. At most one of page / chapter / line is set; `section` is the PDF outline title, the EPUB
    chapter title or the HTML heading; `source` is the source's name when a read has several."""

    source: str = ""
    page: str | None = None
    chapter: int | None = None
    line: int | None = None
    section: str = ""

    def kind(self) -> str | None:
        """"page", "chapter" or "line": which location it has, if any."""
        for kind in ("page", "chapter", "line"):
            if getattr(self, kind) is not None:
                return kind
        return None

    def location(self) -> str:
        """The location part alone: "p. 12", "ch. 3", "line 40" or ""."""
        if self.page is not None:
            return f"p. {self.page}"
        if self.chapter is not None:
            return f"ch. {self.chapter}"
        if self.line is not None:
            return f"line {self.line}"
        return ""

    def label(self) -> str:
        """The label: "p. 12 · Title", "ch. 3", "line 40 · OPTIONS", "§ Title", the source's name first."""
        loc = self.location()
        if self.section:
            loc = f"{loc}{SEP}{self.section}" if loc else f"§ {self.section}"
        return join(self.source, loc)

    @classmethod
    def parse(cls, label: str) -> Where:
        """The location a label says. The first location part splits it: the source's name before it, the title
        after it. Without one, an HTML heading ("§ Title") is the section and what comes before it the source;
        a label with neither is a source's name alone (reader.py labels an unlabelled passage so)."""
        parts = split(label)
        for i, part in enumerate(parts):
            found = read_part(part)
            if found:
                kind, value = found
                return cls(source=join(*parts[:i]), section=join(*parts[i + 1:]).removeprefix("§ "),
                           **{kind: value})
        for i, part in enumerate(parts):
            if part.startswith("§ "):
                return cls(source=join(*parts[:i]), section=join(*parts[i:]).removeprefix("§ "))
        return cls(source=join(*parts))
