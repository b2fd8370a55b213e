"""The words the model expected while reading (scoring/expected.py): NuC's own products give each position's most
probable tokens; a read keeps, per window of positions, the whole words of most probability; a pot keeps them;
a question's word that a sentence lacks but the model expected there raises it (retrieve.expected_scores)."""

import pytest
import torch

from infinipot_cli.answer import retrieve
from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.pot.scoring import nuc
from infinipot_cli.pot.scoring.expected import KEEP, TOP, WINDOW, ExpectedWords, whole_words
from tiny_models import VOCAB, LetterTokenizer, make_model


class WordTokenizer(LetterTokenizer):
    """Token i >= 10 is the word "w<i>" after a space (a byte-level BPE's "Ġw12"); ids below 10 are pieces."""

    def __len__(self):
        return VOCAB

    def convert_ids_to_tokens(self, ids):
        return [f"\u0120w{'abcdefghij'[i % 10]}{'abcdefghij'[i // 10 % 10]}{'abcdefghij'[i // 100]}"
                if i >= 10 else f"p{i}" for i in ids]


def word(i: int) -> str:
    return WordTokenizer().convert_ids_to_tokens([i])[0][1:]


@pytest.mark.parametrize("arch,block", [("llama", 100), ("gemma2", 100), ("llama", 3)])
def test_the_top_tokens_come_from_the_same_products_as_the_novelty(arch, block, monkeypatch):
    """Per vocabulary block a row is searched only where the block's maximum beats its best so far: the same top-k
    as the whole head's, with several blocks and a partial last one (100), or blocks smaller than the k (3)."""
    monkeypatch.setitem(nuc.VOCAB_BLOCK, "cpu", block)
    model = make_model(arch)
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, VOCAB, (50,), generator=g)
    with torch.no_grad():
        h = model.model(input_ids=ids[None]).last_hidden_state[0]
        plain = nuc.novelty(model, None, h, ids, sample=False)
        nov, top, logp = nuc.novelty(model, None, h, ids, sample=False, top=5)
        ref = nuc.lm_head_logits(model, h[:-1]).log_softmax(-1).topk(5, -1)
    torch.testing.assert_close(nov, plain)
    assert top.shape == logp.shape == (50, 5)
    assert top[0].tolist() == [-1] * 5 and torch.isinf(logp[0]).all()  # the first token: no prediction
    assert top[1:].tolist() == ref.indices.tolist()
    torch.testing.assert_close(logp[1:], ref.values, atol=1e-5, rtol=1e-5)


def test_windows_keep_the_words_of_most_probability():
    assert whole_words(LetterTokenizer()) is None and ExpectedWords.of(LetterTokenizer()) is None
    sketch = ExpectedWords.of(WordTokenizer())
    T = 2 * WINDOW + 5
    ids = torch.full((T, TOP), -1, dtype=torch.long)
    logp = torch.full((T, TOP), float("-inf"))
    ids[:, 0], logp[:, 0] = 50, 0.0                   # every position expects word 50
    ids[:WINDOW, 1], logp[:WINDOW, 1] = 3, -0.1       # a piece: never kept
    ids[WINDOW:, 1], logp[WINDOW:, 1] = 70, -1.0      # the second window on expects word 70 too
    ids[5, 2], logp[5, 2] = 90, -2.0
    sketch.observe(0, ids[:20], logp[:20])            # two chunks, the second window cut between them
    sketch.observe(20, ids[20:], logp[20:])
    table = sketch.tensor()
    assert table.shape == (3, KEEP) and table.dtype == torch.int32
    assert table[0, :2].tolist() == [50, 90] and table[0, 2:].eq(-1).all()
    assert table[1, :2].tolist() == [50, 70] and table[2, :2].tolist() == [50, 70]
    # units: one inside the first window, one across the first two
    src = torch.arange(T)
    seg = torch.tensor([0] * 10 + [1] * (T - 10))
    got = sketch.words(src, seg, 2)
    assert got[0] == {word(50), word(90)} and got[1] == {word(50), word(90), word(70)}
    again = ExpectedWords.of(WordTokenizer())
    again.restore(sketch.tensors())
    assert torch.equal(again.tensor(), table) and again.words(src, seg, 2) == got


def test_a_read_keeps_a_window_per_sixteen_tokens_and_its_pot_keeps_them():
    model = make_model("llama")
    tok = WordTokenizer()
    eng = Engine(model, tok, PotConfig(size=256, keep=128, chunk=32), catalyst_ids=[21, 22, 23, 24, 25, 26])
    eng.pin([1, 2, 3, 4])
    eng.feed(torch.randint(10, VOCAB, (600,), generator=torch.Generator().manual_seed(1)).tolist())
    eng.finish()
    table = eng.expected_words.tensor()
    assert eng.cycles > 0 and table.shape == (-(-eng.tokens_read // WINDOW), KEEP)
    assert (table >= 10).any(1).all()               # every window expected some word (ids below 10 are pieces)
    tensors, facts = eng.state()
    back = Engine.from_state(model, tok, tensors, facts)
    assert torch.equal(back.expected_words.tensor(), table)
    streaming = Engine(model, tok, PotConfig(method="streaming", size=256, keep=128, chunk=32), catalyst_ids=[21])
    assert streaming.expected_words is None          # no NuC, no expected words


def test_a_word_the_model_expected_raises_the_sentence_that_lacks_it():
    texts = ["Use bzip2recover to try to recover data from damaged files.",
             "Compression is slower with a small block size.",
             "Rescue teams use boats."]
    q = "Which tool can rescue a broken archive?"
    plain = retrieve.rank(texts, q)
    assert int(plain.argmax()) == 2 and float(plain[0]) == 0
    expected = [{"rescue", "broken", "repair"}, {"speed"}, set()]
    part = retrieve.expected_scores(texts, q, expected)
    assert int((plain + part).argmax()) == 0
    assert part[1] == 0 and part[2] == 0  # only where the word was expected and is missing
    assert not retrieve.expected_scores(texts, q, [set(), set(), set()]).any()
