"""A PDF's parts: its outline where it has one; without one, heading-like lines of its text, never a line of
code ("BEGIN" between ASN.1 lines became a part title and mislabelled a key point)."""

from __future__ import annotations

import pytest

from infinipot_cli.answer import outline as ol
from helpers import make_pdf

ASN1_PAGE = ["2 ASN.1 structure handling", "The parser is case sensitive. Comments begin with two dashes.",
             "ASN.1 definitions must follow the syntax below:", "definitions_name {<object definition>}",
             "DEFINITIONS <EXPLICIT or IMPLICIT> TAGS ::=", "BEGIN", "<type and constants definitions>", "END",
             "The SIZE constraints are allowed, but no check is done on them."]
NAMING_PAGE = ["2.2 Naming", "Consider this definition:", "Example { 1 2 3 4 }", "DEFINITIONS EXPLICIT TAGS ::=",
               "BEGIN", "Group ::= SEQUENCE {", "id OBJECT IDENTIFIER,", "value Value", "}", "END",
               "The notation to access the Group type of the Example definition is Example.Group."]
INTRO_PAGE = ["1 Introduction", "This document describes the Libtasn1 library for ASN.1 structures.",
              "The library is written in C and is free software under the GNU Lesser General Public License."]


@pytest.mark.parametrize("prev,line,nxt", [
    ("DEFINITIONS <EXPLICIT or IMPLICIT> TAGS ::=", "BEGIN", "<type and constants definitions>"),
    ("<type and constants definitions>", "END", "The SIZE constraints are allowed."),
    ("}", "END", "The notation to access the Group type"),
    ("DEFINITIONS EXPLICIT TAGS ::=", "BEGIN", "Group ::= SEQUENCE {"),
    ("int main(void) {", "RETURN", "}"),
])
def test_a_line_among_code_is_no_heading(prev, line, nxt):
    assert ol.heading_of(line, nxt, prev) is None


@pytest.mark.parametrize("prev,line,nxt,title", [
    ("", "SYNOPSIS", "sed [OPTION]... {script-only-if-no-other-script} [input-file]...", "SYNOPSIS"),
    ("sed - stream editor for filtering and transforming text", "DESCRIPTION", "Sed is a stream editor.",
     "DESCRIPTION"),
    ("", "Running Vim for the First Time", "==============================", "Running Vim for the First Time"),
    ("Some text.", "3.2 Setting options", "The options are set with :set.", "3.2 Setting options"),
])
def test_headings_stay_headings(prev, line, nxt, title):
    assert ol.heading_of(line, nxt, prev) == title


def _key_points(builtin_tok, path):
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.answer.keypoints import document_key_points
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source
    from tiny_models import make_model_for

    P = Prompts(builtin_tok)
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    read_source(eng, builtin_tok, open_source(str(path)), SourceRecord(path=str(path), format="pdf"))
    return document_key_points(eng)


def test_no_key_point_is_labelled_by_a_code_line(builtin_tok, tmp_path):
    pdf = tmp_path / "asn1.pdf"
    pdf.write_bytes(make_pdf([INTRO_PAGE, ASN1_PAGE, NAMING_PAGE]))  # no outline
    points = _key_points(builtin_tok, pdf)
    assert points
    for p in points:
        assert p.get("section") not in ("BEGIN", "END") and "BEGIN" not in p["where"] and "END" not in p["where"], p


def test_a_pdf_with_an_outline_is_divided_by_it_alone(builtin_tok, tmp_path):
    """Two outline entries: too few parts for key points by part, and the text's heading-like lines (here
    "BEGIN"/"END" and numbered lines) are not used instead."""
    pdf = tmp_path / "asn1.pdf"
    pdf.write_bytes(make_pdf([INTRO_PAGE, ASN1_PAGE, NAMING_PAGE, INTRO_PAGE],
                             outline=[("1 Introduction", 0, None), ("2 ASN.1 structure handling", 1, None)]))
    points = _key_points(builtin_tok, pdf)
    assert points
    for p in points:
        assert p.get("section") in ("1 Introduction", "2 ASN.1 structure handling"), p
    assert ol.outline([(0, "p. 1 · 1 Introduction"), (50, "p. 2 · 2 ASN.1 structure handling")],
                      [0, 10, 20, 30], ["BEGIN\n", "A.\n", "END\n", "3.1 Title\n"], 40) == []
