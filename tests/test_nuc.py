"""NuC (scoring/nuc.py): the head applied in vocabulary blocks, each reduced to a log-sum-exp, gives the
cross-entropy of the whole logits — exactly in fp32 (soft-capping and partial last blocks included), to bf16
rounding in a bf16 model (the target's logit in fp32)."""

import pytest
import torch

from infinipot_cli.scoring import nuc
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
