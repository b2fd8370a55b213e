"""Tables in HTML pages and EPUB chapters: one line per row, each value named by its column's header, so a row
reads as a sentence that the pot, its archive and the evidence hold whole."""

from __future__ import annotations

import pytest

from infinipot_cli.documents import open_source
from infinipot_cli.documents.html import html_to_blocks
from helpers import make_epub

ROWS = "".join(f"<tr><td>{i}</td><td>item{i}</td><td>{i * 3.5}</td></tr>" for i in range(1, 10))
TABLE = f"<table><thead><tr><th>id</th><th>name</th><th>weight</th></tr></thead><tbody>{ROWS}</tbody></table>"


def _lines(html: str) -> list[str]:
    return [b.text for b in html_to_blocks(html)]


def test_a_row_is_a_line_with_its_header_names():
    lines = _lines(f"<h2>Stock</h2><p>The store keeps these items.</p>{TABLE}<p>After the table.</p>")
    assert "id: 7; name: item7; weight: 24.5." in lines
    assert lines[lines.index("id: 7; name: item7; weight: 24.5.") + 1] == "id: 8; name: item8; weight: 28.0."
    assert "id | name | weight" not in lines and lines[-1] == "After the table."


@pytest.mark.parametrize("html,expect", [
    # a header row of <th> without <thead>
    ("<table><tr><th>Name</th><th>Count</th></tr><tr><td>Puffin</td><td>412</td></tr></table>",
     ["Name: Puffin; Count: 412."]),
    # row headers, an empty corner cell, a caption
    ("<table><caption>Birds seen</caption><tr><th></th><th>count</th></tr><tr><th>Puffin</th><td>412</td></tr>"
     "<tr><th>Razorbill</th><td>57</td></tr></table>", ["Birds seen", "Puffin; count: 412.", "Razorbill; count: 57."]),
    # no header: cells joined as before, one line per row
    ("<table><tr><td>7</td><td>item7</td></tr><tr><td>8</td><td>item8</td></tr></table>", ["7 | item7", "8 | item8"]),
    # a spanning cell keeps the columns aligned; an empty value is left out
    ("<table><tr><th>a</th><th>b</th><th>c</th></tr><tr><td colspan=2>wide</td><td>3</td></tr>"
     "<tr><td>1</td><td></td><td>3</td></tr></table>", ["a: wide; c: 3.", "a: 1; c: 3."]),
])
def test_table_shapes(html, expect):
    assert _lines(html) == expect


def test_a_layout_table_is_read_as_blocks():
    """A table holding a table (page layout) is no data table: its text flows as before, the inner table's rows
    are rows."""
    html = ("<table><tr><td><p>Welcome to the site.</p>" + TABLE + "</td><td>Sidebar text.</td></tr></table>")
    lines = _lines(html)
    assert "Welcome to the site." in lines and "id: 7; name: item7; weight: 24.5." in lines
    long_cells = "<table>" + "<tr><td>x</td><td>" + "word " * 200 + "</td></tr>" * 2 + "</table>"
    assert not any(": " in line for line in _lines(long_cells))


def test_html_and_epub_tables(tmp_path):
    page = tmp_path / "stock.html"
    page.write_text(f"<html><body><h1>Stock</h1>{TABLE}</body></html>")
    text = "\n".join(p.text for p in open_source(str(page)).passages())
    assert "\nid: 7; name: item7; weight: 24.5.\nid: 8;" in text
    book = tmp_path / "stock.epub"
    book.write_bytes(make_epub([("c1.xhtml", f"<html><body><h1>Stock</h1>{TABLE}</body></html>", "Stock"),
                                ("c2.xhtml", "<html><body><h1>End</h1><p>The end.</p></body></html>", "End")]))
    text = "\n".join(p.text for p in open_source(str(book)).passages())
    assert "\nid: 7; name: item7; weight: 24.5.\nid: 8;" in text


def test_the_evidence_for_a_cell_holds_its_row(builtin_tok, tmp_path):
    """Asked about one cell, the evidence shows the whole row with its column names (a sentence of its own)."""
    from infinipot_cli.answer import evidence as ev
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source
    from tiny_models import make_model_for

    page = tmp_path / "stock.html"
    page.write_text("<html><body><h1>Stock</h1><p>The store keeps nine items, each weighed on delivery.</p>"
                    f"{TABLE}<p>Weights are in kilograms.</p></body></html>")
    P = Prompts(builtin_tok)
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    rec = SourceRecord(path=str(page), format="html")
    read_source(eng, builtin_tok, open_source(str(page)), rec)
    q = "What is the weight of item7?"
    prompt, focus = P.ask(q)
    eng.answer(prompt, "question", 2, P.stop_ids(), focus=focus)
    out = ev.evidence(eng, ev.Context.of(eng), prompt, q, "item7 weighs 24.5.", [(str(page), rec.tokens)])
    assert any("id: 7; name: item7; weight: 24.5." in p.text for p in out), [p.text for p in out]
