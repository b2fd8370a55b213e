"""A web page is parsed whole, so what it may hold is bounded: its bytes, and the elements and runs of text its parse
builds; a page over a limit is refused in one line naming the limit, before the model loads (a 50 MB page of
nested tags took 4.25 GB and minutes). The walk over the parsed page is linear however deep it nests."""

from __future__ import annotations

import io
import time
import tracemalloc

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.documents import html as html_mod
from infinipot_cli.documents import html_to_blocks, open_source
from infinipot_cli.errors import InputError
from infinipot_cli.runtime import loading as model_mod
from test_archive_limits import epub_with


def nested(depth: int) -> str:
    """A page of `depth` nested <div><b> pairs around one line of text."""
    return "<html><body>" + "<div><b>" * depth + "deep text" + "</b></div>" * depth + "</body></html>"


def test_a_parse_stops_at_its_limit_in_bounded_memory():
    markup = nested(25_000)  # 50,000 elements: unbounded, a tree of ~30 MB
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match=r"page\.html: refusing to parse it: it holds more than 2,000 HTML "
                                             r"elements and runs of text, the limit for a page read whole"):
            html_mod.parse_html(markup, "page.html", max_nodes=2_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * len(markup), peak  # the markup and a 2,000-element tree, not 50,000 elements
    assert [b.text for b in html_to_blocks(nested(500))] == ["deep text"]  # under the limit: read


def test_a_page_with_too_many_elements_is_refused_naming_the_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(html_mod, "MAX_HTML_NODES", 3_000)
    page = tmp_path / "deep.html"
    page.write_text("<div>text " * 2_000 + "</div>" * 2_000)  # 4,000 nodes, fewer "<" than twice the limit:
    with pytest.raises(InputError, match=r"deep\.html: refusing to parse it: .*more than 3,000 HTML elements.*"
                                         r"convert it to text first"):  # found while parsing
        open_source(str(page))
    page.write_text(nested(1_000))
    assert [p.text for p in open_source(str(page)).passages()] == ["deep text"]


def test_a_page_of_far_too_many_tags_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(html_mod, "MAX_HTML_NODES", 1_000)

    def no_parse(*a, **k):
        raise AssertionError("parsed a page the count of its tags refuses")

    monkeypatch.setattr(html_mod, "parse_html", no_parse)
    page = tmp_path / "tags.html"
    page.write_text(nested(1_500))  # 6,000 "<"
    with pytest.raises(InputError, match=r"about 6,00\d tags, over the limit of 1,000 HTML elements"):
        open_source(str(page))


def test_a_page_too_large_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(html_mod, "MAX_HTML_BYTES", 10_000)
    page = tmp_path / "big.html"
    page.write_text("<html><body>" + "<p>Plain words of a long page.</p>" * 400 + "</body></html>")
    with pytest.raises(InputError, match=r"big\.html: refusing to parse it: 13\.\d KiB of HTML, over the limit of "
                                         r"9\.8 KiB for a page read whole"):
        open_source(str(page))
    piped = "<html><body>" + "<p>Plain words of a long page.</p>" * 4_000 + "</body></html>"  # 136 KB
    with pytest.raises(InputError, match=r"stdin: refusing to parse it: over \d+\.\d KiB of HTML, over the limit of "
                                         r"9\.8 KiB"):  # read no further than the limit (in 64 KiB blocks)
        open_source("-", "html", stdin=io.BytesIO(piped.encode()))


def test_an_epub_chapter_is_bounded_as_a_page_is(tmp_path, monkeypatch):
    monkeypatch.setattr(html_mod, "MAX_HTML_NODES", 2_000)
    path = epub_with(tmp_path / "deep.epub", nested(1_200).encode())
    with pytest.raises(InputError, match=r"deep\.epub: c1\.xhtml: refusing to parse it: .*2,000 HTML elements"):
        list(open_source(path).passages())


def test_the_cli_refuses_in_one_line_before_the_model_loads(tmp_path, monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the page was checked")

    monkeypatch.setattr(model_mod, "load_model", refuse)
    monkeypatch.setattr(model_mod, "load_tokenizer", refuse)
    monkeypatch.setattr(html_mod, "MAX_HTML_NODES", 2_000)
    page = tmp_path / "deep.html"
    page.write_text(nested(3_000))
    r = CliRunner().invoke(app, ["ask", str(page), "What is deep?", "-q"])
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "limit" in err and "2,000" in err, err


def test_a_large_page_says_how_far_its_parse_got(monkeypatch):
    monkeypatch.setattr(html_mod, "PROGRESS_TAGS", 1_000)
    monkeypatch.setattr(html_mod, "PROGRESS_EVERY_S", 0.0)
    said: list[str] = []
    html_mod.parse_html(nested(6_000), "page.html", notice=said.append)
    assert said[0] == "parsing page.html (24,004 tags)…" and any(s.endswith("%…") for s in said[1:]), said
    quiet: list[str] = []
    html_mod.parse_html(nested(100), "small.html", notice=quiet.append)
    assert quiet == []


def test_the_opener_passes_its_notice_to_a_page(tmp_path, monkeypatch):
    monkeypatch.setattr(html_mod, "PROGRESS_TAGS", 1_000)
    page = tmp_path / "page.html"
    page.write_text(nested(2_000))
    said: list[str] = []
    open_source(str(page), notice=said.append)
    assert said and said[0].startswith(f"parsing {page} (8,004 tags)"), said


def test_the_walk_is_linear_however_deep_the_page_nests():
    """Every wrapper whose class says "menu" asks whether it holds the page's content, and every table whether a
    table is inside it: asked once, bottom up, not searched again under each (5,000 nested menus took 109 s)."""
    menus = '<div class="menu">' * 4_000 + "<h1>Title</h1><p>Body text.</p>" + "</div>" * 4_000
    tables = "<table><tr><td>" * 1_500 + "cell text" + "</td></tr></table>" * 1_500
    headers = "<article>" + "<header>" * 3_000 + "Byline" + "</header>" * 3_000 + "</article>"
    t = time.monotonic()
    assert [b.text for b in html_to_blocks(menus)] == ["Title", "Body text."]
    assert [b.text for b in html_to_blocks(tables)] == ["cell text"]
    assert [b.text for b in html_to_blocks(headers)] == ["Byline"]
    assert time.monotonic() - t < 15, time.monotonic() - t
