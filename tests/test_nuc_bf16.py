"""NuC in a bf16 model (scoring/nuc.py): the LM head in bf16 with the logsumexp reduced over it and the target's
logit in fp32 gives the cross-entropy of the same hidden states computed in fp32, to bf16 rounding."""

import torch

from infinipot_cli.scoring import nuc
from tiny_models import VOCAB, make_model


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
