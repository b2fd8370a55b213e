"""A summary's key points: one per part of the document's own outline (outline.py), chosen from the whole
document as read (keypoints.py), with where each came from; and an overview that names nothing the document
lacks (summary.SupportedSentences)."""

from infinipot_cli.answer.outline import Part, from_labels, from_text, heading_of, label_section, merge, outline
from infinipot_cli.answer.summary import SupportedSentences


def test_heading_lines_of_plain_text():
    assert heading_of("OPTIONS") == "OPTIONS"                               # man page
    assert heading_of("ADVANCED USAGE") == "ADVANCED USAGE"
    assert heading_of("## Installing") == "Installing"                      # Markdown
    assert heading_of("*02.3*\tMoving around") == "Moving around"           # Vim help
    assert heading_of("3.2 Parsing the input") == "3.2 Parsing the input"   # numbered
    assert heading_of("gzip (1.12-1) unstable; urgency=medium") is not None  # Debian changelog
    assert heading_of("* Noteworthy changes in release 9.1 (2022-04-15) [stable]") is not None  # GNU NEWS
    assert heading_of("Getting started", "===============") == "Getting started"  # underlined
    # not headings: indented text, sentences, a numbered sentence, a long line
    assert heading_of("       OPTIONS") is None
    assert heading_of("The file is compressed.") is None
    assert heading_of("3. Remove the old file before you start.") is None
    assert heading_of("Getting started", "") is None
    assert heading_of("A" * 100) is None


def test_parts_from_the_readers_labels():
    assert label_section("p. 5 · 2 Parsing") == "2 Parsing"
    assert label_section("§ Basic usage") == "Basic usage"
    assert label_section("line 120") == ""
    prov = [(0, "p. 1 · 1 Intro"), (300, "p. 2 · 1 Intro"), (600, "p. 3 · 2 Usage"), (900, "ch. 4 · Errors"),
            (950, "line 3")]
    assert from_labels(prov) == [Part(0, "1 Intro"), Part(600, "2 Usage"), Part(900, "Errors")]


def test_parts_from_heading_lines_and_merging():
    texts = ["NAME\n", "     gzip - compress\n\n", "OPTIONS\n       -c   Write on standard output.\n\n",
             "Some text that is indented.\n", "BUGS\n", "     None known.\n"]
    pos = [0, 3, 10, 25, 31, 33]
    assert [p.title for p in from_text(pos, texts)] == ["NAME", "OPTIONS", "BUGS"]
    assert [p.start for p in from_text(pos, texts)] == [0, 10, 31]
    assert outline([(0, "line 1")], pos, texts, limit=40) == from_text(pos, texts)
    parts = [Part(i * 10, f"s{i}") for i in range(10)]
    assert merge(parts, 4) == [parts[0], parts[2], parts[5], parts[7]]
    assert outline([(0, "line 1")], pos[:2], texts[:2], limit=40) == []  # fewer than 3 parts: unstructured


def test_the_overview_withholds_a_sentence_that_names_what_the_document_lacks():
    out = []
    s = SupportedSentences(out.append, "The tool gzip compresses files with Lempel-Ziv coding (LZ77).", "Overview: ")
    for delta in ["gzip compresses files. It was written by Compomentation ", "in 1994. It uses LZ77 coding."]:
        s(delta)
    assert s.finish() == "gzip compresses files. It uses LZ77 coding."
    assert "".join(out) == "Overview: gzip compresses files. It uses LZ77 coding."
    assert [d["unsupported"] for d in s.dropped] == [["1994", "Compomentation"]]
    s = SupportedSentences(None, "The tool compresses files.", "")
    s("Overall, it is excellent. The tool compresses files. Finally")
    # "Overall" is an ordinary word, no name; "Finally" alone is no sentence (test_overview.py)
    assert s.finish() == "Overall, it is excellent. The tool compresses files." and s.dropped == []
    s = SupportedSentences(None, "The maintainer uploaded gzip. Syntax highlighting is on.", "")
    s("1. The document is a helpful AI chatbot.\n*2. SyntaxHighlighter*\n- Syntax highlighting is on.\n")
    assert s.finish() == "Syntax highlighting is on."  # a list item is checked alone; "AI" is no part of "maintainer"
    assert [d["unsupported"] for d in s.dropped] == [["AI"]]
    s = SupportedSentences(None, "The survey was led by Dr. Okafor.", "")
    s("The survey was led by Dr. Okafor. It was carried out by Dr. Moraes, a biologist.")
    assert s.finish() == "The survey was led by Dr. Okafor."  # "Dr." ends no sentence: the whole one is withheld


MAN_PAGE = """NAME
       frob - adjust the frobnication level of a widget

SYNOPSIS
       frob [-l LEVEL] WIDGET

DESCRIPTION
       The frob utility sets how strongly a widget is frobnicated. Widgets keep their level across restarts,
       because frob writes the level into the widget's own configuration store.

OPTIONS
       -l LEVEL
              Set the frobnication level; a level above nine makes the widget glow in the dark.

       -q     Quiet: print nothing unless the widget refuses the new level.

EXIT STATUS
       Exit status is zero when the widget accepted the level, and two when the widget was unplugged.

BUGS
       A widget made before the great recall of the spring forgets its level at midnight.
"""


def test_builtin_key_points_follow_the_man_pages_sections_with_exact_lines(builtin, tmp_path):
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.answer.keypoints import document_key_points
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source

    path = tmp_path / "frob.1.txt"
    path.write_text(MAN_PAGE * 3)  # ~700 tokens: the pot (256) evicts most of it into the archive
    P = Prompts(builtin.tokenizer)
    cat, focus = P.catalyst("general")
    eng = Engine(builtin.model, builtin.tokenizer, PotConfig(size=256, keep=128, chunk=64), catalyst_ids=cat,
                 catalyst_focus=focus)
    eng.pin(P.header_ids())
    src = open_source(str(path))
    read_source(eng, builtin.tokenizer, src, SourceRecord(path=src.path, format=src.format))
    assert len(eng.pot) <= 256
    points = document_key_points(eng)
    lines = MAN_PAGE.count("\n")
    # a man page starts with what the command is (its first NAME line), then each copy's description, options,
    # exit status and bugs
    assert [p["section"] for p in points[:5]] == ["NAME", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "BUGS"]
    assert points[0]["text"] == "frob - adjust the frobnication level of a widget"
    assert len(points) == 13
    whole = (MAN_PAGE * 3).split("\n")
    for p in points:  # the exact line of the point's first words
        assert p["text"].split()[0] in whole[p["line"] - 1], p
    assert points[4]["line"] <= lines < points[5]["line"]  # document order: the second copy after the first
    assert "glow in the dark" in points[2]["text"] or "Quiet" in points[2]["text"]


def test_builtin_key_points_of_a_pdf_come_from_its_outline_with_pages(builtin):
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.answer.keypoints import document_key_points
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source

    P = Prompts(builtin.tokenizer)
    cat, focus = P.catalyst("general")
    eng = Engine(builtin.model, builtin.tokenizer, PotConfig(size=512, keep=256), catalyst_ids=cat,
                 catalyst_focus=focus)
    eng.pin(P.header_ids())
    src = open_source("sample_docs/manual.pdf")
    read_source(eng, builtin.tokenizer, src, SourceRecord(path=src.path, format=src.format))
    points = document_key_points(eng)
    sections = [p["section"] for p in points]
    assert len(points) >= 3 and len(set(sections)) == len(sections)  # one per part
    assert all("page" in p and p["text"].endswith((".", "!", "?")) for p in points), points
    assert [p["position"] for p in points] == sorted(p["position"] for p in points)
