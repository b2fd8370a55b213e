"""PDF documents (pypdf): one passage per page, labelled with the page label and the outline title."""

from __future__ import annotations

import contextlib
import logging
import re
import unicodedata
import warnings
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


def _page_titles(reader: PdfReader, n_pages: int) -> list[str]:
    """For every page, the title of the outline (bookmark) entry that covers it, or ``""``.

    A page where entries start gets the shallowest one (the chapter rather than its first section); later
    pages get the entry most recently started in document order.
    """
    starts: dict[int, list[tuple[int, int, str]]] = {}
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
                title = short_title(str(item.title or ""))
            except Exception:
                continue
            if page is not None and 0 <= page < n_pages and title:
                starts.setdefault(page, []).append((depth, order, title))
                order += 1
    titles: list[str] = []
    current = ""
    for p in range(n_pages):
        if p in starts:
            here = starts[p]
            titles.append(min(here)[2])
            current = max(here, key=lambda t: t[1])[2]
        else:
            titles.append(current)
    return titles


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
                    self._titles = _page_titles(reader, n_pages)
                except Exception:
                    self._titles = [""] * n_pages
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
                where = Where(page=label, section=self._titles[i]).label()
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
                yield (i, where), text

        try:
            # running headers / footers / page numbers / dot leaders out (documents/boilerplate.py)
            for (i, where), text, _ in strip_furniture(pages(), edge=3):
                pieces = split_text(text)
                for j, piece in enumerate(pieces):
                    yielded = True
                    yield Passage(piece, where, (i + j / len(pieces)) / n, 1 / (n * len(pieces)))
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
