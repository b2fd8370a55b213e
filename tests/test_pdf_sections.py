"""A PDF section that starts mid-page starts at its heading, not at the page: the page's text before the heading
keeps the section it continues, in the passages, in the engine's provenance (what `inspect` and evidence label a
position with) and in the evidence's parts."""

from __future__ import annotations

import pytest

from infinipot_cli.documents import open_source
from helpers import make_pdf

PAGES = [
    ["1 Setup", "Unpack the weather station and mount it on the pole.", "Tighten the two clamp bolts by hand."],
    ["Connect the sensor cable to the console before the batteries.", "2 Calibration",
     "Calibrate the barometer against the nearest airport reading.", "2.1 Wind vane",
     "Point the vane to true north and press the set button."],
    ["The vane keeps its north mark through a power failure.", "3 Care", "Clean the rain funnel every month."],
    ["4 Warranty", "4.1 Terms", "The warranty covers parts for two years."],
    ["Cover page of the appendix with no heading on it."],
]
OUTLINE = [("1 Setup", 0, None), ("2 Calibration", 1, None), ("2.1 Wind vane", 1, 1), ("3 Care", 2, None),
           ("4 Warranty", 3, None), ("4.1 Terms", 3, 4), ("Appendix A Tables", 4, None)]


@pytest.fixture()
def manual(tmp_path):
    path = tmp_path / "station.pdf"
    path.write_bytes(make_pdf(PAGES, outline=OUTLINE))
    return str(path)


def test_a_page_is_cut_where_a_section_starts(manual):
    got = [(p.where, p.text) for p in open_source(manual).passages()]
    assert got == [
        ("p. 1 · 1 Setup", "\n".join(PAGES[0])),
        ("p. 2 · 1 Setup", PAGES[1][0]),  # before the heading: the section it continues
        ("p. 2 · 2 Calibration", "\n".join(PAGES[1][1:3])),
        ("p. 2 · 2.1 Wind vane", "\n".join(PAGES[1][3:])),
        ("p. 3 · 2.1 Wind vane", PAGES[2][0]),
        ("p. 3 · 3 Care", "\n".join(PAGES[2][1:])),
        ("p. 4 · 4.1 Terms", "\n".join(PAGES[3])),  # a chapter's title alone above its first section joins it
        ("p. 5 · Appendix A Tables", PAGES[4][0]),  # a title the page does not show: the page starts it
    ]


def test_a_heading_is_found_across_case_numbering_and_line_breaks(tmp_path):
    pages = [["Opening words of the guide."],
             ["The intro ends here.", "CHAPTER 2", "GETTING", "STARTED", "Install the package first."]]
    path = tmp_path / "guide.pdf"
    path.write_bytes(make_pdf(pages, outline=[("Introduction", 0, None), ("Getting started", 1, None)]))
    got = [(p.where, p.text.split("\n")[0]) for p in open_source(str(path)).passages()]
    assert got == [("p. 1 · Introduction", "Opening words of the guide."),
                   ("p. 2 · Introduction", "The intro ends here."),
                   ("p. 2 · Getting started", "CHAPTER 2")]
    # a sentence that only begins with a title's words is no heading
    path.write_bytes(make_pdf([["Intro text."], ["Setup steps follow.", "Getting started is easy with the kit."]],
                              outline=[("Introduction", 0, None), ("Getting started", 1, None)]))
    assert [p.where for p in open_source(str(path)).passages()] == ["p. 1 · Introduction", "p. 2 · Getting started"]


def test_provenance_and_evidence_parts_follow_the_heading(manual, builtin_tok):
    """The engine's provenance (inspect's and evidence's labels) changes at the heading's first token, and no
    evidence passage spans it."""
    from infinipot_cli.answer import evidence as ev
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine, where_at
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source
    from tiny_models import make_model_for

    P = Prompts(builtin_tok)
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    rec = SourceRecord(path=manual, format="pdf")
    read_source(eng, builtin_tok, open_source(manual), rec)
    ids = ev.document_tokens(eng, 0, eng.tokens_read)
    text = builtin_tok.decode(ids)

    def at(phrase: str) -> int:  # the document position of the token where `phrase` starts
        k = text.index(phrase)
        return next(i for i in range(len(ids)) if len(builtin_tok.decode(ids[:i + 1])) > k)

    assert where_at(eng.provenance, at("Connect the sensor")) == "p. 2 · 1 Setup"
    assert where_at(eng.provenance, at("Calibrate the barometer")) == "p. 2 · 2 Calibration"
    assert where_at(eng.provenance, at("The vane keeps")) == "p. 3 · 2.1 Wind vane"
    assert ev.locate(eng, at("Connect the sensor"), [(manual, rec.tokens)])[1] == {"page": "2", "section": "1 Setup"}
    starts = ev.part_starts(eng.provenance)
    assert any(at("Connect the sensor") < s <= at("2 Calibration") for s in starts)
    assert "p. 2 · 1 Setup" in rec.read and "p. 2 · 2 Calibration" in rec.read
