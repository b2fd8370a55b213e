"""Evidence keeps to its words, headings and the "…" of its cuts counted: at most MAX_WORDS words in all over
the sample documents and a man page of many short option lines, never an empty heading (an HTML section's part
begins at the blank line before its title, shown as " … " before the passage), and a passage cut to its share
keeps the sentence the answer is in (its core), not just its first words. It was 64 + 6 words for the first
passage and 32 + 6 for each other, the heading outside them: 181 words for "What was the keeper's cat
called?"."""

from __future__ import annotations

import pytest

from infinipot_cli.answer import answering, retrieve
from infinipot_cli.answer import evidence as ev
from infinipot_cli.pot.archive import count_words

OPTIONS = "\n".join(f"       -{c}, --{w}-{v}\n              {v} the {w} of each widget."
                    for c, w, v in zip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMN",
                                       ("spool queue journal socket cache mount owner group mode mask " * 4).split(),
                                       ("set clear rotate show lock drop keep sync " * 5).split()))
MAN = (f"WIDGETD(8)              System Manager's Manual              WIDGETD(8)\n\nNAME\n       widgetd - the widget "
       f"daemon\n\nOPTIONS\n{OPTIONS}\n\nEXIT STATUS\n       Exit status is 3 when the spool is locked.\n")

QUESTIONS = {
    "lighthouse.txt": ["What was the keeper's cat called?", "Who kept the lighthouse?",
                       "How many steps lead to the lamp room?", "Which ship got into trouble in the storm?",
                       "When was the light automated?"],
    "report.html": ["How many puffins did the survey count on Kestrel Rock?", "Who led the survey?",
                    "Which boat took the team to the island?", "When should the north slope landing be closed?"],
    "manual.pdf": ["How much water to recalibrate the rain gauge?", "What is the factory firmware version?"],
    "guide.epub": ["How much is a return ticket?"],
    "widgetd.8": ["Which option rotates the journal?", "What does --mask-drop do?", "Which option locks the spool?",
                  "What is the exit status when the spool is locked?"],
}


@pytest.fixture(scope="module")
def docs(builtin_tok, tmp_path_factory):
    """Each document read into an unbounded pot (its evidence is drawn from the whole document as read)."""
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source
    from tiny_models import make_model_for

    man = tmp_path_factory.mktemp("man") / "widgetd.8.txt"
    man.write_text(MAN)
    model = make_model_for(builtin_tok)
    out = {}
    for name in QUESTIONS:
        path = str(man) if name == "widgetd.8" else f"sample_docs/{name}"
        P = Prompts(builtin_tok)
        eng = Engine(model, builtin_tok, PotConfig(method="full").validate(), catalyst_ids=P.catalyst("general")[0])
        eng.pin(P.header_ids())
        rec = SourceRecord(path=path, format="?")
        read_source(eng, builtin_tok, open_source(path), rec)
        out[name] = (eng, [(path, rec.tokens)])
    return out


def _shown(eng, sources, question, unit=None):
    found, doc, _, _ = retrieve.passages(eng, question, sources, n=ev.MAX_PASSAGES)
    return answering.evidence(eng, found[:ev.MAX_PASSAGES], doc, sources, unit), doc


@pytest.mark.parametrize("name,question", [(n, q) for n, qs in QUESTIONS.items() for q in qs])
def test_the_evidence_keeps_to_its_words_and_shows_no_empty_heading(docs, name, question):
    eng, sources = docs[name]
    proof, _ = _shown(eng, sources, question)
    assert proof
    texts = [p.text for p in proof]
    assert sum(count_words(t) for t in texts) <= ev.MAX_WORDS, [(count_words(t), t) for t in texts]
    for t in texts:
        assert t.strip() and not t.startswith("\u2026 \u2026") and " \u2026 \u2026 " not in t, t
        head = t.split(" \u2026 ", 1)[0]
        assert head.strip() and head.strip() != "\u2026", t  # no " … text": an empty heading


def test_a_long_passage_is_cut_around_its_core(docs):
    """The man page's options: a passage widened past the top unit's line keeps that line, its option name
    with it; the lighthouse's cat: the sentence with the answer, not the passage's first words."""
    eng, sources = docs["widgetd.8"]
    proof, _ = _shown(eng, sources, "Which option locks the spool?")
    assert any("--spool-lock" in p.text and "lock the spool" in p.text for p in proof), [p.text for p in proof]
    eng, sources = docs["lighthouse.txt"]
    proof, _ = _shown(eng, sources, "What was the keeper's cat called?")
    assert "The keeper's cat was named Biscuit." in proof[0].text


def test_the_answer_unit_is_kept_in_its_passage(docs):
    """`unit` (the sentence the answer was taken from): its passage comes first and shows that sentence, even
    where the passage it was found in is longer than its share."""
    eng, sources = docs["lighthouse.txt"]
    found, doc, _, _ = retrieve.passages(eng, "Who was Clara Voss?", sources, n=ev.MAX_PASSAGES)
    _, _, texts = doc
    for f in found[:ev.MAX_PASSAGES]:
        for u in f.units:
            if not texts[u].strip():
                continue
            proof = answering.evidence(eng, found[:ev.MAX_PASSAGES], doc, sources, u)
            assert sum(count_words(p.text) for p in proof) <= ev.MAX_WORDS
            words = texts[u].split()
            assert " ".join(words[:4]) in proof[0].text or " ".join(words[-4:]) in proof[0].text, (texts[u],
                                                                                                  proof[0].text)


def test_the_whole_answer_path_shows_its_answer_within_the_words(docs):
    """answering.answer with the answer written: the evidence has the sentence it was taken from."""
    from infinipot_cli.pot.prompts import Prompts

    eng, sources = docs["lighthouse.txt"]
    reply = answering.answer(eng, Prompts(eng.tok), "What was the keeper's cat called?", sources,
                             lambda src, ids: "The keeper's cat was named Biscuit.")
    assert reply is not None and "Biscuit" in reply.text
    assert "Biscuit" in reply.evidence[0].text
    assert sum(count_words(p.text) for p in reply.evidence) <= ev.MAX_WORDS


@pytest.mark.parametrize("limit", [3, 5, 8, 12, 20])
def test_clip_to_keeps_its_range_within_its_words(limit):
    text = ("First sentence of the passage here. Second one follows it now. The answer is forty-two. "
            "Then a closing sentence ends it all.")
    cuts = [0, text.index("Second"), text.index("The answer"), text.index("Then")]
    a = text.index("The answer")
    shown, at = ev.clip_to(text, limit, [(a, a + len("The answer is forty-two."))], cuts)
    assert count_words(shown) <= limit, shown
    if limit >= 6:  # "… The answer is forty-two. …": the range and a mark on either side
        assert "The answer is forty-two." in shown, shown
    assert text[at:].split()[0] == shown.removeprefix("\u2026 ").split()[0]
    wide = "灯塔看守的猫名叫饼干它是一只姜黄色的猫" * 4
    assert count_words(ev.clip_to(wide, limit)[0]) <= limit
