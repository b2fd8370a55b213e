"""EPUB books (ebooklib): chapters in spine order, titled from the navigation (nav.xhtml or NCX)."""

from __future__ import annotations

import posixpath
import warnings
from typing import IO, Iterator
from urllib.parse import unquote

from ebooklib import epub

from infinipot_cli.errors import InputError

from .base import Passage, Source, display_name, short_reason, split_text
from .html import decode_html, html_to_blocks, parse_html, short_title
from .text import looks_binary

DOCUMENT_TYPES = frozenset(("application/xhtml+xml", "text/html", "application/html"))


def _read_book(fileobj: IO[bytes] | str, name: str) -> tuple[epub.EpubBook, bool]:
    """Load the book quietly; returns it and whether the TOC came from the NCX (hrefs relative to the NCX)."""
    last: Exception | None = None
    for ignore_ncx in (True, False):  # a broken nav.xhtml can still leave a usable NCX, and vice versa
        try:
            if not isinstance(fileobj, str):
                fileobj.seek(0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                book = epub.read_epub(fileobj, {"ignore_ncx": ignore_ncx})
        except Exception as e:  # ebooklib/zipfile/lxml raise many types; none may escape as a traceback
            last = e
            continue
        has_nav = any(isinstance(i, epub.EpubNav) for i in book.get_items())
        from_ncx = not has_nav or not ignore_ncx
        return book, from_ncx
    assert last is not None
    reason = short_reason(last)
    if (isinstance(last, epub.EpubException) and "zip" in reason.lower()) or "zip" in type(last).__name__.lower():
        reason = "not a zip archive"
    elif isinstance(last, KeyError):
        reason = f"missing file in the archive: {reason}"
    raise InputError(f"{name} is not a readable EPUB ({reason})")


def _toc_titles(book: epub.EpubBook, from_ncx: bool) -> dict[str, str]:
    """Map each document path (relative to the OPF, no fragment) to its first title in the table of contents."""
    base = ""
    if from_ncx:
        ncx = next((i for i in book.get_items() if isinstance(i, epub.EpubNcx)), None)
        base = posixpath.dirname(ncx.file_name) if ncx is not None else ""
    titles: dict[str, str] = {}
    stack: list = [list(book.toc or [])]
    while stack:
        entries = stack.pop()
        for pos, entry in enumerate(entries):
            if isinstance(entry, (tuple, list)):
                # (Section, children): the section itself, then its children, then the rest of this level
                stack.append(entries[pos + 1:])
                stack.append(list(entry[1]) if len(entry) > 1 else [])
                stack.append([entry[0]])
                break
            href = getattr(entry, "href", None) or getattr(entry, "file_name", None)
            title = short_title(str(getattr(entry, "title", "") or ""))
            if not href or not title:
                continue
            path = unquote(str(href).split("#", 1)[0])
            if from_ncx:
                path = posixpath.join(base, path)
            titles.setdefault(posixpath.normpath(path), title)
    return titles


class EpubSource(Source):
    """An EPUB book: linear spine documents in reading order, each converted to text and titled."""

    format = "epub"

    def __init__(self, path: str, fileobj: IO[bytes] | str, size_bytes: int | None, *, hash_file: str | None = None,
                 content_hash: str | None = None) -> None:
        super().__init__(path, size_bytes)
        self._hash_file = hash_file
        self._hash = content_hash
        name = display_name(path)
        try:
            book, from_ncx = _read_book(fileobj, name)
        finally:
            if not isinstance(fileobj, str):
                fileobj.close()
        titles = _toc_titles(book, from_ncx)
        by_base: dict[str, str] = {}
        for key, title in titles.items():
            by_base.setdefault(posixpath.basename(key), title)
        self._chapters: list[tuple[epub.EpubItem, str]] = []
        for entry in book.spine:
            idref, linear = (entry[0], entry[1] if len(entry) > 1 else "yes") if isinstance(entry, tuple) else (entry, "yes")
            if str(linear).strip().lower() == "no":
                continue
            item = book.get_item_with_id(idref)
            if item is None or isinstance(item, epub.EpubNav) or item.media_type not in DOCUMENT_TYPES:
                continue
            key = posixpath.normpath(unquote(item.file_name))
            self._chapters.append((item, titles.get(key) or by_base.get(posixpath.basename(key), "")))
        if not self._chapters:
            raise InputError(f"{name} is not a readable EPUB (no chapters in its reading order)")

    def _passages(self) -> Iterator[Passage]:
        chapters, self._chapters = self._chapters, []
        number = 0
        unreadable = 0
        self.units = {"chapters": 0}
        for item, title in chapters:
            content = item.content or b""
            if isinstance(content, str):
                content = content.encode("utf-8")
            if looks_binary(content[:4096]):
                unreadable += 1
                continue
            try:
                soup = parse_html(decode_html(content))
                blocks = html_to_blocks(soup, web=False)
            except Exception:
                unreadable += 1
                continue
            if not blocks:
                continue
            if not title:
                # (not <title>: many books repeat the book's title there in every chapter)
                title = short_title(next((b.text for b in blocks if b.heading), ""))
            number += 1
            self.units["chapters"] = number
            where = f"ch. {number}" + (f" · {title}" if title else "")
            for piece in split_text("\n".join(b.text for b in blocks)):
                yield Passage(piece, where)
        if unreadable:
            self.warnings.append(f"{unreadable} chapter{'s' if unreadable > 1 else ''} could not be read (encrypted/DRM?)")
        if not number:
            hint = " (DRM-protected?)" if unreadable else ""
            raise InputError(f"{self.name}: no readable text in this EPUB{hint}")
