"""Evidence never runs across a source, chapter, page or section boundary, and is credited to the part it
comes from: two sources read into one pot, an EPUB with two chapters, stdin named `stdin`."""

from __future__ import annotations

import pytest
import torch

from infinipot_cli.answer import evidence as ev
from infinipot_cli.pot.config import PotConfig
from infinipot_cli.documents import open_source
from infinipot_cli.pot.engine import Engine
from infinipot_cli.pot.prompts import Prompts
from infinipot_cli.pot.reader import SourceRecord, read_source
from helpers import make_epub
from tiny_models import make_model_for

ARRIVAL = ("Mara came to the island of Vell on a grey morning in October, carrying one bag and a letter from her "
           "aunt. The harbour master read the letter twice and then led her up the hill. Her room looked over the "
           "harbour, and she did not sleep until dawn.")
STORM = ("The storm broke on the third night and tore the roof from the net shed. Osric counted forty-two boats "
         "in the harbour when the wind finally dropped. Mara helped him mend the nets for eleven days.")
SED = ("SED(1) User Commands SED(1)\n\nNAME\n       sed - stream editor for filtering and transforming text\n\n"
       "SYNOPSIS\n       sed [OPTION]... {script-only-if-no-other-script} [input-file]...\n\nDESCRIPTION\n"
       "       Sed is a stream editor. A stream editor is used to perform basic text transformations on an input "
       "stream.\n")


@pytest.fixture(scope="module")
def model(builtin_tok):
    return make_model_for(builtin_tok)


def _book(tmp_path):
    p = tmp_path / "story.epub"
    p.write_bytes(make_epub([("ch1.xhtml", f"<html><body><h1>Arrival</h1><p>{ARRIVAL}</p></body></html>", "Arrival"),
                             ("ch2.xhtml", f"<html><body><h1>Storm</h1><p>{STORM}</p></body></html>", "Storm")]))
    return str(p)


def _read(model, tok, paths):
    """The sources read into one unbounded pot as `ask -i A -i B` reads them (labelled by file name)."""
    P = Prompts(tok)
    eng = Engine(model, tok, PotConfig(method="full").validate(), catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    sources = []
    for path in paths:
        rec = SourceRecord(path=path, format="?")
        label = path.rsplit("/", 1)[-1] if len(paths) > 1 else ""
        read_source(eng, tok, open_source(path), rec, label=label)
        sources.append((path, rec.tokens))
    return P, eng, sources


def _evidence(P, eng, sources, question, answer):
    prompt, focus = P.ask(question)
    eng.answer(prompt, "question", 2, P.stop_ids(), focus=focus)
    return ev.evidence(eng, ev.Context.of(eng), prompt, question, answer, sources)


def _flat(text):
    return " ".join(text.replace(" …", "").split())


@pytest.mark.parametrize("question,answer", [
    ("When did Mara sleep?", "She did not sleep until dawn."),
    ("How long did Mara mend the nets?", "Mara helped him mend the nets for eleven days."),
    ("What is sed?", "sed is a stream editor for filtering and transforming text."),
])
def test_a_passage_stays_in_its_source_and_chapter(model, builtin_tok, tmp_path, question, answer):
    book = _book(tmp_path)
    sed = tmp_path / "man_sed.txt"
    sed.write_text(SED)
    P, eng, sources = _read(model, builtin_tok, [book, str(sed)])
    out = _evidence(P, eng, sources, question, answer)
    assert out
    chapters = {1: _flat("Arrival " + ARRIVAL), 2: _flat("Storm " + STORM)}
    for p in out:
        text = _flat(p.text)
        if p.source.endswith("story.epub"):
            assert text in chapters[p.where["chapter"]], (p.where, p.text)  # one chapter, and the right one
        else:
            assert p.source.endswith("man_sed.txt") and text in _flat(SED), (p.source, p.text)
        assert not ("dawn" in text and "SED(1)" in text) and not ("eleven days" in text and "SED" in text)


def test_the_second_source_starts_on_a_new_paragraph(model, builtin_tok, tmp_path):
    """A source read after another is separated from it by a blank line (the first sentence of the second
    source is not the last sentence of the first), and a resumed source is read with the same tokens."""
    book = _book(tmp_path)
    sed = tmp_path / "man_sed.txt"
    sed.write_text(SED)
    _, eng, sources = _read(model, builtin_tok, [book, str(sed)])
    text = builtin_tok.decode(ev.document_tokens(eng, 0, eng.tokens_read))
    assert "days.\n\nSED(1)" in text
    assert sources[1][1] == eng.tokens_read - sources[0][1]


def test_parts_of_a_provenance():
    prov = [(0, "a.epub · ch. 1 · Arrival"), (40, "a.epub · ch. 2 · Storm"), (90, "b.txt · line 1"),
            (120, "b.txt · line 30"), (150, "p. 3 · Intro"), (170, "p. 4 · Intro")]
    assert ev.part_key("b.txt · line 30") == "b.txt" and ev.part_key("line 4") == ""
    assert ev.part_starts(prov) == [40, 90, 150, 170]  # not at 120: the same file, further down
    assert ev.part_starts([(0, "line 1"), (50, "line 20")], [("a.txt", 30), ("b.txt", 30)]) == [30]
    src = torch.tensor([0, 39, 40, 89, 90, 200])
    assert ev.part_ids(src, [40, 90]).tolist() == [0, 0, 1, 1, 2, 2]


def test_widening_stops_at_a_part_boundary():
    texts = ["Alpha one two.", "Beta three four.", "Gamma five six.", "Delta seven."]
    seg = torch.tensor([0, 1, 2, 3])
    src = torch.tensor([0, 1, 2, 3])  # all adjacent in the document
    scores = torch.tensor([0.0, 5.0, 0.1, 0.2])
    widened = ev.choose(seg, texts, src, scores, max_passages=1, max_words=12)[0][0]
    assert widened == [0, 1, 2] or widened == [1, 2, 3] or len(widened) > 2
    assert ev.choose(seg, texts, src, scores, max_passages=1, max_words=12, part_at=[2])[0][0] == [0, 1]


def test_stdin_is_named_stdin():
    assert ev.source_of(3, [("-", 10)]) == "stdin"
    assert ev.source_of(12, [("a.txt", 10), ("-", 10)]) == "stdin"


def test_key_points_stay_in_their_source(model, builtin_tok, tmp_path):
    """A key point is one source's sentence: the last sentence of one source and the first of the next are two."""
    from infinipot_cli.answer.keypoints import document_key_points

    storm = "The storm broke on the third night and tore the roof from the net shed."
    p = tmp_path / "story.epub"
    p.write_bytes(make_epub([("ch1.xhtml", f"<html><body><h1>Arrival</h1><p>{ARRIVAL}</p></body></html>", "Arrival"),
                             ("ch2.xhtml", f"<html><body><h1>Storm</h1><p>{storm}</p></body></html>", "Storm")]))
    sed = tmp_path / "man_sed.txt"
    sed.write_text("Sed is a stream editor for filtering and transforming text in a pipeline.\n\n" + SED)
    _, eng, _ = _read(model, builtin_tok, [str(p), str(sed)])
    points = document_key_points(eng)
    assert points
    texts = [_flat("Arrival " + ARRIVAL), _flat("Storm " + storm), _flat(sed.read_text())]
    for k in points:
        assert any(_flat(k["text"]) in t for t in texts), k
