"""The sample documents in sample_docs/ read correctly and contain the facts listed in sample_docs/README.md."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from infinipot_cli.documents import open_source

SAMPLES = Path(__file__).resolve().parent.parent / "sample_docs"


def passages(name: str):
    src = open_source(str(SAMPLES / name))
    return src, list(src.passages())


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def where_of(items, needle: str) -> str:
    """The provenance of the passage containing ``needle`` (whitespace-insensitive)."""
    found = [p.where for p in items if needle in flat(p.text)]
    assert found, f"{needle!r} not found"
    return found[0]


def test_lighthouse_story():
    src, items = passages("lighthouse.txt")
    assert src.format == "text" and src.warnings == []
    text = flat(" ".join(p.text for p in items))
    assert 2200 <= len(text.split()) <= 2800
    for fact in ("Tobias Fenwick", "Skerrow Island", "built in 1871", "There are 137 steps",
                 "The keeper's cat was named Biscuit.", "called the Margaret Ann", "every second Tuesday",
                 "twenty-two nautical miles", "Clara Voss", "Aldebaran", "automated in 1987"):
        assert fact in text, fact
    # the memorable fact sits in the middle of the story
    position = text.index("The keeper's cat was named Biscuit.") / len(text)
    assert 0.3 < position < 0.7
    assert where_of(items, "Tobias Fenwick").startswith("line ")


def test_report_page():
    src, items = passages("report.html")
    assert src.format == "html" and src.warnings == []
    text = "\n".join(p.text for p in items)
    assert where_of(items, "The survey counted 412 puffins on Kestrel Rock") == "§ Results"
    assert where_of(items, "Dr. Amara Okafor") == "§ Summary"
    assert where_of(items, "Petrel II") == "§ Methods"
    assert where_of(items, "1 May and 31 July") == "§ Recommendations"
    assert "Species: Guillemot; 2024 count: 1,186." in text and "Species: Razorbill; 2024 count: 57." in text
    for junk in ("Accept all cookies", "NST-TRACKER-0042", "Donate", "Registered charity", "Related reports",
                 "enable JavaScript", "font-family"):
        assert junk not in text, junk


def test_guide_epub():
    src, items = passages("guide.epub")
    assert src.format == "epub" and src.warnings == []
    assert src.units == {"chapters": 3}
    assert [p.where for p in items] == ["ch. 1 · Getting There", "ch. 2 · Where to Stay", "ch. 3 · What to Eat"]
    assert where_of(items, "Silver Heron leaves Dunmore at 21:40") == "ch. 1 · Getting There"
    assert where_of(items, "A return ticket costs 48 crowns") == "ch. 1 · Getting There"
    assert where_of(items, "Copper Kettle Inn has 14 rooms and is run by Ilse Brandt") == "ch. 2 · Where to Stay"
    assert where_of(items, "bramble dumplings") == "ch. 3 · What to Eat"
    assert where_of(items, "12 October") == "ch. 3 · What to Eat"
    assert all("OTTERGLASS" not in p.text for p in items)  # the non-linear appendix is skipped


def test_manual_pdf():
    src, items = passages("manual.pdf")
    assert src.format == "pdf" and src.warnings == []
    assert src.units == {"pages": 4}
    assert [p.where for p in items] == [
        "p. i",
        "p. 1 · Chapter 1 Setup",
        "p. 2 · Chapter 2 Calibration",
        "p. 3 · Chapter 3 Maintenance",
    ]
    assert where_of(items, "Manual revision 3.2") == "p. i"
    assert where_of(items, "four AA batteries") == "p. 1 · Chapter 1 Setup"
    assert where_of(items, "The factory firmware version is 2.7.1.") == "p. 1 · Chapter 1 Setup"  # ﬁ ligature
    assert where_of(items, "calibrated at the factory to 1013 hPa") == "p. 2 · Chapter 2 Calibration"
    assert where_of(items, "download the calibration information from") == "p. 2 · Chapter 2 Calibration"
    assert where_of(items, "The warranty lasts 24 months") == "p. 3 · Chapter 3 Maintenance"
    assert all("\ufb01" not in p.text and "infor-" not in p.text for p in items)


def test_what_a_pot_records_of_each_format():
    """The source record `--json` and pot files carry, per format (reader.py over a stand-in engine, no model):
    the units (pages, chapters, lines), the labels read in order, every token fed counted, the content hash."""
    from test_documents import _CharTok, _StubEngine

    from infinipot_cli.pot.reader import SourceRecord, read_source

    expected = {
        "manual.pdf": ("pdf", {"pages": 4}, ["p. i", "p. 1 · Chapter 1 Setup", "p. 2 · Chapter 2 Calibration",
                                             "p. 3 · Chapter 3 Maintenance"]),
        "guide.epub": ("epub", {"chapters": 3}, ["ch. 1 · Getting There", "ch. 2 · Where to Stay",
                                                 "ch. 3 · What to Eat"]),
        "report.html": ("html", {}, ["§ Kestrel Rock Seabird Survey 2024", "§ Summary", "§ Methods", "§ Results",
                                     "§ Recommendations"]),
        "lighthouse.txt": ("text", {"lines": 223}, ["lines 1-223"]),
    }
    for name, (fmt, units, read) in expected.items():
        src = open_source(str(SAMPLES / name))
        eng, rec = _StubEngine(), SourceRecord(path=src.path, format=src.format, size=src.size_bytes)
        read_source(eng, _CharTok(), src, rec)
        out = rec.as_json()
        assert (out["format"], rec.units, out["read"]) == (fmt, units, read), name
        assert out["tokens"] == sum(len(ids) for ids, _ in eng.fed) > 400 and out["stopped_at"] is None
        assert out["sha256"] == src.content_hash and out["size"] == (SAMPLES / name).stat().st_size


def test_readme_lists_every_sample():
    readme = (SAMPLES / "README.md").read_text()
    for name in ("lighthouse.txt", "report.html", "guide.epub", "manual.pdf"):
        assert f"## {name}" in readme
        assert (SAMPLES / name).stat().st_size < 100 * 1024


def test_generator_is_deterministic_and_matches_the_committed_files(tmp_path):
    spec = importlib.util.spec_from_file_location("make_samples", SAMPLES / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pdf, book = module.build_manual_pdf(), module.build_guide_epub()
    assert pdf == module.build_manual_pdf() and book == module.build_guide_epub()  # byte-identical rebuilds
    # Same content as the committed files (compared as read, so a newer pypdf/ebooklib byte layout is fine).
    for name, data in (("manual.pdf", pdf), ("guide.epub", book)):
        rebuilt = tmp_path / name
        rebuilt.write_bytes(data)
        new = [(p.where, p.text) for p in open_source(str(rebuilt)).passages()]
        old = [(p.where, p.text) for p in open_source(str(SAMPLES / name)).passages()]
        assert new == old, f"sample_docs/{name} is stale: run python sample_docs/make_samples.py"
