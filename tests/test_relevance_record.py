"""The relevance record (scoring/record.py): with a question as the catalyst, every document token read is scored
by the distillations that find it in the pot (and the last piece by the expected prompt), the highest score kept;
keeping the record changes nothing the engine reads or keeps."""

import pytest
import torch

from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.pot.scoring.record import RelevanceRecord
from tiny_models import ARCHS, VOCAB, LetterTokenizer, make_model

HEADER = [1, 2, 3, 4]
PROMPT = [21, 22, 23, 24, 25, 26]
QUESTION = (1, 3)  # the question's rows inside the catalyst / prompt


def _read(model, record: RelevanceRecord | None, focus=QUESTION, n: int = 600) -> Engine:
    eng = Engine(model, LetterTokenizer(), PotConfig(size=256, keep=128, chunk=32), catalyst_ids=PROMPT,
                 catalyst_focus=focus)
    eng.record = record
    eng.pin(HEADER)
    eng.expect(PROMPT, focus)
    g = torch.Generator().manual_seed(5)
    eng.feed(torch.randint(30, VOCAB, (n,), generator=g).tolist())
    eng.finish()
    return eng


@pytest.mark.parametrize("arch", ARCHS)
def test_every_token_read_is_scored_and_the_read_is_unchanged(arch):
    model = make_model(arch)
    plain = _read(model, None)
    rec = RelevanceRecord(per_layer=True)
    eng = _read(model, rec)
    assert eng.cycles == plain.cycles > 0
    assert torch.equal(eng.pot.src, plain.pot.src) and torch.equal(eng.pot.tok, plain.pot.tok)
    scores = rec.scores(eng.tokens_read)
    assert scores is not None and scores.shape == (eng.tokens_read,)
    assert torch.isfinite(scores).all()                       # the last piece too: the expected prompt scored it
    assert rec.layers.shape[0] == model.config.num_hidden_layers
    assert torch.isfinite(rec.layers[:, :eng.tokens_read]).any(0).all()


def test_the_highest_score_is_kept():
    rec = RelevanceRecord()
    rel = torch.zeros(2, 1, 3)
    rec.observe(torch.tensor([-1, 0, 1]), torch.tensor([9.0, 0.5, 0.2]), rel)  # the pinned header is skipped
    rec.observe(torch.tensor([1, 2]), torch.tensor([0.1, 0.7]), rel[..., :2])
    assert rec.scores(4).tolist() == pytest.approx([0.5, 0.2, 0.7, float("-inf")])


def test_nothing_scored_without_a_question():
    model = make_model("llama")
    rec = RelevanceRecord()
    _read(model, rec, focus=None)
    assert rec.scores(10) is None
