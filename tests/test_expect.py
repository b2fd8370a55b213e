"""A prompt known while reading (Engine.expect, `infinipot ask`): the read's last forward carries it as the catalyst
of the question's final distillation, so no catalyst forward runs between the read and the first token. The pot
as read, the final narrowing and the answer are those of the catalyst forwarded after the read."""

import pytest
import torch

from infinipot_cli.pot.engine import Engine, PotConfig
from tiny_models import ARCHS, VOCAB, LetterTokenizer, make_model

HEADER = [1, 2, 3, 4]
CATALYST = [11, 12, 13, 14, 15]
PROMPT = [21, 22, 23, 24, 25, 26]
QUESTION = (1, 3)


def _doc(n: int) -> list[int]:
    g = torch.Generator().manual_seed(3)
    return torch.randint(30, VOCAB, (n,), generator=g).tolist()


class _Rows:
    """Counts the query rows of every forward through the model (a spy on its decoder)."""

    def __init__(self, model):
        self.calls: list[int] = []
        inner = model.model.forward

        def forward(*a, **k):
            self.calls.append(k["input_ids"].shape[1])
            return inner(*a, **k)
        model.model.forward = forward


def _engine(model, expect: bool, n: int = 600, prompt=PROMPT):
    kept: list[torch.Tensor] = []
    eng = Engine(model, LetterTokenizer(), PotConfig(size=256, keep=128, chunk=32, final_keep=40),
                 catalyst_ids=CATALYST, on_event=lambda ev: kept.append(ev.kept_src) if ev.kind == "distill" else None)
    eng.pin(HEADER)
    if expect:
        eng.expect(prompt, QUESTION)
    eng.feed(_doc(n))
    eng.finish()
    return eng, kept


@pytest.mark.parametrize("arch", ARCHS)
def test_the_expected_prompt_rides_the_last_forward_and_narrows_the_pot_alike(arch):
    model = make_model(arch)
    spy = _Rows(model)
    base, base_kept = _engine(model, expect=False)
    eng, kept = _engine(model, expect=True)
    assert eng.cycles == base.cycles > 0
    # the pot as read is the same: the prompt's entries were cropped after its scores were taken
    assert len(eng.pot) == len(base.pot) and torch.equal(eng.pot.tok, base.pot.tok)
    for a, b in zip(eng.pot.cache.layers, base.pot.cache.layers):
        torch.testing.assert_close(a.keys, b.keys, atol=1e-4, rtol=1e-4)
    spy.calls.clear()
    want = base.answer(PROMPT, "question", max_new_tokens=4, focus=QUESTION)
    base_rows = list(spy.calls)
    spy.calls.clear()
    got = eng.answer(PROMPT, "question", max_new_tokens=4, focus=QUESTION)
    assert base_rows[0] == len(PROMPT)  # without expect(): the catalyst's own forward over the pot first
    assert spy.calls == base_rows[1:]   # with it: straight to the answer's forwards
    assert torch.equal(kept[-1], base_kept[-1])  # the final narrowing kept the same text
    assert got == want
    # the prompt was used once: the next question distills with a forward of its own, like any other
    spy.calls.clear()
    assert eng.answer(PROMPT, "question", max_new_tokens=4, focus=QUESTION) == want
    assert spy.calls[0] == len(PROMPT)


def test_an_unchanged_pot_and_the_same_prompt_are_required():
    model = make_model("llama")
    spy = _Rows(model)
    other = [31, 32, 33, 34, 35, 36]
    eng, _ = _engine(model, expect=True, prompt=other)  # another question is asked than the one expected
    spy.calls.clear()
    eng.answer(PROMPT, "question", max_new_tokens=2, focus=QUESTION)
    assert spy.calls[0] == len(PROMPT)
    eng, _ = _engine(model, expect=True)  # more text read after: the capture no longer describes the pot
    eng.feed(_doc(50))
    eng.expect(None)
    eng.finish()
    spy.calls.clear()
    eng.answer(PROMPT, "question", max_new_tokens=2, focus=QUESTION)
    assert spy.calls[0] == len(PROMPT)


def test_a_pot_never_distilled_reads_without_the_prompt():
    """A document that fits the pot is answered whole (no narrowing): the prompt is not forwarded while reading."""
    model = make_model("llama")
    spy = _Rows(model)
    eng, _ = _engine(model, expect=True, n=150)
    assert eng.cycles == 0 and sum(spy.calls) == len(HEADER) + 150
