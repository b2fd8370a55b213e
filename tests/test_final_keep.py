"""The final narrowing (final_keep) applies only to pots distilled while reading: a document that fits the pot
whole is answered from all of it (measured in the README)."""

from infinipot_cli.pot.engine import Engine, PotConfig
from tiny_models import VOCAB, LetterTokenizer, make_model

import torch

HEADER = [1, 2, 3, 4]
CATALYST = [11, 12, 13, 14, 15]
PROMPT = [21, 22, 23, 24, 25, 26]
QUESTION = (1, 3)


def _read(model, n, **kw):
    g = torch.Generator().manual_seed(3)
    eng = Engine(model, LetterTokenizer(), PotConfig(size=256, keep=128, chunk=32, final_keep=40, **kw),
                 catalyst_ids=CATALYST)
    eng.pin(HEADER)
    eng.feed(torch.randint(30, VOCAB, (n,), generator=g).tolist())
    eng.finish()
    return eng


def test_a_pot_that_was_never_distilled_is_not_narrowed():
    model = make_model("llama")
    whole = _read(model, 150)  # fits the pot: never distilled
    assert whole.cycles == 0 and len(whole.pot) == 154
    whole.answer(PROMPT, "question", max_new_tokens=4, focus=QUESTION)
    assert whole.cycles == 0 and len(whole.pot) == 154
    read = _read(model, 600)   # distilled while reading: narrowed to final_keep before the answer
    assert read.cycles > 0
    cycles = read.cycles
    n = len(read.pot)
    read.answer(PROMPT, "question", max_new_tokens=4, focus=QUESTION)
    assert read.cycles == cycles and len(read.pot) == n  # narrowed to 40 for the answer, then restored


def test_the_answers_distillation_is_undone_whole_so_a_pot_answers_every_question_alike():
    """A pot too full for the prompt and the answer is distilled once before answering (§3.2). That distillation,
    like the narrowing, is undone after the answer: it is not a reading cycle and archives nothing (the evicted
    text is back in the pot), so the next question meets the same pot and the same rules."""
    model = make_model("llama")
    eng = _read(model, 245)  # 249 entries: never distilled, but more than 256 - 6 - 4 leaves beside an answer
    assert eng.cycles == 0 and len(eng.pot) == 249
    archived = eng.archive.tokens
    answers = [eng.answer(PROMPT, "question", max_new_tokens=4, focus=QUESTION) for _ in range(3)]
    assert answers[0] == answers[1] == answers[2]
    assert eng.cycles == 0 and eng.archive.tokens == archived and len(eng.pot) == 249
    read = _read(model, 600)
    cycles, archived = read.cycles, read.archive.tokens
    assert cycles > 0 and archived > 0
    read.answer(PROMPT, "question", max_new_tokens=4, focus=QUESTION)
    assert read.cycles == cycles and read.archive.tokens == archived
