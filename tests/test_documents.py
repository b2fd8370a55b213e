"""Tests for the document-reading layer (infinipot_cli.documents): formats, provenance, sniffing, errors, streaming."""

from __future__ import annotations

import codecs
import hashlib
import io
import os
import re
import sys
import threading
import tracemalloc
import zipfile

import pytest
from pypdf.errors import DependencyError

from infinipot_cli.documents import (
    BLOCK_BYTES,
    Passage,
    format_from_extension,
    format_from_magic,
    html_to_blocks,
    looks_binary,
    open_source,
    repair_hyphenation,
    repair_ligatures,
    sniff_format,
)
from infinipot_cli.documents.base import clean_extracted_text, split_text
from infinipot_cli.documents.pdf import PdfSource
from infinipot_cli.errors import InputError
from helpers import make_epub, make_pdf

# ------------------------------------------------------------------------------------------ helpers


def read_all(source) -> list[Passage]:
    return list(source.passages())


class GeneratedStream(io.RawIOBase):
    """A raw, non-seekable byte stream produced by a generator; records every read size requested."""

    def __init__(self, chunks):
        self._chunks = iter(chunks)
        self._pending = b""
        self.requests: list[int] = []
        self.hasher = hashlib.sha256()
        self.total = 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        self.requests.append(len(b))
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        n = min(len(b), len(self._pending))
        b[:n] = self._pending[:n]
        self.hasher.update(self._pending[:n])
        self.total += n
        self._pending = self._pending[n:]
        return n


def numbered_lines(n_bytes: int, chunk_lines: int = 2000):
    """Yield byte chunks of lines "line 000001 alpha beta …\\n" until about ``n_bytes`` were produced."""
    produced = 0
    number = 1
    while produced < n_bytes:
        chunk = "".join(f"line {i:07d} alpha beta gamma delta epsilon\n" for i in range(number, number + chunk_lines))
        number += chunk_lines
        data = chunk.encode()
        produced += len(data)
        yield data


# -------------------------------------------------------------------------------------------- text


def test_text_file_passage_hash_and_size(tmp_path):
    p = tmp_path / "notes.txt"
    data = "First line.\nThe keeper's cat was named Biscuit.\n".encode()
    p.write_bytes(data)
    src = open_source(str(p))
    assert (src.format, src.path, src.size_bytes, src.units) == ("text", str(p), len(data), {})
    passages = read_all(src)
    assert passages == [Passage("First line.\nThe keeper's cat was named Biscuit.", "line 1")]
    assert src.content_hash == hashlib.sha256(data).hexdigest()
    assert src.warnings == []


def test_text_content_hash_available_before_reading_a_file(tmp_path):
    p = tmp_path / "a.txt"
    p.write_bytes(b"hello world\n")
    assert open_source(str(p)).content_hash == hashlib.sha256(b"hello world\n").hexdigest()


def test_text_blocks_split_at_line_boundaries_with_line_numbers(tmp_path):
    lines = [f"row {i} lorem ipsum dolor sit amet" for i in range(1, 8001)]  # ~280 KB
    p = tmp_path / "big.log"
    p.write_text("\n".join(lines) + "\n")
    passages = read_all(open_source(str(p)))
    assert len(passages) > 3
    assert all(len(x.text) <= 64 * 1024 for x in passages)
    assert "\n".join(x.text for x in passages) == "\n".join(lines)
    for x in passages:
        n = int(x.where.removeprefix("line "))
        assert x.text.split("\n", 1)[0] == lines[n - 1]


def test_text_without_newlines_is_cut_between_words(tmp_path):
    words = [f"w{i:06d}" for i in range(40000)]  # ~320 KB on one line
    p = tmp_path / "one_line.txt"
    p.write_text(" ".join(words))
    passages = read_all(open_source(str(p)))
    assert len(passages) > 3
    assert [w for x in passages for w in x.text.split()] == words
    assert all(x.where == "line 1" for x in passages)


def test_text_leading_blank_lines_and_crlf(tmp_path):
    p = tmp_path / "crlf.txt"
    p.write_bytes(b"\r\n\r\nalpha\r\nbeta\r\n")
    assert read_all(open_source(str(p))) == [Passage("alpha\nbeta", "line 3")]


def test_utf8_bom_is_stripped_and_utf16_is_decoded(tmp_path):
    p = tmp_path / "bom.txt"
    p.write_bytes(codecs.BOM_UTF8 + "naïve café\n".encode())
    assert read_all(open_source(str(p)))[0].text == "naïve café"
    p16 = tmp_path / "utf16.txt"
    p16.write_bytes("Grüße aus Köln\nzweite Zeile\n".encode("utf-16"))  # with BOM, full of NUL bytes
    src = open_source(str(p16))
    assert src.format == "text"
    assert read_all(src)[0].text == "Grüße aus Köln\nzweite Zeile"


def test_cp1252_fallback_on_first_block(tmp_path):
    p = tmp_path / "legacy.txt"
    p.write_bytes("caf\xe9 \x93quoted\x94\n".encode("latin-1"))
    src = open_source(str(p))
    assert read_all(src)[0].text == "café \u201cquoted\u201d"
    assert any("cp1252" in w for w in src.warnings)


def test_cp1252_fallback_mid_stream_keeps_the_valid_utf8_part():
    head = ("ünïcode line\n" * 20000).encode()  # > one block of valid UTF-8
    tail = b"price: 5\x80 only\n"  # \x80 is the euro sign in cp1252, invalid in UTF-8
    src = open_source("-", stdin=io.BytesIO(head + tail))
    text = "\n".join(x.text for x in read_all(src))
    assert text.startswith("ünïcode line\nünïcode line")
    assert text.endswith("price: 5€ only")
    assert "\ufffd" not in text
    assert any(f"byte {len(head) + 8} " in w for w in src.warnings)


def test_stdin_text_size_and_hash_after_consumption():
    data = b"alpha\nbeta\n"
    src = open_source("-", stdin=io.BytesIO(data))
    assert (src.format, src.path, src.size_bytes, src.content_hash) == ("text", "-", None, None)
    assert read_all(src) == [Passage("alpha\nbeta", "line 1")]
    assert src.size_bytes == len(data)
    assert src.content_hash == hashlib.sha256(data).hexdigest()


def test_passages_may_be_called_once():
    src = open_source("-", stdin=io.BytesIO(b"x\n"))
    read_all(src)
    with pytest.raises(RuntimeError):
        src.passages()


def test_stdin_streams_a_large_input_in_blocks():
    stream = GeneratedStream(numbered_lines(50 * 1024 * 1024))
    src = open_source("-", stdin=stream)
    count = 0
    last = None
    for passage in src.passages():
        count += 1
        last = passage
    assert max(stream.requests) <= BLOCK_BYTES  # never asked for the whole input
    assert src.size_bytes == stream.total >= 50 * 1024 * 1024
    assert src.content_hash == stream.hasher.hexdigest()
    assert count > 700
    n_lines = stream.total // len("line 0000001 alpha beta gamma delta epsilon\n")
    assert last.text.rsplit("\n", 1)[-1].startswith(f"line {n_lines:07d} ")


def test_stdin_streaming_memory_stays_flat():
    stream = GeneratedStream(numbered_lines(8 * 1024 * 1024, chunk_lines=200))
    tracemalloc.start()
    try:
        src = open_source("-", stdin=stream)
        for _ in src.passages():
            pass
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert src.size_bytes >= 8 * 1024 * 1024
    assert peak < 2 * 1024 * 1024, f"peak {peak} bytes for an 8 MB stream"


def test_short_reads_still_give_a_full_first_block():
    class Dribble(GeneratedStream):
        def readinto(self, b):
            return super().readinto(memoryview(b)[:7])  # at most 7 bytes per read

    src = open_source("-", stdin=Dribble([b"hello there, ", b"general kenobi\n"]))
    assert read_all(src) == [Passage("hello there, general kenobi", "line 1")]


# -------------------------------------------------------------------------------------------- html

PAGE = b"""<!doctype html><html><head><title>T</title><style>p{color:red}</style>
<script>var secret = 'TRACKER';</script></head>
<body class="nav-open">
<header><a href="/">Site name</a></header>
<nav><a href="/a">Menu link</a></nav>
<div role="navigation">Skip to content</div>
<div class="cookie-banner">We use cookies</div>
<div id="sidebar-left">Popular posts</div>
<main>
<p>Intro   text
 before any heading.</p>
<h1>Main Title</h1>
<h2>First Part</h2>
<p>Hello <b>big</b> <i>world</i>.<br>New line after br.</p>
<ul><li>one</li><li>two</li></ul>
<pre>keep   this
   indented</pre>
<article><header><h3>Article Heading</h3></header><p>Article body.</p></article>
<p hidden>Hidden text</p>
<table><tr><th>Name</th><th>Count</th></tr><tr><td>Puffin</td><td>412</td></tr></table>
</main>
<footer>Copyright notice</footer>
<noscript>Enable JS</noscript>
</body></html>"""


def test_html_text_sections_and_boilerplate(tmp_path):
    p = tmp_path / "page.html"
    p.write_bytes(PAGE)
    src = open_source(str(p))
    assert src.format == "html" and src.units == {}
    passages = read_all(src)
    text = "\n".join(x.text for x in passages)
    for junk in ("TRACKER", "color:red", "Site name", "Menu link", "Skip to content", "We use cookies",
                 "Popular posts", "Hidden text", "Copyright notice", "Enable JS"):
        assert junk not in text, junk
    assert passages[0] == Passage("Intro text before any heading.", "")
    first = next(x for x in passages if x.where == "§ First Part")
    assert first.text.split("\n")[:6] == ["Main Title", "First Part", "Hello big world.", "New line after br.",
                                           "one", "two"]
    assert "\n    keep   this\n       indented" in first.text  # a <pre> block's layout, indented as code
    article = next(x for x in passages if x.where == "§ Article Heading")
    assert article.text.split("\n")[:2] == ["Article Heading", "Article body."]
    assert "Name: Puffin; Count: 412." in article.text  # a table row with its header's names (test_tables.py)
    assert src.content_hash == hashlib.sha256(PAGE).hexdigest()


def test_html_charset_from_meta_and_cp1252_fallback():
    page = b'<html><head><meta charset="windows-1252"></head><body><p>caf\xe9 \x80</p></body></html>'
    assert read_all(open_source("-", stdin=io.BytesIO(page)))[0].text == "café €"
    no_meta = b"<html><body><p>na\xefve</p></body></html>"
    assert read_all(open_source("-", stdin=io.BytesIO(no_meta)))[0].text == "naïve"
    utf8 = "<html><body><p>Grüße</p></body></html>".encode()
    assert read_all(open_source("-", stdin=io.BytesIO(utf8)))[0].text == "Grüße"


def test_html_converter_for_epub_keeps_asides_and_headers():
    blocks = html_to_blocks("<body><header><h1>Ch 1</h1></header><aside>Box text</aside><p>a <em>b</em></p></body>",
                            web=False)
    assert [(b.text, b.heading) for b in blocks] == [("Ch 1", 1), ("Box text", 0), ("a b", 0)]


def test_html_without_text_is_an_error(tmp_path):
    p = tmp_path / "empty.html"
    p.write_text("<html><head><title>x</title><script>var a=1;</script></head><body><nav>Home</nav></body></html>")
    with pytest.raises(InputError, match="no readable text"):
        open_source(str(p))


def test_deeply_nested_html_does_not_recurse():
    markup = "<div>" * 5000 + "deep text" + "</div>" * 5000
    assert [b.text for b in html_to_blocks(markup)] == ["deep text"]


# --------------------------------------------------------------------------------------------- pdf


def test_pdf_text_labels_and_outline(tmp_path):
    data = make_pdf(
        [["Preface text."], ["Contents page."], ["Alpha chapter starts."], ["Alpha continues."], ["Beta text."]],
        labels=[(0, 1, "/r", 1), (2, 4, "/D", 1)],
        outline=[("Chapter A", 2, None), ("Section A.1", 3, 0), ("Chapter B", 4, None)],
    )
    p = tmp_path / "book.pdf"
    p.write_bytes(data)
    src = open_source(str(p))
    assert src.format == "pdf" and src.units == {"pages": 5} and src.size_bytes == len(data)
    assert [(x.where, x.text) for x in read_all(src)] == [
        ("p. i", "Preface text."),
        ("p. ii", "Contents page."),
        ("p. 1 · Chapter A", "Alpha chapter starts."),
        ("p. 2 · Section A.1", "Alpha continues."),
        ("p. 3 · Chapter B", "Beta text."),
    ]
    assert src.warnings == []
    assert src.content_hash == hashlib.sha256(data).hexdigest()


def test_pdf_without_labels_uses_page_numbers_and_warns_about_empty_pages(tmp_path):
    p = tmp_path / "scan.pdf"
    p.write_bytes(make_pdf([["one"], [], ["three"], []]))
    src = open_source(str(p))
    assert [(x.where, x.text) for x in read_all(src)] == [("p. 1", "one"), ("p. 3", "three")]
    assert src.warnings == ["pages 2, 4 have no text (scanned?)"]


def test_pdf_with_no_text_at_all(tmp_path):
    p = tmp_path / "blank.pdf"
    p.write_bytes(make_pdf([[], []]))
    src = open_source(str(p))
    with pytest.raises(InputError, match="no extractable text; is it a scan"):
        read_all(src)
    assert src.warnings == ["pages 1, 2 have no text (scanned?)"]


@pytest.mark.parametrize("cut", [0.1, 0.5, 0.95])
def test_truncated_pdf(tmp_path, cut):
    data = make_pdf([["Some text here."], ["More text."]])
    p = tmp_path / "broken.pdf"
    p.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(InputError, match=r"broken\.pdf is not a readable PDF") as e:
        read_all(open_source(str(p)))
    assert "\n" not in str(e.value)


def test_repairable_pdf_is_read_with_a_warning(tmp_path):
    data = make_pdf([["Repaired text."]])
    at = data.rindex(b"startxref")
    p = tmp_path / "bad_xref.pdf"
    p.write_bytes(data[:at] + re.sub(rb"startxref\s+\d+", b"startxref\n99", data[at:]))
    src = open_source(str(p))
    assert [x.text for x in read_all(src)] == ["Repaired text."]
    assert len(src.warnings) == 1 and src.warnings[0].startswith("the file looks damaged")


def test_garbage_with_pdf_extension(tmp_path):
    p = tmp_path / "fake.pdf"
    p.write_text("this is not a pdf at all\n")
    with pytest.raises(InputError, match="not a readable PDF"):
        open_source(str(p))


def test_encrypted_pdf_with_password(tmp_path):
    p = tmp_path / "locked.pdf"
    p.write_bytes(make_pdf([["Top secret."]], encrypt={"user_password": "secret"}))
    with pytest.raises(InputError, match=r"locked\.pdf is password-protected"):
        open_source(str(p))


def test_encrypted_pdf_with_empty_user_password_is_read(tmp_path):
    p = tmp_path / "owner_only.pdf"
    p.write_bytes(make_pdf([["Readable anyway."]], encrypt={"user_password": "", "owner_password": "owner"}))
    assert [x.text for x in read_all(open_source(str(p)))] == ["Readable anyway."]


def test_pdf_cipher_needing_cryptography_gives_a_clear_error():
    class FakeReader:
        def decrypt(self, password):
            raise DependencyError("cryptography>=3.1 is required for AES algorithm")

    with pytest.raises(InputError, match="cryptography"):
        PdfSource._decrypt(FakeReader(), "aes.pdf")


def test_man_page_hyphenation_is_undone_line_for_line():
    """`man bzip2 | col -b` breaks words with U+2010 at a line's end; piped on stdin the words are whole again
    and every line keeps its number (an ASCII hyphen there may be a compound's and stays)."""
    page = ("OPTIONS\n"
            "       -k --keep\n"
            "              Keep input files during compression or decompres\u2010\n"
            "              sion.\n"
            "       -s --small\n"
            "              Reduce memory usage, at the expense of the  compres\u2010\n"
            "              sion ratio; the block size used is read from the file\u2010\n"
            "              name header. A well-\n"
            "              known trick.\n")
    text = read_all(open_source("-", stdin=io.BytesIO(page.encode())))[0].text
    lines = text.split("\n")
    assert len(lines) == page.rstrip().count("\n") + 1
    assert lines[2].split()[-2:] == ["or", "decompression."] and not lines[3].strip()
    assert lines[5].split()[-2:] == ["the", "compression"] and lines[6].split()[0] == "ratio;"
    assert lines[6].split()[-1] == "filename" and lines[7].split() == ["header.", "A", "well-"]
    assert "\u2010" not in text


def test_pdf_on_stdin_is_spooled():
    data = make_pdf([["From a pipe."]])
    src = open_source("-", stdin=io.BytesIO(data))
    assert src.format == "pdf" and src.size_bytes == len(data)
    assert read_all(src) == [Passage("From a pipe.", "p. 1")]
    assert src.content_hash == hashlib.sha256(data).hexdigest()


def test_ligature_and_hyphenation_repair():
    assert repair_ligatures("ﬁne ﬂow oﬀ oﬃce baﬄe ﬅop ﬆar") == "fine flow off office baffle stop star"
    assert repair_hyphenation("infor-\nmation") == "information"
    assert repair_hyphenation("the infor-\n  mation age\nnext") == "the information age\nnext"
    assert repair_hyphenation("Smith-\nJones") == "Smith-\nJones"  # next line starts uppercase
    assert repair_hyphenation("pages 2-\n3") == "pages 2-\n3"  # not letters
    assert repair_hyphenation("a list:\n-\nitem") == "a list:\n-\nitem"
    assert repair_hyphenation("infor-\n\nmation") == "infor-\n\nmation"  # paragraph break, not a line end
    assert repair_hyphenation("infor-  \nmation") == "infor-  \nmation"  # raw text: whitespace is cleaned first
    assert clean_extracted_text("The  ﬁrm's infor-  \nmation\n\n\n\nNext\tpara ") == "The firm's information\n\nNext para"


def test_split_text_respects_boundaries():
    text = "\n\n".join("para %d " % i + "word " * 50 for i in range(100))
    pieces = split_text(text, limit=1000)
    assert all(len(x) <= 1000 for x in pieces)
    assert [w for x in pieces for w in x.split()] == text.split()


# -------------------------------------------------------------------------------------------- epub


def test_epub_chapters_titles_and_nonlinear(tmp_path):
    data = make_epub(
        [
            ("c1.xhtml", "<h1>One</h1><p>First chapter text.</p>", "The Beginning"),
            ("c2.xhtml", "<h2>Heading Two</h2><p>Second <b>chapter</b> text.</p>", None),  # not in the TOC
            ("c3.xhtml", "<p>Third chapter, no heading.</p>", None),
        ],
        nonlinear=("notes.xhtml", "<p>NONLINEAR SECRET</p>"),
    )
    p = tmp_path / "book.epub"
    p.write_bytes(data)
    src = open_source(str(p))
    assert src.format == "epub"
    passages = read_all(src)
    assert [(x.where, x.text) for x in passages] == [
        ("ch. 1 · The Beginning", "One\nFirst chapter text."),
        ("ch. 2 · Heading Two", "Heading Two\nSecond chapter text."),
        ("ch. 3", "Third chapter, no heading."),
    ]
    assert src.units == {"chapters": 3}
    assert src.content_hash == hashlib.sha256(data).hexdigest()


def test_epub2_titles_from_ncx(tmp_path):
    p = tmp_path / "old.epub"
    p.write_bytes(make_epub([("a.xhtml", "<p>Alpha.</p>", "Part Alpha"), ("b.xhtml", "<p>Beta.</p>", "Part Beta")],
                            nav=False))
    assert [x.where for x in read_all(open_source(str(p)))] == ["ch. 1 · Part Alpha", "ch. 2 · Part Beta"]


def test_epub_on_stdin():
    data = make_epub([("a.xhtml", "<p>Piped chapter.</p>", "Only")])
    src = open_source("-", stdin=io.BytesIO(data))
    assert src.format == "epub" and src.size_bytes == len(data)
    assert read_all(src) == [Passage("Piped chapter.", "ch. 1 · Only")]


def test_not_an_epub_zip(tmp_path):
    p = tmp_path / "fake.epub"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("hello.txt", "not a book")
    with pytest.raises(InputError, match=r"fake\.epub is not a readable EPUB"):
        open_source(str(p))
    q = tmp_path / "text.epub"
    q.write_text("plain text, not even a zip")
    with pytest.raises(InputError, match=r"text\.epub is not a readable EPUB \(not a zip archive\)"):
        open_source(str(q))


# ---------------------------------------------------------------------------------------- sniffing


def test_format_from_magic():
    assert format_from_magic(b"%PDF-1.7\n...") == "pdf"
    assert format_from_magic(b"\n\n%PDF-1.4") == "pdf"
    assert format_from_magic(b"\x00" * 128 + b"%PDF-1.4") == "pdf"
    assert format_from_magic(b"Notes on the %PDF-1.7 header") is None
    epub_head = make_epub([("a.xhtml", "<p>x</p>", "A")])[:200]
    assert format_from_magic(epub_head) == "epub"
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("a.txt", "x")
    assert format_from_magic(zipped.getvalue()) is None
    assert format_from_magic(b"  \n<!DOCTYPE html><html>") == "html"
    assert format_from_magic(codecs.BOM_UTF8 + b"<html lang='en'>") == "html"
    assert format_from_magic(b"<?xml version='1.0'?>\n<html xmlns='http://www.w3.org/1999/xhtml'>") == "html"
    assert format_from_magic(b"<!-- saved page -->\n<body><p>x</p></body>") == "html"
    assert format_from_magic("<html><body>hi</body></html>".encode("utf-16")) == "html"
    assert format_from_magic(b"# Notes\nUse <body> in your page.") is None
    assert format_from_magic(b"plain text") is None


def test_format_from_extension_and_fallback():
    assert format_from_extension("a/b/Book.PDF") == "pdf"
    assert format_from_extension("x.epub") == "epub"
    assert {format_from_extension(f"x.{e}") for e in ("html", "htm", "xhtml")} == {"html"}
    assert {format_from_extension(f"x.{e}") for e in ("txt", "md", "log", "csv", "rst")} == {"text"}
    assert format_from_extension("x.unknown") is None
    assert sniff_format(b"hello", "notes.unknown") == "text"
    assert sniff_format(b"%PDF-1.4", "misnamed.txt") == "pdf"


def test_open_source_sniffs_by_magic_over_extension(tmp_path):
    pdf = tmp_path / "really_a_pdf.txt"
    pdf.write_bytes(make_pdf([["Magic wins."]]))
    assert open_source(str(pdf)).format == "pdf"
    html = tmp_path / "page.dat"
    html.write_text("<!doctype html><p>Hi</p>")
    assert open_source(str(html)).format == "html"
    md = tmp_path / "readme.md"
    md.write_text("# Title\n\nSome <b>markdown</b>.\n")
    assert open_source(str(md)).format == "text"


def test_explicit_format_overrides_sniffing(tmp_path):
    p = tmp_path / "page.html"
    p.write_text("<html><body><p>Tagged</p></body></html>\n")
    src = open_source(str(p), format="text")
    assert src.format == "text"
    assert read_all(src)[0].text == "<html><body><p>Tagged</p></body></html>"
    assert open_source(str(p), format="txt").format == "text"
    with pytest.raises(InputError, match="unknown document format"):
        open_source(str(p), format="docx")


# ------------------------------------------------------------------------------------- bad inputs


def test_empty_and_whitespace_only(tmp_path):
    p = tmp_path / "empty.txt"
    p.write_bytes(b"")
    with pytest.raises(InputError, match=r"empty\.txt is empty"):
        open_source(str(p))
    w = tmp_path / "blank.txt"
    w.write_bytes(b"  \n\n\t \n")
    with pytest.raises(InputError, match=r"blank\.txt is empty"):
        read_all(open_source(str(w)))
    with pytest.raises(InputError, match="stdin is empty"):
        open_source("-", stdin=io.BytesIO(b""))


def test_binary_file_and_binary_stdin(tmp_path):
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
    p = tmp_path / "image.png"
    p.write_bytes(png)
    with pytest.raises(InputError, match=r"image\.png looks like binary data, not text"):
        open_source(str(p))
    with pytest.raises(InputError, match="stdin looks like binary data, not text"):
        open_source("-", stdin=io.BytesIO(png))
    stream = GeneratedStream([b"\x01\x02\x03junk" * 1000] * 100)
    with pytest.raises(InputError, match="binary"):
        open_source("-", stdin=stream)
    assert stream.total <= BLOCK_BYTES  # refused after the first block


def test_looks_binary_thresholds():
    assert not looks_binary(b"plain text\twith tabs\r\n and \x1b[31mcolour\x1b[0m\n")
    assert looks_binary(b"text\x00with a nul")
    assert looks_binary(bytes(range(1, 32)) * 10)
    assert not looks_binary("ünïcödé ✓".encode() * 100)


def test_missing_file_and_directory(tmp_path):
    missing = tmp_path / "nope.pdf"
    with pytest.raises(InputError, match=r"nope\.pdf: no such file"):
        open_source(str(missing))
    with pytest.raises(InputError, match="is a directory"):
        open_source(str(tmp_path))


def test_permission_denied(tmp_path, monkeypatch):
    p = tmp_path / "secret.txt"
    p.write_text("hidden\n")
    real_open = open

    def guarded_open(file, *args, **kwargs):
        if str(file) == str(p):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", guarded_open)
    with pytest.raises(InputError, match=r"secret\.txt: permission denied"):
        open_source(str(p))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root can read anything")
def test_permission_denied_for_real(tmp_path):
    p = tmp_path / "locked.txt"
    p.write_text("hidden\n")
    p.chmod(0)
    try:
        with pytest.raises(InputError, match="permission denied"):
            open_source(str(p))
    finally:
        p.chmod(0o644)


@pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32", reason="needs named pipes")
def test_named_pipe_is_streamed(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as f:
            f.write(b"through a fifo\n")

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    src = open_source(str(fifo))
    assert src.format == "text" and src.size_bytes is None
    assert read_all(src) == [Passage("through a fifo", "line 1")]
    assert src.size_bytes == 15
    t.join(5)


# ---- damaged EPUB packages and PDFs ---------------------------------------------------------------------
def _rewrite_zip(data: bytes, edit) -> bytes:
    """A copy of the zip `data` with edit(name, bytes) -> bytes | None (None drops the entry) applied."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            body = edit(info.filename, zin.read(info.filename))
            if body is not None:
                zout.writestr(info, body)
    return out.getvalue()


def _opf_name(data: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return next(n for n in z.namelist() if n.endswith(".opf"))


def test_epub_manifest_links_with_fragments_are_read(tmp_path):
    """Debian's live-manual.en.epub lists 'about-manual.xhtml#o8' in its manifest and spine."""
    data = make_epub([("a.xhtml", "<h1>About</h1><p>Alpha text.</p>", "About"), ("b.xhtml", "<p>Beta text.</p>", "B")])
    opf = _opf_name(data)

    def add_fragments(name, body):
        if name != opf:
            return body
        body = body.replace(b"</manifest>", b'<item id="a-o8" href="a.xhtml#o8" media-type="application/xhtml+xml"/>'
                                            b'<item id="gone" href="missing.xhtml" media-type="application/xhtml+xml"/>'
                                            b"</manifest>")
        return body.replace(b"</spine>", b'<itemref idref="a-o8"/><itemref idref="gone"/></spine>')

    p = tmp_path / "frag.epub"
    p.write_bytes(_rewrite_zip(data, add_fragments))
    passages = read_all(open_source(str(p)))
    assert [x.where for x in passages] == ["ch. 1 · About", "ch. 2 · B"]  # each file once
    assert "Alpha text." in passages[0].text


@pytest.mark.parametrize("damage, message", [
    ("no-container", "no META-INF/container.xml"),
    ("no-opf", "package file .* is missing"),
    ("no-spine", "no spine"),
    ("no-manifest", "not a readable EPUB"),
])
def test_epub_without_package_parts_is_one_clear_error(tmp_path, damage, message):
    data = make_epub([("a.xhtml", "<p>Alpha.</p>", "A")])
    opf = _opf_name(data)

    def edit(name, body):
        if damage == "no-container" and name == "META-INF/container.xml":
            return None
        if damage == "no-opf" and name == opf:
            return None
        if damage == "no-spine" and name == opf:
            return re.sub(rb"<spine.*</spine>", b"", body, flags=re.S)
        if damage == "no-manifest" and name == opf:
            return re.sub(rb"<manifest>.*</manifest>", b"", body, flags=re.S)
        return body

    p = tmp_path / "broken.epub"
    p.write_bytes(_rewrite_zip(data, edit))
    with pytest.raises(InputError, match=message) as e:
        read_all(open_source(str(p)))
    assert "NoneType" not in str(e.value) and "object" not in str(e.value)


@pytest.mark.parametrize("algorithm", ["AES-128", "AES-256"])
def test_aes_encrypted_pdfs_open_with_the_empty_password_or_say_password_protected(tmp_path, algorithm):
    p = tmp_path / "aes.pdf"
    p.write_bytes(make_pdf([["Readable under AES."]], encrypt={"user_password": "", "owner_password": "o",
                                                               "algorithm": algorithm}))
    assert [x.text for x in read_all(open_source(str(p)))] == ["Readable under AES."]
    q = tmp_path / "aes-locked.pdf"
    q.write_bytes(make_pdf([["Secret."]], encrypt={"user_password": "pw", "algorithm": algorithm}))
    with pytest.raises(InputError, match=r"aes-locked\.pdf is password-protected"):
        read_all(open_source(str(q)))


def test_pdf_pages_of_replacement_characters_are_skipped_with_a_warning(tmp_path, monkeypatch):
    from pypdf import PageObject

    from infinipot_cli.documents.pdf import is_garbage

    p = tmp_path / "mixed.pdf"
    p.write_bytes(make_pdf([["Good page one."], ["BROKEN"], ["Good page three."]]))
    real = PageObject.extract_text

    def extract(self, *a, **k):
        text = real(self, *a, **k)
        return "\ufffd\ufffd\ufffd \ufffd\ufffd\ufffd\ufffd \ufffd\ufffd ab" if "BROKEN" in text else text

    monkeypatch.setattr(PageObject, "extract_text", extract)
    src = open_source(str(p))
    assert [x.text for x in read_all(src)] == ["Good page one.", "Good page three."]
    assert any("page 2 skipped" in w and "unreadable" in w for w in src.warnings)
    assert is_garbage("\ufffd" * 10 + "abc") and not is_garbage("Plain text with one \ufffd in it.")


class _CharTok:
    """One token per character (ids = code points): enough to follow pieces through token_stream."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]

    def decode(self, ids):
        return "".join(chr(i) for i in ids)


class _StubEngine:
    def __init__(self):
        self.tokens_read, self.where, self.pending, self._fed, self.fed = 0, "", [], 0, []

    def feed(self, ids, where=""):
        self.fed.append((ids, where))
        self.tokens_read += len(ids)
        self.where = where

    def finish(self):
        pass


def test_text_provenance_carries_real_line_numbers(tmp_path):
    from infinipot_cli.pot.reader import SourceRecord, read_source

    p = tmp_path / "story.txt"
    p.write_text("".join(f"L{i:04d} the story goes on and on for a while.\n" for i in range(1, 401)))
    eng, rec = _StubEngine(), SourceRecord(path=str(p), format="text")
    read_source(eng, _CharTok(), open_source(str(p)), rec)
    wheres = [w for _, w in eng.fed]
    assert len(set(wheres)) > 5 and wheres[0] == "line 1"  # was "line 1" for every piece
    for ids, where in eng.fed:
        n = int(where.split()[-1])
        assert _CharTok().decode(ids).lstrip("\n").startswith(f"L{n:04d}")
    assert rec.units == {"lines": 400} and rec.as_json()["read"] == ["lines 1-400"]


def test_json_sources_list_the_pages_and_chapters_read(tmp_path):
    from infinipot_cli.pot.reader import SourceRecord, read_source

    pdf = tmp_path / "m.pdf"
    pdf.write_bytes(make_pdf([["Cover."], ["Setup text."], ["More setup."]], labels=[(0, 0, "/r", 1), (1, 2, "/D", 1)],
                             outline=[("Setup", 1, None)]))
    eng, rec = _StubEngine(), SourceRecord(path=str(pdf), format="pdf")
    read_source(eng, _CharTok(), open_source(str(pdf)), rec)
    assert rec.as_json()["read"] == ["p. i", "p. 1 · Setup", "p. 2 · Setup"]
    book = tmp_path / "b.epub"
    book.write_bytes(make_epub([("a.xhtml", "<p>Alpha.</p>", "Part A"), ("b.xhtml", "<p>Beta.</p>", "Part B")]))
    eng, rec = _StubEngine(), SourceRecord(path=str(book), format="epub")
    read_source(eng, _CharTok(), open_source(str(book)), rec)
    assert rec.as_json()["read"] == ["ch. 1 · Part A", "ch. 2 · Part B"] and rec.as_json()["chapters"] == 2


def test_pdf_running_headers_page_numbers_and_dot_leaders_are_stripped(tmp_path):
    pages = [["TW-40 User Manual", "Contents", "1 Setup ........ 2", "2 Calibration . . . . . 3", "Page 1 of 5"]]
    words = {2: "Unpack the station", 3: "Calibrate the barometer", 4: "Clean the funnel", 5: "Warranty terms"}
    pages += [["TW-40 User Manual", f"{words[i]}: chapter {i}.", f"Page {i} of 5"] for i in range(2, 6)]
    p = tmp_path / "manual.pdf"
    p.write_bytes(make_pdf(pages))
    text = "\n".join(x.text for x in read_all(open_source(str(p))))
    assert "TW-40 User Manual" not in text and "Page " not in text and "...." not in text and ". . ." not in text
    for i in range(2, 6):
        assert f"{words[i]}: chapter {i}." in text
    assert "Contents" in text
    two = tmp_path / "two.pdf"  # too few pages to call anything furniture
    two.write_bytes(make_pdf([["Same header", "Text one."], ["Same header", "Text two."]]))
    assert "Same header" in "\n".join(x.text for x in read_all(open_source(str(two))))


def test_epub_navigation_blocks_and_copyright_footers_are_stripped(tmp_path):
    nav = "<div><p>Navigation</p><p>index</p><p>next |</p><p>previous |</p></div>"
    foot = "<p>© Copyright 2001-2024, Example Foundation.</p>"
    chapters = [(f"c{i}.xhtml", f"{nav}<h1>Part {i}</h1><p>Body of part {i} with facts.</p>{foot}", f"Part {i}")
                for i in range(1, 5)]
    p = tmp_path / "sphinx.epub"
    p.write_bytes(make_epub(chapters))
    passages = read_all(open_source(str(p)))
    text = "\n".join(x.text for x in passages)
    assert "Navigation" not in text and "next |" not in text and "©" not in text
    assert [x.text for x in passages][0] == "Part 1\nBody of part 1 with facts."


def test_sphinx_heading_marks_are_not_text():
    html = ('<html><body><h1>Abstract<a class="headerlink" href="#abstract" title="Permalink">¶</a></h1>'
            '<p>Body text <a href="#x">a real link</a>.</p><h2>Usage<a href="#usage">#</a></h2></body></html>')
    text = " ".join(b.text for b in html_to_blocks(html))
    assert "¶" not in text and "Abstract" in text and "a real link" in text
    assert "Usage#" not in text and "Usage" in text
