"""Where the read expected the question's own words (scoring/asked.py): NuC's own products give each question
word's log-probability at every position; a read with the question keeps them; each unit gets its highest PMI;
the passages after the first are ranked by the words fused with it, the first stays the words' (retrieve.py)."""

import pytest
import torch

from infinipot_cli.answer import retrieve
from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.pot.scoring import nuc
from infinipot_cli.pot.scoring.asked import MAX_WORDS, AskedWords
from test_expected_words import WordTokenizer, word
from tiny_models import VOCAB, make_model


class SpellingTokenizer(WordTokenizer):
    """WordTokenizer that can encode its own words (" wabc" -> its id) and writes anything else as pieces."""

    def encode(self, text, add_special_tokens=False):
        w = text.strip()
        for i in range(10, VOCAB):
            if word(i) == w:
                return [i]
        return [1, 2]


@pytest.mark.parametrize("arch,prev", [("llama", False), ("gemma2", True)])
def test_the_asked_words_log_probabilities_are_the_heads_own(arch, prev):
    model = make_model(arch)
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(0, VOCAB, (40,), generator=g)
    cols = torch.tensor([12, 57, 99])
    with torch.no_grad():
        h = model.model(input_ids=ids[None]).last_hidden_state[0]                 # (40, d)
        p = h[0] if prev else None
        x, y = (h[1:], ids[1:]) if prev else (h, ids)
        nll = nuc.novelty(model, p, x, y, sample=False)
        got = nuc.asked_logp(model, p, x, y, nll, cols)                             # (T, 3)
        preds = torch.cat([p[None], x[:-1]]) if prev else x[:-1]
        ref = nuc.lm_head_logits(model, preds).log_softmax(-1)[:, cols]
    if prev:
        torch.testing.assert_close(got, ref, atol=1e-4, rtol=1e-4)
    else:
        assert torch.isinf(got[0]).all()                                           # the first token: no prediction
        torch.testing.assert_close(got[1:], ref, atol=1e-4, rtol=1e-4)


def test_the_question_words_followed_are_its_whole_word_content_words():
    tok = SpellingTokenizer()
    asked = AskedWords.of(tok, f"Which {word(40)} does the {word(41)} use, with xyz?")
    assert asked.words == [word(40), word(41)] and asked.ids.tolist() == [40, 41]  # "xyz" is no whole token
    assert AskedWords.of(tok, "Which one is it?") is None                          # stop words and pieces only
    many = " ".join(word(i) for i in range(20, 40))
    assert len(AskedWords.of(tok, many).words) == MAX_WORDS


def test_each_unit_gets_its_highest_pmi_over_its_positions():
    asked = AskedWords(["jump", "host"], [10, 11])
    logp = torch.full((12, 2), -8.0)
    logp[0] = float("-inf")                    # the first token read: no prediction, not in the mean
    logp[5, 0] = -1.0                          # "jump" expected at position 5
    asked.observe(0, logp[:7])                 # two chunks
    asked.observe(7, logp[7:])
    mean0 = (-8.0 * 10 - 1.0) / 11
    seg = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
    got = asked.units(torch.arange(12), seg, 4)                                    # unit 3: no position
    assert got.shape == (4, 2)
    assert got[1, 0].item() == pytest.approx(-1.0 - mean0, abs=1e-2)
    assert got[0, 0].item() == pytest.approx(-8.0 - mean0, abs=1e-2)
    assert torch.isinf(got[3]).all()
    assert AskedWords(["a"], [10]).units(torch.arange(3), torch.zeros(3, dtype=torch.long), 1) is None


def test_a_read_with_the_question_keeps_its_words_at_every_position():
    model = make_model("llama")
    tok = SpellingTokenizer()
    eng = Engine(model, tok, PotConfig(size=256, keep=128, chunk=32), catalyst_ids=[21, 22, 23])
    eng.pin([1, 2, 3, 4])
    eng.asked = AskedWords.of(tok, f"Where is the {word(40)} of the {word(77)}?")
    eng.feed(torch.randint(10, VOCAB, (300,), generator=torch.Generator().manual_seed(2)).tolist())
    eng.finish()
    assert eng.cycles > 0
    assert eng.asked.count == eng.tokens_read      # every position (the first one predicted after the header)
    got = eng.asked.logp[:eng.tokens_read].float()
    assert torch.isfinite(got).all() and (got < 0).all()


def test_the_later_passages_fuse_the_words_with_the_read_the_first_stays_the_words():
    words = torch.tensor([3.0, 2.0, 1.0, 0.0, 0.0, 0.5])
    part = torch.tensor([0.0, 0.0, 0.0, 2.0, 0.0, 1.0])
    f = retrieve.fused(words, part)
    assert float(f[4]) == 0                                                        # neither ranks it
    assert int(f.argmax()) == 0                                                    # the words' first
    order = f.argsort(descending=True).tolist()
    assert order.index(5) < order.index(2)    # raised by both over one the words rank above it
    texts = ["Use the jump host.", "Hop through another server with -J.", "Jump hosts are fine."]
    asked = AskedWords(["jump", "host"], [10, 11])
    logp = torch.full((9, 2), -9.0)
    logp[4, 0] = -0.5                          # "jump" expected in the second unit, which lacks it
    asked.observe(0, logp)
    seg = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    got = retrieve.asked_scores(texts, asked, torch.arange(9), seg)
    assert float(got[1]) > 0 and float(got[0]) == 0 and float(got[2]) == 0       # only where it is missing
