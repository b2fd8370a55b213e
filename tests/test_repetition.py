"""No loops, complete sentences: the repeated-n-gram ban and repetition penalty (repetition.py), the endings
(endings.py) and the per-kind controls (controls.py), on fake logits, a tiny random-weight model and the
built-in model."""

import pytest
import torch

from infinipot_cli.answer.controls import answer_controls
from infinipot_cli.runtime.generate import AnswerCache, generate
from infinipot_cli.answer.endings import CompleteSentences, ends_sentence, last_sentence_end
from infinipot_cli.answer.repetition import RepetitionGuard
from infinipot_cli.answer.stopping import Stopper, StopStream
from helpers import PROMPT
from tiny_models import make_model


def ngrams(ids, n):
    return [tuple(ids[i:i + n]) for i in range(len(ids) - n + 1)]


def fake_decode(prefer, steps, guard=None, vocab=10):
    """Greedy decoding over a fake logits source: `prefer(gen)` -> the ids in order of preference."""
    gen = []
    for _ in range(steps):
        logits = torch.zeros(vocab)
        for rank, t in enumerate(prefer(gen)):
            logits[t] = 10.0 - rank
        if guard is not None:
            logits = guard(gen, logits)
        gen.append(int(logits.argmax()))
    return gen


def looping(gen):
    """A source that loops 1 2 3 1 2 3 ... (then prefers 4, 5, ... in order)."""
    return [[1, 2, 3][len(gen) % 3]] + list(range(4, 10)) + [0]


class DigitTok:
    """ids 0-4 decode to digits, 5-9 to words."""

    def decode(self, ids, skip_special_tokens=True):
        return "".join(str(i) if i < 5 else f" w{i}" for i in ids)


def test_the_ban_breaks_a_loop_of_three_tokens():
    plain = fake_decode(looping, 12)
    assert plain == [1, 2, 3] * 4
    guard = RepetitionGuard(ngram=3)
    got = fake_decode(looping, 12, guard)
    assert len(set(ngrams(got, 3))) == len(ngrams(got, 3))  # no 3-gram twice
    assert got[:3] == [1, 2, 3] and guard.banned > 0


def test_the_ban_changes_nothing_without_repetition():
    def counting(gen):
        return [len(gen) % 10] + [0]
    assert fake_decode(counting, 10, RepetitionGuard(ngram=3)) == list(range(10))


def test_ngrams_of_digits_only_are_not_loops():
    def digits(gen):  # a pass key 7 2 7 2 7 2
        return [[2, 4][len(gen) % 2]] + [9, 8]
    tok = DigitTok()
    assert fake_decode(digits, 6, RepetitionGuard(3, tokenizer=tok)) == [2, 4, 2, 4, 2, 4]
    assert fake_decode(digits, 6, RepetitionGuard(3)) != [2, 4, 2, 4, 2, 4]  # every id a word: banned


def test_penalty_prefers_new_words():
    guard = RepetitionGuard(ngram=0, penalty=2.0)
    logits = torch.tensor([0.0, 4.0, 3.0, -1.0])
    out = guard([1, 3], logits.clone())
    assert out.tolist() == [0.0, 2.0, 3.0, -2.0]
    with pytest.raises(ValueError):
        RepetitionGuard(3, penalty=0.5)


def test_generate_with_a_guard_on_a_tiny_model():
    model = make_model("llama")
    plain = generate(model, AnswerCache(256), PROMPT, 60)
    assert len(set(ngrams(plain, 3))) < len(ngrams(plain, 3)), "the random model should loop"
    guarded = generate(model, AnswerCache(256), PROMPT, 60, logits_fn=RepetitionGuard(3))
    assert len(set(ngrams(guarded, 3))) == len(ngrams(guarded, 3))
    # up to the first repeated 3-gram the guard changes nothing
    seen, first = set(), None
    for i, g in enumerate(ngrams(plain, 3)):
        if g in seen:
            first = i + 2
            break
        seen.add(g)
    assert guarded[:first] == plain[:first]


# ---- endings ----------------------------------------------------------------------------------------
def test_sentence_ends():
    assert ends_sentence("It covers the FDL. It ends here.")
    assert not ends_sentence("It covers various aspects, including spell checking,")
    assert not ends_sentence("See Dr.")  # an abbreviation
    text = "Version 4.19.0 fixed it. Then e.g. more"
    assert text[:last_sentence_end(text)] == "Version 4.19.0 fixed it."
    assert ends_sentence("Points:\n- one\n- two\n".rstrip() + ".")
    assert last_sentence_end("- one item\n- two") == len("- one item")


def test_complete_sentences_trims_and_waits_for_the_end():
    c = CompleteSentences(Stopper("summary"), budget=5, grace=10)
    assert c.limit == 15
    assert c.trim("The manual covers ASN.1 parsing. It covers spell checking, and") == "The manual covers ASN.1 parsing."
    assert c.trim("no end at all") == "no end at all"
    assert not c.should_stop([1] * 4, "One. Two.")          # under budget: goes on
    assert c.should_stop([1] * 5, "One. Two.")              # budget spent, the sentence is complete
    assert not c.should_stop([1] * 6, "One. Two and")       # in the grace: finishes the sentence
    out = []
    s = StopStream(c, out.append)
    first = "The manual covers parsing of the syntax trees and the encoding of their values in DER."
    for piece in first.split(" ") + ["It", "covers", "spell", "checking,", "line", "editing,", "history,", "jobs",
                                     "and", "many", "other", "things", "like"]:
        s(piece + " ")
        assert "".join(out) in ("", first)  # only complete sentences reach the stream
    assert "".join(out) == first
    assert s.finish() == first
    assert "".join(out) == first


def test_controls_per_kind():
    q = answer_controls("ask", None, 64)
    assert q.mode == "question" and q.limit == 64 and q.guard.ngram == 4 and q.guard.penalty == 1.0
    s = answer_controls("summarize", None, 100)
    assert s.mode == "summary" and s.limit > 100 and s.guard.ngram == 3


def test_builtin_summary_of_a_sample_ends_on_a_sentence_and_does_not_loop(builtin):
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.engine import Engine, PotConfig
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source

    P = Prompts(builtin.tokenizer)
    cat, focus = P.catalyst("general")
    eng = Engine(builtin.model, builtin.tokenizer, PotConfig(), catalyst_ids=cat, catalyst_focus=focus)
    eng.pin(P.header_ids())
    src = open_source("sample_docs/report.html")
    read_source(eng, builtin.tokenizer, src, SourceRecord(path=src.path, format=src.format))
    c = answer_controls("summarize", builtin.tokenizer, 60)  # short: the budget runs out mid-text
    text = c.stopper.trim(eng.answer(P.summary_ids(), c.mode, max_new_tokens=c.limit, stop_ids=P.stop_ids("summary"),
                                     should_stop=c.stopper.should_stop, logits_fn=c.guard))
    assert text and ends_sentence(text), text
    words = text.lower().split()
    assert max((ngrams(words, 3).count(g) for g in set(ngrams(words, 3))), default=0) <= 2, text
