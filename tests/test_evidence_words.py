"""Evidence stays within its words on a man page: a section header is a unit of its own (a byte-level vocabulary
writes a line break with the next line's indentation as one token, and "EXPRESSION" ran on into the sentence
under it, 17 words shown before every passage of the section), and a passage is widened to its share of words,
not beyond it (find(1): 211-242 words where about 160 are meant)."""

from __future__ import annotations

import random
import textwrap

import pytest
import torch

from infinipot_cli.answer import evidence as ev
from infinipot_cli.pot.archive import count_words

WORDS = ("widget frobnicate directory level queue daemon socket journal spool watch rotate archive compress "
         "signal timeout retry backoff cache owner group mode mask device mount export import").split()


def option_line(rnd: random.Random, k: int) -> str:
    """A GNU-style option: its names and argument on the first line, then a description of 25-45 words wrapped
    at 80 columns under a 14-space indent (as `man | col -b` prints it)."""
    word = WORDS[k % len(WORDS)]
    head = f"       -{chr(97 + k % 26)}, --{word}-{WORDS[(k * 7) % len(WORDS)]}={word.upper()}[,{word.upper()}...]"
    desc = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(25, 45)))
    desc = f"set the {word} of every widget the daemon finds; {desc}, unless the {word} is locked."
    body = textwrap.fill(desc, 80, initial_indent=" " * 14, subsequent_indent=" " * 14)
    return f"{head}\n{body}\n"


def man_page(seed: int = 3) -> str:
    rnd = random.Random(seed)
    prose = " ".join(rnd.choice(WORDS) for _ in range(120))
    description = textwrap.fill(f"Frobctl manages the widget daemon. It {prose}.", 80, initial_indent=" " * 7,
                                subsequent_indent=" " * 7)
    options = "\n".join(option_line(rnd, k) for k in range(40))
    return (f"FROBCTL(8)                  System Manager's Manual                 FROBCTL(8)\n\nNAME\n"
            f"       frobctl - control the widget frobnication daemon\n\nSYNOPSIS\n       frobctl [OPTION]... COMMAND\n\n"
            f"DESCRIPTION\n{description}\n\nOPTIONS\n{options}\nEXIT STATUS\n"
            f"       Exit status is zero when the daemon accepted the command, and two when it was not running.\n")


@pytest.fixture(scope="module")
def read(builtin_tok, tmp_path_factory):
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source
    from tiny_models import make_model_for

    path = tmp_path_factory.mktemp("man") / "frobctl.8.txt"
    path.write_text(man_page())
    P = Prompts(builtin_tok)
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    rec = SourceRecord(path=str(path), format="text")
    read_source(eng, builtin_tok, open_source(str(path)), rec)
    return P, eng, [(str(path), rec.tokens)]


QUESTIONS = ["Which option sets the spool of every widget?", "What does --journal-mount do?",
             "How do I set the watch directory?", "Which option rotates the archive?",
             "What is the exit status when the daemon was not running?", "What does frobctl manage?",
             "Which option sets the socket timeout?", "How is the retry backoff set?"]


def test_a_section_header_is_a_unit_of_its_own(read):
    _, eng, _ = read
    _, _, texts = ev.document_units(eng)
    for name in ("OPTIONS", "EXIT STATUS", "DESCRIPTION"):
        unit = next(t for t in texts if t.lstrip("\n").startswith(name))
        assert unit.strip() == name, unit


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_evidence_of_an_answer_stays_within_its_words(read, question):
    """The passages `ask` shows (answering.evidence over the passages found: 64 words for the first, 32 each
    other), their part's header in front of those that do not show it."""
    from infinipot_cli.answer import answering, retrieve

    _, eng, sources = read
    found, doc, _, _ = retrieve.passages(eng, question, sources, n=ev.MAX_PASSAGES)
    proof = answering.evidence(eng, found[:ev.MAX_PASSAGES], doc, sources, None)
    assert proof
    heads = [p.text.split(" \u2026 ", 1)[0] for p in proof if " \u2026 " in p.text]
    assert all(count_words(h) <= 2 for h in heads), heads  # a header line, not the sentence under it
    total = sum(count_words(p.text) for p in proof)
    assert total <= ev.MAX_WORDS + sum(count_words(h) for h in heads) + 6, [p.text for p in proof]


def test_the_evidence_rule_keeps_its_words_for_real(read):
    """evidence.evidence (the answer's attention and words): at most MAX_PASSAGES passages of MAX_WORDS /
    MAX_PASSAGES words each, a long unit cut to that too."""
    P, eng, sources = read
    question = "Which option sets the spool of every widget?"
    prompt, focus = P.ask(question)
    eng.answer(prompt, "question", 2, P.stop_ids(), focus=focus)
    out = ev.evidence(eng, ev.Context.of(eng), prompt, question, "It sets the spool of every widget.", sources)
    assert out and len(out) <= ev.MAX_PASSAGES
    per = ev.MAX_WORDS // ev.MAX_PASSAGES
    assert all(count_words(p.text) <= per for p in out), [count_words(p.text) for p in out]


def test_a_widening_stops_at_its_words():
    texts = ["-w, --watch=DIR\n", "set the watch directory of every widget the daemon finds\n",
             "and rotate its journal when it grows past the limit\n", "unless the directory is locked.\n",
             "-x, --export=FILE\n"]
    seg = torch.arange(5)
    near = ev.Neighbours(seg, seg, texts)
    words = [count_words(t) for t in texts]  # 1, 10, 10, 4, 1
    for per in (5, 11, 15, 21, 25, 40):
        got = near.widen(0, per)
        assert sum(words[k] for k in got) <= per, (per, got)
    assert near.widen(1, 4) == [1]  # a unit alone may be longer (it is clipped when shown)
