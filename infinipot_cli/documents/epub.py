"""EPUB books (ebooklib): chapters in spine order, titled from the navigation (nav.xhtml or NCX); the archive is
checked against ziplimits.py's limits before it is unpacked."""

from __future__ import annotations

import io
import posixpath
import re
import warnings
import zipfile
from typing import IO, Callable, Iterator
from urllib.parse import unquote

from ebooklib import epub

from infinipot_cli.errors import InputError
from infinipot_cli.documents.where import Where

from .boilerplate import strip_furniture
from .base import Passage, Source, display_name, short_reason, split_text
from .html import blocks_text, check_size, decode_html, html_to_blocks, parse_html, short_title
from .text import looks_binary
from .ziplimits import check_archive, unpacking

DOCUMENT_TYPES = frozenset(("application/xhtml+xml", "text/html", "application/html"))


def _load(fileobj: IO[bytes] | str) -> tuple[epub.EpubBook, bool]:
    """ebooklib, quietly; a broken nav.xhtml can still leave a usable NCX, and vice versa."""
    last: Exception | None = None
    for ignore_ncx in (True, False):
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
        return book, not has_nav or not ignore_ncx
    assert last is not None
    raise last


_ROOTFILE = re.compile(rb"""<(?:\w+:)?rootfile\b[^>]*?full-path\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_ITEM = re.compile(rb"""<(?:\w+:)?item\b[^>]*>""", re.IGNORECASE)
_ITEMREF = re.compile(rb"""<(?:\w+:)?itemref\b[^>]*>""", re.IGNORECASE)
_ATTR = {name: re.compile(rb"\b" + name.encode() + rb"""\s*=\s*["']([^"']*)["']""") for name in ("id", "href", "idref")}


def _attr(tag: bytes, name: str) -> str | None:
    m = _ATTR[name].search(tag)
    return m.group(1).decode("utf-8", "replace") if m else None


def _repaired(fileobj: IO[bytes] | str, name: str) -> io.BytesIO:
    """The EPUB with its package file (OPF) repaired for ebooklib, or an InputError saying what is missing.

    Manifest items whose href has a '#fragment' (one file listed once per section, e.g. Debian's live-manual:
    "about-manual.xhtml#o8") or names a file absent from the archive are dropped, with the spine entries that
    point at them; the file itself is read through its plain entry.
    """
    try:
        if not isinstance(fileobj, str):
            fileobj.seek(0)
        zf = zipfile.ZipFile(fileobj)
        names = set(zf.namelist())
        if "META-INF/container.xml" not in names:
            raise InputError(f"{name} is not a readable EPUB (no META-INF/container.xml)")
        m = _ROOTFILE.search(zf.read("META-INF/container.xml"))
        if not m:
            raise InputError(f"{name} is not a readable EPUB (its container.xml names no package file)")
        opf_path = unquote(m.group(1).decode("utf-8", "replace"))
        if opf_path not in names:
            raise InputError(f"{name} is not a readable EPUB (its package file {opf_path} is missing)")
        opf = zf.read(opf_path)
        if not _ITEMREF.search(opf):
            raise InputError(f"{name} is not a readable EPUB (no reading order: its package file has no spine)")
        base = posixpath.dirname(opf_path)
        dropped: set[str] = set()

        def fix_item(mt: re.Match) -> bytes:
            tag = mt.group(0)
            href = _attr(tag, "href") or ""
            path = posixpath.normpath(posixpath.join(base, unquote(href.split("#", 1)[0]))) if href else ""
            if "#" in href or path not in names:
                dropped.add(_attr(tag, "id") or "")
                return b""
            return tag

        def fix_ref(mt: re.Match) -> bytes:
            return b"" if (_attr(mt.group(0), "idref") or "") in dropped else mt.group(0)

        opf = _ITEMREF.sub(fix_ref, _ITEM.sub(fix_item, opf))
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as new:
            for info in zf.infolist():
                new.writestr(info, opf if info.filename == opf_path else zf.read(info.filename))
        out.seek(0)
        return out
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged zip: say so in one line
        raise InputError(f"{name} is not a readable EPUB ({_reason(e)})") from None


def _reason(e: Exception) -> str:
    reason = short_reason(e)
    if (isinstance(e, epub.EpubException) and "zip" in reason.lower()) or "zip" in type(e).__name__.lower():
        return "not a zip archive"
    if isinstance(e, KeyError):
        return f"missing file in the archive: {reason}"
    if isinstance(e, (TypeError, AttributeError)):  # ebooklib on a package file without the parts it expects
        return "its package file (OPF) lacks a manifest or a spine"
    return reason


def _read_book(fileobj: IO[bytes] | str, name: str) -> tuple[epub.EpubBook, bool]:
    """Load the book quietly; returns it and whether the TOC came from the NCX (hrefs relative to the NCX).

    A book ebooklib refuses is repaired once (_repaired: manifest links with a '#fragment' or to missing files)
    and read again; what cannot be repaired is one clear InputError.
    """
    try:
        return _load(fileobj)
    except Exception as e:  # noqa: BLE001
        first = e
    fixed = _repaired(fileobj, name)
    try:
        return _load(fixed)
    except Exception:  # noqa: BLE001
        raise InputError(f"{name} is not a readable EPUB ({_reason(first)})") from None


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
                 content_hash: str | None = None, notice: Callable[[str], None] | None = None) -> None:
        super().__init__(path, size_bytes)
        self._hash_file = hash_file
        self._hash = content_hash
        name = display_name(path)
        try:
            expands_to = check_archive(fileobj, name)  # a zip bomb is refused before anything is unpacked
            with unpacking(fileobj, name, expands_to, size_bytes, notice) as f:
                book, from_ncx = _read_book(f, name)
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
        self.units = {"chapters": 0}
        count = {"unreadable": 0}
        for (k, where), text, _ in strip_furniture(self._chapter_texts(chapters, count), edge=8):
            pieces = split_text(text)
            for j, piece in enumerate(pieces):
                yield Passage(piece, where, (k + j / len(pieces)) / len(chapters), 1 / (len(chapters) * len(pieces)))
        unreadable, number = count["unreadable"], self.units["chapters"]
        if unreadable:
            self.warnings.append(f"{unreadable} chapter{'s' if unreadable > 1 else ''} could not be read (encrypted/DRM?)")
        if not number:
            hint = " (DRM-protected?)" if unreadable else ""
            raise InputError(f"{self.name}: no readable text in this EPUB{hint}")

    def _chapter_texts(self, chapters, count: dict) -> Iterator[tuple[tuple[int, str], str]]:
        """((spine index, label), text) per readable chapter; navigation blocks and footers that repeat from
        chapter to chapter are stripped afterwards (strip_furniture)."""
        number = 0
        for k, (item, title) in enumerate(chapters):
            content = item.content or b""
            if isinstance(content, str):
                content = content.encode("utf-8")
            if looks_binary(content[:4096]):
                count["unreadable"] += 1
                continue
            what = f"{self.name}: {item.file_name}"
            check_size(content, what)  # a chapter is parsed whole: bounded as a web page is
            try:
                soup = parse_html(decode_html(content), what)
                blocks = html_to_blocks(soup, web=False)
            except InputError:
                raise
            except Exception:
                count["unreadable"] += 1
                continue
            if not blocks:
                continue
            if not title:
                # (not <title>: many books repeat the book's title there in every chapter)
                title = short_title(next((b.text for b in blocks if b.heading), ""))
            number += 1
            self.units["chapters"] = number
            where = Where(chapter=number, section=title).label()
            yield (k, where), blocks_text(blocks)
