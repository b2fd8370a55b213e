"""Shared pieces of the document layer: :class:`Passage`, the :class:`Source` base class and text clean-up helpers."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import IO, Iterator

#: Bytes read per block from files and pipes (text is streamed in blocks of this size).
BLOCK_BYTES = 64 * 1024
#: Longest passage (in characters) the readers produce; longer pages/chapters/sections are split.
PASSAGE_CHARS = 64 * 1024

_LIGATURES = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
    }
)
# Control characters other than \t and \n (and \r, handled separately) are noise in extracted text.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
# Horizontal whitespace: spaces, tabs, NBSP and the other Unicode space separators.
_HSPACE = re.compile(r"[ \t\xa0\u1680\u2000-\u200a\u202f\u205f\u3000]+")
_MANY_NEWLINES = re.compile(r"\n{3,}")
# A letter, a hyphen (or soft hyphen / U+2010) at the very end of a line, then the next line's first letter.
_LINE_END_HYPHEN = re.compile(r"([^\W\d_])([-\u00ad\u2010])\n[ \t]*(?=[^\W\d_])")
# In plain text, only a typesetter's hyphenation mark ends a line inside a word: U+2010, which groff writes where
# it breaks a word (`man tar | col -b`: "decompres\u2010" / "        sion."), or a soft hyphen. The word's second
# part (up to the next space) and the rest of its line.
_BROKEN_WORD = re.compile(r"([^\W\d_])[\u00ad\u2010]\n([ \t]*)([^\W\d_]\S*)([^\n]*)")


@dataclass
class Passage:
    """A piece of a document with a human-readable provenance label.

    ``text`` is a page, a chapter (section) or a text block of up to ~64 KB; ``where`` says where it came
    from: ``"p. 12 · Chapter 3"`` (PDF), ``"ch. 3 · The Title"`` (EPUB), ``"§ Heading"`` or ``""`` (HTML),
    ``"line 120"`` (text and stdin).
    """

    text: str
    where: str
    at: float | None = field(default=None, compare=False)   # share of the source before this passage (progress)
    share: float = field(default=0.0, compare=False)        # share of the source this passage is


def display_name(path: str) -> str:
    """The name used in messages: ``stdin`` for ``-``, else the path as given."""
    return "stdin" if path == "-" else path


def repair_ligatures(text: str) -> str:
    """Replace typographic ligature characters (ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ) by their plain letters."""
    return text.translate(_LIGATURES)


def _join_hyphen(m: re.Match[str]) -> str:
    nxt = m.string[m.end()]
    if m.group(2) == "\u00ad" or nxt.islower():
        return m.group(1)
    return m.group(0)


def repair_hyphenation(text: str) -> str:
    """Undo line-end hyphenation: ``"infor-\\nmation"`` -> ``"information"``.

    Only when the hyphen ends a line, follows a letter and the next line starts with a lowercase letter
    (a soft hyphen joins regardless of case). The rest of the next line is joined onto the current one.
    """
    return _LINE_END_HYPHEN.sub(_join_hyphen, text)


def _rejoin(m: re.Match[str]) -> str:
    return m.group(1) + m.group(3) + "\n" + m.group(2) + m.group(4).lstrip()


def rejoin_broken_words(text: str) -> str:
    """Undo a typesetter's hyphenation in plain text, keeping every line: ``"decompres\u2010\\n    sion. It"`` ->
    ``"decompression.\\n    It"`` (a man page rendered by groff breaks words with U+2010, which no word has at a
    line's end; an ASCII "-" there may be a compound's own and is kept). The lines stay as many as they were, so a
    line number counted in the text is the file's (a part that was its line's only word leaves it blank: groff
    breaks a word so only at a paragraph's end)."""
    for _ in range(8):  # a match takes its part's whole line: a break at that line's end waits for the next pass
        text, n = _BROKEN_WORD.subn(_rejoin, text)
        if not n:
            break
    return text


def normalize_whitespace(text: str) -> str:
    """Collapse runs of spaces/tabs, strip every line, keep single line breaks and at most one blank line."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n").replace("\v", "\n")
    text = _CONTROL.sub("", text)
    lines = [_HSPACE.sub(" ", line).strip() for line in text.split("\n")]
    return _MANY_NEWLINES.sub("\n\n", "\n".join(lines)).strip()


def clean_extracted_text(text: str) -> str:
    """Clean text extracted from a laid-out page (PDF): ligatures, whitespace, line-end hyphenation."""
    text = normalize_whitespace(repair_ligatures(text))
    text = repair_hyphenation(text)
    return text.replace("\u00ad", "")


def clean_plain_text(text: str) -> str:
    """Light clean-up for plain text: ligatures, ANSI colour codes, stray control characters and a typesetter's
    hyphenation (keeps the layout and the line count)."""
    text = _ANSI.sub("", repair_ligatures(text))
    return rejoin_broken_words(_CONTROL.sub("", text.replace("\f", "\n").replace("\v", "\n")))


def _strip_lines(text: str) -> str:
    """`text` without its leading blank lines and trailing whitespace; the first line keeps its indentation (an
    indented line of code stays one: html.Block.as_text)."""
    text = text.rstrip()
    lead = len(text) - len(text.lstrip())
    return text[text.rfind("\n", 0, lead) + 1:]


def split_text(text: str, limit: int = PASSAGE_CHARS) -> list[str]:
    """Split ``text`` into pieces of at most ``limit`` characters, at paragraph, line or word boundaries; a piece
    that starts a line keeps its indentation."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = text.rfind("\n\n", 0, limit)
        if cut < limit // 2:
            cut = text.rfind("\n", 0, limit)
        at_line = cut >= limit // 2
        if not at_line:
            cut = max(text.rfind(" ", 0, limit), text.rfind("\t", 0, limit))
        if cut <= 0:
            cut = limit
        head, text = _strip_lines(text[:cut]), text[cut:]
        text = text if at_line else text.lstrip(" \t")
        if head.strip():
            pieces.append(head)
    text = _strip_lines(text)
    if text.strip():
        pieces.append(text)
    return pieces


def short_reason(exc: BaseException, limit: int = 120) -> str:
    """A one-line, bounded description of an exception from a third-party parser."""
    msg = " ".join(str(exc).split()) or type(exc).__name__
    return msg if len(msg) <= limit else msg[: limit - 1] + "…"


def hash_file(fileobj: IO[bytes]) -> str:
    """sha256 hex digest of a seekable binary file, read in blocks (the position is restored)."""
    pos = fileobj.tell()
    fileobj.seek(0)
    h = hashlib.sha256()
    while block := fileobj.read(BLOCK_BYTES):
        h.update(block)
    fileobj.seek(pos)
    return h.hexdigest()


class Source:
    """An opened document. Iterate :meth:`passages` once; ``units`` and ``warnings`` fill in as it runs.

    Attributes:
        path: the path as given (``"-"`` for stdin).
        format: ``"pdf"``, ``"epub"``, ``"html"`` or ``"text"``.
        size_bytes: size of the raw input; ``None`` for a stream until it has been read completely.
        units: ``{"pages": n}`` (pdf), ``{"chapters": n}`` (epub), ``{}`` otherwise.
        warnings: problems that did not stop reading, without the source name (the caller prefixes it),
            e.g. ``"pages 3, 7 have no text (scanned?)"``.
    """

    format: str = "text"

    def __init__(self, path: str, size_bytes: int | None) -> None:
        self.path = path
        self.size_bytes = size_bytes
        self.units: dict = {}
        self.warnings: list[str] = []
        self._hash: str | None = None
        self._hash_file: str | None = None  # a regular file the hash can be computed from on demand
        self._started = False

    @property
    def name(self) -> str:
        """The name used in messages (``stdin`` for ``-``)."""
        return display_name(self.path)

    def passages(self) -> Iterator[Passage]:
        """Yield the document's passages in reading order, lazily. May be called once."""
        if self._started:
            raise RuntimeError(f"passages() of {self.name} was already called")
        self._started = True
        return self._passages()

    def _passages(self) -> Iterator[Passage]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def content_hash(self) -> str | None:
        """sha256 hex digest of the raw bytes (for stdin: once :meth:`passages` has been fully consumed)."""
        if self._hash is None and self._hash_file is not None:
            with open(self._hash_file, "rb") as f:
                self._hash = hash_file(f)
        return self._hash

    def close(self) -> None:
        """Release open files (also done when :meth:`passages` finishes)."""

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.path!r} format={self.format} size={self.size_bytes}>"
