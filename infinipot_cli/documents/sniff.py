"""Format detection: magic bytes first, then the file extension, otherwise plain text."""

from __future__ import annotations

import codecs
import os
import re

FORMATS = ("pdf", "epub", "html", "text")
_ALIASES = {"txt": "text", "plain": "text", "md": "text", "markdown": "text", "htm": "html", "xhtml": "html"}

EXTENSIONS = {
    ".pdf": "pdf",
    ".epub": "epub",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".xht": "html",
    ".shtml": "html",
    **{
        ext: "text"
        for ext in (
            ".txt", ".text", ".md", ".markdown", ".rst", ".log", ".csv", ".tsv", ".json", ".jsonl", ".yaml",
            ".yml", ".toml", ".ini", ".cfg", ".tex", ".srt", ".vtt", ".org", ".adoc", ".asciidoc", ".py",
        )
    },
}

_HTML_START = re.compile(rb"<(?:!doctype\s+html|html|head|body)[\s>/]", re.IGNORECASE)
_HTML_ANYWHERE = re.compile(rb"<(?:html|body)[\s>/]", re.IGNORECASE)


def normalize_format(fmt: str) -> str:
    """Map a user-given format name (``auto``, ``pdf``, ``txt``, ``htm``…) to ``auto`` or one of :data:`FORMATS`."""
    f = (fmt or "auto").strip().lower().lstrip(".")
    f = _ALIASES.get(f, f)
    if f != "auto" and f not in FORMATS:
        from infinipot_cli.errors import InputError

        raise InputError(f"unknown document format {fmt!r} (use auto, pdf, epub, html or text)")
    return f


def _text_head(head: bytes) -> bytes:
    """The first KB of ``head`` as ASCII-compatible bytes, BOM and leading whitespace removed."""
    for bom, enc in ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"),
                     (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")):
        if head.startswith(bom):
            chunk = head[len(bom): len(bom) + 4096]
            chunk = chunk[: len(chunk) - len(chunk) % (4 if "32" in enc else 2)]
            return chunk.decode(enc, "replace").encode("ascii", "replace")[:1024].lstrip()
    if head.startswith(codecs.BOM_UTF8):
        head = head[3:]
    return head[:1024].lstrip()


def format_from_magic(head: bytes) -> str | None:
    """Recognise a format from the first bytes of the input, or ``None``.

    ``%PDF-`` at the start (or after a binary prefix within the first KB) -> pdf; a zip whose first entry is ``mimetype``
    with ``application/epub+zip`` -> epub; markup starting with ``<!doctype html``, ``<html``, ``<head``,
    ``<body``, or markup (``<?xml``, a comment…) with ``<html``/``<body`` in the first KB -> html.
    """
    if head.lstrip().startswith(b"%PDF-"):
        return "pdf"
    at = head.find(b"%PDF-", 0, 1024)
    if at > 0 and b"\x00" in head[:at]:  # a binary prefix (e.g. a MacBinary header) before the PDF header
        return "pdf"
    if head.startswith(b"PK\x03\x04") and head[30:38] == b"mimetype" and b"application/epub+zip" in head[38:100]:
        return "epub"
    text = _text_head(head)
    if _HTML_START.match(text):
        return "html"
    if text.startswith(b"<") and _HTML_ANYWHERE.search(text):
        return "html"
    return None


def format_from_extension(path: str) -> str | None:
    """Format implied by the file name's extension, or ``None`` when unknown."""
    return EXTENSIONS.get(os.path.splitext(path)[1].lower())


def sniff_format(head: bytes, path: str = "") -> str:
    """Detect the format: magic bytes, then extension, else ``text``."""
    return format_from_magic(head) or format_from_extension(path) or "text"


def safetensors_kind(head: bytes) -> str | None:
    """"pot" for an infinipot pot file, "safetensors" for another safetensors file (model weights), else None:
    8 bytes giving the JSON header's length, then the header ({"__metadata__": {"infinipot": ...}, ...})."""
    if len(head) < 10 or head[8:9] != b"{":
        return None
    n = int.from_bytes(head[:8], "little")
    if not 2 <= n <= 100 * 1024 * 1024:
        return None
    body = head[8:8 + min(n, 4096)]
    if body.startswith(b'{"__metadata__":{"infinipot"'):
        return "pot"
    return "safetensors" if b'"dtype"' in body or b'"__metadata__"' in body else None


def not_a_document(head: bytes, name: str) -> str | None:
    """Why `head` is no document when it is a pot or weights file given as one (the message to show), else None."""
    kind = safetensors_kind(head)
    if kind == "pot":
        how = "save it to a file and load that with --load-pot FILE" if name == "stdin" else f"load it with --load-pot {name}"
        return f"{name} is an infinipot pot file, not a document: {how}"
    if kind == "safetensors":
        return f"{name} is a safetensors file (model weights?), not a document"
    return None
