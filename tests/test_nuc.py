"""NuC (scoring/nuc.py): the head applied in vocabulary blocks, each reduced to a log-sum-exp, gives the
cross-entropy of the whole logits — exactly in fp32 (soft-capping and partial last blocks included), to bf16
rounding in a bf16 model (the target's logit in fp32)."""

import pytest
import torch

from infinipot_cli.pot.scoring import nuc
from tiny_models import ARCHS, VOCAB, make_model


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("block", [64, 100, 4096])  # several blocks, a partial last one, one block
def test_novelty_is_the_cross_entropy_of_the_whole_logits(arch, block, monkeypatch):
    monkeypatch.setitem(nuc.VOCAB_BLOCK, "cpu", block)
    model = make_model(arch)
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(0, VOCAB, (40,), generator=g)
    with torch.no_grad():
        h = model.model(input_ids=ids[None]).last_hidden_state[0]  # (T, d)
        prev = torch.randn(h.shape[-1], generator=g)
        got = nuc.novelty(model, prev, h, ids)
        logits = nuc.lm_head_logits(model, torch.cat([prev[None], h[:-1]]))  # soft-capped where the model caps
    ref = torch.nn.functional.cross_entropy(logits, ids, reduction="none")
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


def test_bf16_novelty_matches_fp32_cross_entropy_of_the_same_states():
    model = make_model("llama").to(torch.bfloat16)
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(0, VOCAB, (300,), generator=g)
    with torch.no_grad():
        h = model.model(input_ids=ids[None]).last_hidden_state[0]  # (T, d) bf16
        got = nuc.novelty(model, None, h, ids)
        logits = h[:-1].float() @ model.lm_head.weight.float().T  # fp32 reference from the same states
        ref = torch.nn.functional.cross_entropy(logits, ids[1:], reduction="none")
    assert got.dtype == torch.float32 and got.shape == (300,) and float(got[0]) == 0.0
    torch.testing.assert_close(got[1:], ref, atol=0.03, rtol=0.01)
    # ranking is what the policy uses: the same order up to near-ties
    assert (got[1:].argsort()[-20:].tolist() == ref.argsort()[-20:].tolist()) or \
        len(set(got[1:].topk(20).indices.tolist()) & set(ref.topk(20).indices.tolist())) >= 18


def _big_vocab_model(vocab: int = 40000):
    """A tiny Llama whose head dwarfs its body, as Gemma 3 270M's 262K-row head does."""
    import transformers as tf

    from infinipot_cli.runtime.attention import register_attention

    cfg = tf.LlamaConfig(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                         attn_implementation=register_attention("sdpa"))
    torch.manual_seed(0)
    return tf.LlamaForCausalLM(cfg).eval()


def test_a_head_over_the_budget_is_sampled_and_stays_close_to_the_exact_novelty():
    model = _big_vocab_model()
    rows = nuc.budget_rows(model)
    assert rows is not None and rows < 40000  # 40K rows x 64 against a ~100K-parameter body: over the budget
    g = torch.Generator().manual_seed(6)
    ids = torch.randint(0, 40000, (300,), generator=g)
    ids[100:110] = torch.arange(39990, 40000)  # rare ids of the chunk itself: counted exactly
    with torch.no_grad():
        h = model.model(input_ids=ids[None]).last_hidden_state[0]
        exact = nuc.novelty(model, None, h, ids, sample=False)
        sampled = nuc.novelty(model, None, h, ids)
    sample = model._infinipot_nuc_sample
    assert sample.exact + sample.ids.shape[0] <= rows  # the rows read per token, the chunk's own ids aside
    assert not torch.equal(sampled, exact)
    assert (sampled - exact).abs().median() < 0.02 and (sampled - exact).abs().max() < 0.2
    top = set(exact.topk(60).indices.tolist())
    assert len(top & set(sampled.topk(60).indices.tolist())) >= 54  # the most novel tokens are the same


def test_a_sample_wide_enough_is_the_exact_log_sum_exp():
    model = _big_vocab_model(3000)
    w = model.lm_head.weight
    ids = torch.randint(0, 3000, (50,), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        h = torch.randn(50, 64)
        whole = nuc.Sample(w, 2 * 3000)  # every id exactly, no stride left
        torch.testing.assert_close(whole.nll(model, h, ids), nuc._nll(model, h, ids), atol=1e-4, rtol=1e-5)


def test_the_builtin_model_and_the_papers_method_stay_exact(builtin):
    from infinipot_cli.pot.config import PotConfig

    assert nuc.budget_rows(builtin.model) is None  # 49K rows: under the budget, never sampled
    assert PotConfig.resolve("infinipot").nuc_sample is True
    assert PotConfig.resolve("infinipot-paper").nuc_sample is False
