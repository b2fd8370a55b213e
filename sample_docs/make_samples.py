"""Rebuild the generated sample documents: ``guide.epub`` and ``manual.pdf``.

Usage: ``python sample_docs/make_samples.py [OUTPUT_DIR]`` (default: the folder of this script).

The output is deterministic (fixed timestamps and identifiers), so re-running it gives byte-identical
files. ``lighthouse.txt`` and ``report.html`` are written by hand and not generated. Only pypdf and
ebooklib are needed (both are runtime dependencies of infinipot-cli anyway).
"""

from __future__ import annotations

import datetime
import io
import sys
import zipfile
from pathlib import Path

from ebooklib import epub
from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    NameObject,
    NumberObject,
    TextStringObject,
)

# ---------------------------------------------------------------------------------------------- PDF

# Each page: (outline title or None, lines). "ﬁ" is drawn with the font's real fi-ligature glyph, and the
# "infor-" / "mation" line break is a real line-end hyphenation, so the reader's repairs are exercised.
MANUAL_PAGES: list[tuple[str | None, list[str]]] = [
    (
        None,
        [
            "Tidewater TW-40 Weather Station",
            "",
            "User Manual",
            "",
            "Manual revision 3.2, March 2024",
            "Tidewater Instruments Ltd., Falmouth Quay",
        ],
    ),
    (
        "Chapter 1 Setup",
        [
            "Chapter 1. Setup",
            "",
            "The TW-40 runs on four AA batteries, which last about 18 months.",
            "Mount the outdoor sensor 1.5 metres above the ground, away from walls.",
            "To pair the sensor with the display, hold the SYNC button for 5 seconds.",
            "The ﬁrst time you switch it on, the display shows the ﬁrmware version.",
            "The factory ﬁrmware version is 2.7.1.",
        ],
    ),
    (
        "Chapter 2 Calibration",
        [
            "Chapter 2. Calibration",
            "",
            "The barometer is calibrated at the factory to 1013 hPa.",
            "To recalibrate the rain gauge, pour in exactly 250 ml of water.",
            "Each station has a unique calibration certificate; you can download the calibration infor-",
            "mation from the Tidewater website using the serial number on the back.",
        ],
    ),
    (
        "Chapter 3 Maintenance",
        [
            "Chapter 3. Maintenance",
            "",
            "Clean the rain gauge funnel every 30 days.",
            "Replace the anemometer bearings every 3 years.",
            "The warranty lasts 24 months from the date of purchase.",
            "Support: support@tidewater.example",
        ],
    ),
]
MANUAL_SUBSECTIONS = {3: "3.1 Warranty"}  # a nested bookmark on the last page


def _pdf_string(text: str) -> bytes:
    """Encode a line for a WinAnsi Helvetica with ﬁ/ﬂ mapped to codes 128/129, as a PDF literal string."""
    raw = text.replace("ﬁ", "\x80").replace("ﬂ", "\x81")
    data = b"".join(bytes([ord(c)]) if c in "\x80\x81" else c.encode("cp1252") for c in raw)
    return b"(" + data.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def build_manual_pdf() -> bytes:
    """A 4-page PDF: page labels i, 1, 2, 3 and an outline with one bookmark per chapter."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
            NameObject("/Encoding"): DictionaryObject(
                {
                    NameObject("/Type"): NameObject("/Encoding"),
                    NameObject("/BaseEncoding"): NameObject("/WinAnsiEncoding"),
                    NameObject("/Differences"): ArrayObject([NumberObject(128), NameObject("/fi"), NameObject("/fl")]),
                }
            ),
        }
    )
    font_ref = writer._add_object(font)
    for index, (_, lines) in enumerate(MANUAL_PAGES):
        page = writer.add_blank_page(width=595, height=842)  # A4
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font_ref})}
        )
        size = 20 if index == 0 else 11
        ops = [b"BT", b"/F1 %d Tf" % size, b"%d TL" % (size + 5), b"60 770 Td"]
        for line in lines:
            ops.append(_pdf_string(line) + b" Tj T*" if line else b"T*")
        ops.append(b"ET")
        stream = DecodedStreamObject()
        stream.set_data(b"\n".join(ops))
        page[NameObject("/Contents")] = writer._add_object(stream)
    writer.set_page_label(0, 0, style="/r")
    writer.set_page_label(1, len(MANUAL_PAGES) - 1, style="/D", start=1)
    for index, (title, _) in enumerate(MANUAL_PAGES):
        if title:
            parent = writer.add_outline_item(title=title, page_number=index)
            if index in MANUAL_SUBSECTIONS:
                writer.add_outline_item(title=MANUAL_SUBSECTIONS[index], page_number=index, parent=parent)
    writer.add_metadata({"/Title": TextStringObject("Tidewater TW-40 User Manual")})
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


# --------------------------------------------------------------------------------------------- EPUB

GUIDE_CHAPTERS = [
    (
        "chap1.xhtml",
        "Getting There",
        "<h1>1. Getting There</h1>"
        "<p>The night train <em>Silver Heron</em> leaves Dunmore at 21:40 and reaches Vellmar at 06:55.</p>"
        "<p>A return ticket costs 48 crowns. Bicycles travel free in the last carriage.</p>",
    ),
    (
        "chap2.xhtml",
        "Where to Stay",
        "<h1>2. Where to Stay</h1>"
        "<p>The Copper Kettle Inn has 14 rooms and is run by Ilse Brandt.</p>"
        "<p>A room at the inn costs 65 crowns a night, breakfast included.</p>",
    ),
    (
        "chap3.xhtml",
        "What to Eat",
        "<h1>3. What to Eat</h1>"
        "<p>The valley's signature dish is bramble dumplings, served with sour cream.</p>"
        "<p>The Harvest Fair is held every year on 12 October in the market square.</p>",
    ),
]
GUIDE_APPENDIX = (
    "answers.xhtml",
    "Answer Key",
    "<h1>Answer Key</h1><p>The answer to the riddle on the back cover is OTTERGLASS.</p>",
)
FIXED_TIME = datetime.datetime(2024, 1, 1, 0, 0, 0)


def _stable_zip(data: bytes) -> bytes:
    """Rewrite a zip with fixed timestamps (ebooklib stamps entries with the current time), uncompressed."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            fixed.compress_type = zipfile.ZIP_STORED  # no zlib-version dependence; the files are tiny
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, src.read(info.filename))
    return out.getvalue()


def build_guide_epub() -> bytes:
    """A 3-chapter EPUB 3 (nav.xhtml + NCX) with one non-linear appendix."""
    book = epub.EpubBook()
    book.set_identifier("urn:uuid:5f0c9a52-6a4e-4d55-9b3a-2c1e7d0a4b11")
    book.set_title("A Traveller's Guide to the Vellmar Valley")
    book.set_language("en")
    book.add_author("Marta Lindqvist")
    chapters = []
    for file_name, title, body in GUIDE_CHAPTERS:
        chapter = epub.EpubHtml(title=title, file_name=file_name, lang="en")
        chapter.content = body
        book.add_item(chapter)
        chapters.append(chapter)
    file_name, title, body = GUIDE_APPENDIX
    appendix = epub.EpubHtml(title=title, file_name=file_name, lang="en")
    appendix.content = body
    appendix.is_linear = False
    book.add_item(appendix)
    book.toc = [epub.Link(c.file_name, c.title, c.file_name.split(".")[0]) for c in chapters]
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *chapters, appendix]
    out = io.BytesIO()
    epub.write_epub(out, book, {"mtime": FIXED_TIME, "raise_exceptions": True})
    return _stable_zip(out.getvalue())


def main(argv: list[str]) -> None:
    target = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent
    target.mkdir(parents=True, exist_ok=True)
    for name, data in (("manual.pdf", build_manual_pdf()), ("guide.epub", build_guide_epub())):
        (target / name).write_bytes(data)
        print(f"wrote {target / name} ({len(data)} bytes)")


if __name__ == "__main__":
    main(sys.argv)
