"""An EPUB's zip may not expand without bound (a zip bomb): every member is checked against a size and a
compression-ratio limit before anything is unpacked, refused in one line naming the limit; a large legitimate
archive says that it is being unpacked."""

from __future__ import annotations

import random
import zipfile

import pytest
from typer.testing import CliRunner

from infinipot_cli.runtime import loading as model_mod
from infinipot_cli.app import app
from infinipot_cli.documents import open_source, ziplimits
from infinipot_cli.errors import InputError

CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             '</rootfiles></container>')
OPF = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
       '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">x</dc:identifier>'
       '<dc:title>B</dc:title><dc:language>en</dc:language></metadata><manifest>'
       '<item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
       '<spine><itemref idref="c1"/></spine></package>')


def epub_with(path, body: bytes) -> str:
    """An EPUB whose one chapter holds `body` (deflated)."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")
        z.writestr("META-INF/container.xml", CONTAINER, zipfile.ZIP_DEFLATED)
        z.writestr("OEBPS/content.opf", OPF, zipfile.ZIP_DEFLATED)
        z.writestr("OEBPS/c1.xhtml", b"<html><body>" + body + b"</body></html>", zipfile.ZIP_DEFLATED, 9)
    return str(path)


def prose(n_bytes: int) -> bytes:
    """Paragraphs of random words: compresses about 3x, like a book."""
    rnd = random.Random(0)
    words = [("".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randint(2, 9))))
             for _ in range(5000)]
    out, size = [], 0
    while size < n_bytes:
        p = ("<p>" + " ".join(rnd.choice(words) for _ in range(60)) + ".</p>\n").encode()
        out.append(p)
        size += len(p)
    return b"".join(out)


BOMB_LINE = b"<p>All work and no play makes Jack a dull boy.</p>\n"


def test_a_member_that_expands_too_far_is_refused(tmp_path):
    path = epub_with(tmp_path / "bomb.epub", BOMB_LINE * 60_000)  # 3 MB from ~10 KB
    with pytest.raises(InputError, match=r"refusing to unpack OEBPS/c1.xhtml: it expands \d[\d,]*x .* over the "
                                         r"limit of 100x for one member of an EPUB"):
        open_source(path)


def test_a_member_too_large_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(ziplimits, "MAX_MEMBER_BYTES", 1 << 20)
    path = epub_with(tmp_path / "big.epub", prose(1_200_000))
    with pytest.raises(InputError, match=r"it expands to 1\.1 MiB, over the limit of 1\.0 MiB for one member"):
        open_source(path)


def test_all_members_together_have_a_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(ziplimits, "MAX_TOTAL_BYTES", 500_000)
    path = epub_with(tmp_path / "big.epub", prose(600_000))
    with pytest.raises(InputError, match=r"its members expand to more than 488\.3 KiB, the limit for an EPUB"):
        open_source(path)


def test_the_cli_refuses_a_zip_bomb_in_one_line_before_the_model_loads(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the archive was checked")
    monkeypatch.setattr(model_mod, "load_model", refuse)
    monkeypatch.setattr(model_mod, "load_tokenizer", refuse)
    path = epub_with(tmp_path / "bomb.epub", BOMB_LINE * 60_000)
    r = CliRunner().invoke(app, ["ask", path, "What does Jack do?", "-q"])
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "limit of 100x" in err, err


def test_a_large_archive_says_it_is_unpacking(tmp_path, monkeypatch):
    monkeypatch.setattr(ziplimits, "PROGRESS_BYTES", 100_000)
    path = epub_with(tmp_path / "book.epub", prose(300_000))
    said: list[str] = []
    src = open_source(path, notice=said.append)
    assert said and said[0].startswith("unpacking ") and "book.epub (" in said[0] and "KiB" in said[0], said
    assert "".join(p.text for p in src.passages())  # and it reads
    quiet: list[str] = []
    open_source(epub_with(tmp_path / "small.epub", prose(20_000)), notice=quiet.append)
    assert quiet == []
