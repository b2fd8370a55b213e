"""Location labels: one module writes them (the readers) and reads them back (evidence, key points, outline)."""

import os

import pytest

from infinipot_cli.answer import evidence as ev
from infinipot_cli.documents import open_source
from infinipot_cli.answer.keypoints import where_fields
from infinipot_cli.answer.outline import Part, from_labels, label_section
from infinipot_cli.documents.where import Where, join, kind_of, without

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("where,label", [
    (Where(page="12"), "p. 12"),
    (Where(page="iv", section="3 Utilities"), "p. iv · 3 Utilities"),
    (Where(chapter=3), "ch. 3"),
    (Where(chapter=3, section="The Storm"), "ch. 3 · The Storm"),
    (Where(section="Basic usage"), "§ Basic usage"),
    (Where(line=120), "line 120"),
    (Where(line=120, section="OPTIONS"), "line 120 · OPTIONS"),
    (Where(source="a.pdf", page="3", section="Usage"), "a.pdf · p. 3 · Usage"),
    (Where(source="story.epub", chapter=2, section="Storm"), "story.epub · ch. 2 · Storm"),
    (Where(source="notes.txt", line=7), "notes.txt · line 7"),
    (Where(source="page.html", section="Intro"), "page.html · § Intro"),
    (Where(source="page.html"), "page.html"),
    (Where(page="5", section="A · B"), "p. 5 · A · B"),  # a title may hold the separator
    (Where(), ""),
])
def test_every_label_form_round_trips(where, label):
    assert where.label() == label
    assert Where.parse(label) == where


def test_parts_of_a_label():
    assert [kind_of(p) for p in ("p. iv", "ch. 3", "line 9", "chapter one", "page 3", "§ X")] == \
        ["page", "chapter", "line", None, None, None]
    assert join("a.txt", "", "line 4") == "a.txt · line 4"
    assert without("a.txt · line 40", "line") == "a.txt"
    assert without("p. 5 · 2 Parsing", "page", "line") == "2 Parsing"


def test_an_epub_chapter_is_a_chapter_for_key_points_too():
    # the EPUB reader writes "ch. N"; the key points' fallback read it as a source named "ch. 3" before
    assert where_fields("ch. 3 · Getting started") == {"chapter": 3, "section": "Getting started"}
    assert where_fields("ch. 3") == {"chapter": 3}
    assert where_fields("story.epub · ch. 2 · Storm") == {"chapter": 2, "source": "story.epub", "section": "Storm"}
    # a title that looks like a location is a title
    assert where_fields("ch. 3 · chapter one") == {"chapter": 3, "section": "chapter one"}


def test_the_three_readers_of_labels_agree():
    for label in ("p. 12 · 3 Utilities", "ch. 3 · Getting started", "§ Basic usage", "line 40",
                  "a.pdf · p. 3 · Usage", "b.epub · ch. 2 · Storm", "notes.txt · line 7"):
        w = Where.parse(label)
        fields, located = where_fields(label), ev.parse_where(label)
        kind = w.kind()
        if kind:
            assert located[kind] == getattr(w, kind) and str(fields[kind]) == str(getattr(w, kind))
        assert fields.get("section", "") == located.get("section", "") == w.section
        assert fields.get("source", "") == w.source
        assert ev.where_label(located) == Where(**{k: v for k, v in vars(w).items() if k != "source"}).label()


def test_outline_parts_from_chapter_labels():
    assert label_section("ch. 3 · Title") == "ch. 3 · Title"  # two untitled chapters stay two parts
    prov = [(0, "ch. 1 · Arrival"), (40, "ch. 2"), (90, "ch. 3 · Storm")]
    assert from_labels(prov) == [Part(0, "Arrival"), Part(40, "ch. 2"), Part(90, "Storm")]


@pytest.mark.parametrize("name,kind", [("guide.epub", "chapter"), ("manual.pdf", "page"),
                                       ("lighthouse.txt", "line")])
def test_the_readers_write_labels_that_parse(name, kind):
    src = open_source(os.path.join(ROOT, "sample_docs", name))
    labels = [p.where for p in src.passages()]
    assert labels and all(Where.parse(w).kind() == kind for w in labels)
    assert all(Where.parse(w).label() == w for w in labels)


def test_html_sections_parse():
    src = open_source(os.path.join(ROOT, "sample_docs", "report.html"))
    labels = [p.where for p in src.passages() if p.where]
    assert labels and all(Where.parse(w).kind() is None and Where.parse(w).section for w in labels)
    assert all(Where.parse(w).label() == w for w in labels)
