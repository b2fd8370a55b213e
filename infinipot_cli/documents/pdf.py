"""PDF documents (pypdf): one passage per page, labelled with the page label and the outline title.

A section that starts mid-page starts where its heading stands in the page's text, not at the page: the page's
text before the heading keeps the section it continues ("p. 12 · 2.3 Setup"), the rest is labelled with the new
one ("p. 12 · 2.4 Running"), so evidence and `inspect` credit each part of the page to its own section. The
heading is found as a line of the page's text that is the outline entry's title (its words in order, case and
punctuation aside, a section number before them allowed); an entry whose title the page's text does not show
starts with the page, as it did before (the shallowest of those on the page names the page's start).
"""

from __future__ import annotations

import contextlib
import logging
import re
import unicodedata
import warnings
from dataclasses import dataclass
from typing import IO, Iterator

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, FileNotDecryptedError

from infinipot_cli.errors import InputError
from infinipot_cli.documents.where import Where

from .boilerplate import strip_furniture
from .base import Passage, Source, clean_extracted_text, display_name, short_reason, split_text
from .html import short_title

_MAX_LISTED_PAGES = 12
_PASSWORD = "{name} is password-protected; remove the password first (e.g. qpdf --decrypt --password=PASSWORD in.pdf out.pdf)"
_NEEDS_CRYPTOGRAPHY = ("{name} is encrypted with AES, which needs the 'cryptography' package "
                       "(pip install cryptography)")
#: A page is skipped when more than this share of its visible characters is garbage (U+FFFD, private use, controls).
GARBAGE_SHARE = 0.3
# pypdf log messages that mean the file structure had to be repaired (as opposed to harmless quirks).
_DAMAGE = re.compile(r"xref|startxref|EOF|trailer|truncat", re.IGNORECASE)


class _Collect(logging.Handler):
    """Keeps pypdf's log warnings (e.g. a repaired xref table) instead of printing them."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _quiet_pypdf() -> Iterator[_Collect]:
    """Capture pypdf's logging and Python warnings while it parses (nothing reaches the terminal)."""
    logger = logging.getLogger("pypdf")
    handler = _Collect()
    old_propagate = logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield handler
    finally:
        logger.removeHandler(handler)
        logger.propagate = old_propagate


def is_garbage(text: str) -> bool:
    """Whether extracted page text is mostly unreadable: U+FFFD replacement characters, private-use code points or
    control characters (a font without a usable encoding, or damaged content) make up over GARBAGE_SHARE of it."""
    visible = [c for c in text if not c.isspace()]
    if not visible:
        return False
    bad = sum(1 for c in visible if c == "\ufffd" or "\ue000" <= c <= "\uf8ff" or unicodedata.category(c) in ("Cc", "Co", "Cs"))
    return bad > GARBAGE_SHARE * len(visible)


@dataclass(frozen=True)
class _Entry:
    """An outline entry starting on a page: its depth, its place in the outline, its title as found in the text
    (`full`) and as labels show it (`title`, shortened)."""

    depth: int
    order: int
    full: str
    title: str


def _outline_entries(reader: PdfReader, n_pages: int) -> dict[int, list[_Entry]]:
    """{page index: the outline entries that start on it, in outline order}."""
    starts: dict[int, list[_Entry]] = {}
    order = 0
    stack = [(list(reader.outline), 0)]
    while stack:
        items, depth = stack.pop()
        for i, item in enumerate(items):
            if isinstance(item, list):
                stack.append((items[i + 1:], depth))
                stack.append((item, depth + 1))
                break
            try:
                page = reader.get_destination_page_number(item)
                full = " ".join(str(item.title or "").split())
            except Exception:
                continue
            if page is not None and 0 <= page < n_pages and full:
                starts.setdefault(page, []).append(_Entry(depth, order, full, short_title(full)))
                order += 1
    return starts


def _heading_at(text: str, entry: _Entry, start: int) -> int | None:
    """Where in a page's `text` (from `start` on) the line that is `entry`'s heading begins: a line holding the
    title's words in order and nothing else (case, punctuation and line breaks aside; a section number before
    them allowed, "Chapter 2" on the line above too), or None."""
    words = re.findall(r"\w+", entry.full)
    if not words:
        return None
    body = r"[\W_]*".join(re.escape(w) for w in words)
    number = r"(?:[\dIVXivx]+(?:\.\d+)*|[A-Z](?:\.\d+)+)\.?"  # 2, 2.1, IV, A.1
    rx = re.compile(rf"^[ \t]*(?:(?:chapter|part|section|appendix)(?:\s+{number}|\s+[A-Z]\.?)?\s+|{number}[ \t]+)?"
                    + body + r"[\W_]*?[ \t]*$", re.I | re.M)
    m = rx.search(text, start)
    return m.start() if m else None


def _sections(text: str, before: str, entries: list[_Entry]) -> list[tuple[str, str]]:
    """A page's text cut where its outline entries' headings stand: [(title, text)]. `before`: the title in
    effect when the page starts. Without one heading found, the page is one section titled as before the heading
    positions were looked for (the shallowest entry starting on it). A section holding nothing but its heading
    line (a chapter's title right above its first section's) joins the next, as HTML's do
    (html.blocks_to_sections)."""
    if not entries:
        return [(before, text)]
    cuts: list[tuple[int, str]] = []
    at = 0
    for e in entries:
        pos = _heading_at(text, e, at)
        if pos is not None:
            cuts.append((pos, e.title))
            at = pos + 1
    if not cuts:
        return [(min(entries, key=lambda e: (e.depth, e.order)).title, text)]
    bounds = [(0, before)] + cuts + [(len(text), "")]
    out: list[tuple[str, str]] = []
    bare = False  # the last section is a heading line alone
    for k, ((a, title), (b, _)) in enumerate(zip(bounds[:-1], bounds[1:])):
        piece = text[a:b].strip("\n")
        if not piece.strip():
            continue
        if bare:
            out[-1] = (title, out[-1][1] + "\n" + piece)
        else:
            out.append((title, piece))
        bare = k > 0 and "\n" not in out[-1][1].strip()
    return out


def _page_labels(reader: PdfReader, n_pages: int) -> list[str]:
    """Page labels (``/PageLabels``, e.g. ``i``, ``ii``, ``1``…), falling back to 1-based numbers."""
    try:
        labels = [str(x) for x in reader.page_labels]
    except Exception:
        labels = []
    if len(labels) != n_pages or not all(labels):
        labels = [str(i + 1) for i in range(n_pages)]
    return labels


def _list_pages(labels: list[str]) -> str:
    shown = ", ".join(labels[:_MAX_LISTED_PAGES])
    more = len(labels) - _MAX_LISTED_PAGES
    return shown + (f" and {more} more" if more > 0 else "")


class PdfSource(Source):
    """A PDF read page by page. Opening checks encryption and structure so bad files fail early."""

    format = "pdf"

    def __init__(self, path: str, fileobj: IO[bytes], size_bytes: int | None, *, hash_file: str | None = None,
                 content_hash: str | None = None) -> None:
        super().__init__(path, size_bytes)
        self._file: IO[bytes] | None = fileobj
        self._hash_file = hash_file
        self._hash = content_hash
        name = display_name(path)
        try:
            with _quiet_pypdf() as log:
                try:
                    reader = PdfReader(fileobj, strict=False)
                except DependencyError:
                    raise InputError(_NEEDS_CRYPTOGRAPHY.format(name=name)) from None
                if reader.is_encrypted:
                    self._decrypt(reader, name)
                n_pages = len(reader.pages)
                self._labels = _page_labels(reader, n_pages)
                try:
                    self._entries = _outline_entries(reader, n_pages)
                except Exception:
                    self._entries = {}
        except InputError:
            self.close()
            raise
        except Exception as e:  # pypdf raises many types on damaged files; none may escape as a traceback
            self.close()
            raise InputError(f"{name} is not a readable PDF (damaged or truncated?): {short_reason(e)}") from None
        if n_pages == 0:
            self.close()
            raise InputError(f"{name} is not a readable PDF (no pages found; damaged or truncated?)")
        damage = [m for m in log.messages if _DAMAGE.search(m)]
        if damage:
            self.warnings.append(f"the file looks damaged, some text may be missing (pypdf: {short_reason(damage[0], 80)})")
        self._reader = reader
        self.units = {"pages": n_pages}

    @staticmethod
    def _decrypt(reader: PdfReader, name: str) -> None:
        """Open an encrypted PDF with the empty user password (many PDFs are encrypted only to restrict
        printing or copying); one that needs a real password is refused as password-protected."""
        try:
            result = reader.decrypt("")
        except (DependencyError, NotImplementedError):
            raise InputError(_NEEDS_CRYPTOGRAPHY.format(name=name)) from None
        except Exception as e:
            raise InputError(f"{name} is encrypted and could not be decrypted: {short_reason(e)}") from None
        if result == PasswordType.NOT_DECRYPTED:
            raise InputError(_PASSWORD.format(name=name))

    def _passages(self) -> Iterator[Passage]:
        reader = self._reader
        empty: list[str] = []
        broken: list[str] = []
        garbage: list[str] = []
        yielded = False
        n = len(self._labels)

        def pages() -> Iterator[tuple[tuple[int, str], str]]:
            for i, label in enumerate(self._labels):
                try:
                    with _quiet_pypdf():
                        raw = reader.pages[i].extract_text() or ""
                except FileNotDecryptedError:
                    raise InputError(_PASSWORD.format(name=self.name)) from None
                except DependencyError:
                    raise InputError(_NEEDS_CRYPTOGRAPHY.format(name=self.name)) from None
                except Exception:
                    broken.append(label)
                    continue
                text = clean_extracted_text(raw)
                if not text:
                    empty.append(label)
                    continue
                if is_garbage(text):
                    garbage.append(label)
                    continue
                yield (i, label), text

        entries = self._entries
        before: list[str] = []  # the outline title in effect where each page starts (after a page without text too)
        current = ""
        for i in range(n):
            before.append(current)
            current = entries[i][-1].title if i in entries else current
        try:
            # running headers / footers / page numbers / dot leaders out (documents/boilerplate.py)
            for (i, label), text, _ in strip_furniture(pages(), edge=3):
                sections = _sections(text, before[i], entries.get(i, []))
                pieces = [(title, piece) for title, body in sections for piece in split_text(body)]
                total = max(1, sum(len(p) for _, p in pieces))
                done = 0
                for title, piece in pieces:
                    yielded = True
                    yield Passage(piece, Where(page=label, section=title).label(), (i + done / total) / n,
                                  len(piece) / (total * n))
                    done += len(piece)
        finally:
            self.close()
        if broken:
            self.warnings.append(f"page{'s' if len(broken) > 1 else ''} {_list_pages(broken)} could not be read (damaged?)")
        if garbage:
            self.warnings.append(f"page{'s' if len(garbage) > 1 else ''} {_list_pages(garbage)} skipped: "
                                 "the text came out as unreadable characters (a broken font encoding?)")
        if empty:
            if len(empty) == 1:
                self.warnings.append(f"page {empty[0]} has no text (scanned?)")
            else:
                self.warnings.append(f"pages {_list_pages(empty)} have no text (scanned?)")
        if not yielded:
            if garbage and not empty:
                raise InputError(f"{self.name}: every page's text came out as unreadable characters "
                                 "(a broken font encoding?); try OCR, e.g. with ocrmypdf --force-ocr")
            raise InputError(f"{self.name} has no extractable text; is it a scan? (OCR it first, e.g. with ocrmypdf)")

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None
