"""Document reading: PDF, EPUB, HTML and plain text (files or stdin) as a lazy stream of :class:`Passage`.

Example::

    src = open_source("sample_docs/lighthouse.txt")
    for passage in src.passages():
        print(passage.where, len(passage.text))

``open_source`` sniffs the format (magic bytes, then extension, else text), fails early with
:class:`~infinipot_cli.errors.InputError` on unreadable input, and every source streams its passages with
a provenance label (``"p. 12 · Chapter 3"``, ``"ch. 3 · Title"``, ``"§ Heading"``, ``"line 120"``).
"""

from .base import (
    BLOCK_BYTES,
    PASSAGE_CHARS,
    Passage,
    Source,
    clean_extracted_text,
    normalize_whitespace,
    repair_hyphenation,
    repair_ligatures,
)
from .epub import EpubSource
from .html import HtmlSource, html_to_blocks
from .opener import open_source
from .pdf import PdfSource
from .sniff import FORMATS, format_from_extension, format_from_magic, sniff_format
from .text import TextSource, looks_binary

__all__ = [
    "BLOCK_BYTES",
    "FORMATS",
    "PASSAGE_CHARS",
    "EpubSource",
    "HtmlSource",
    "Passage",
    "PdfSource",
    "Source",
    "TextSource",
    "clean_extracted_text",
    "format_from_extension",
    "format_from_magic",
    "html_to_blocks",
    "looks_binary",
    "normalize_whitespace",
    "open_source",
    "repair_hyphenation",
    "repair_ligatures",
    "sniff_format",
]
