"""Novelty under Compression (NuC) — InfiniPot §3.3.2, Eq. (4).

The novelty of token x_t is its cross-entropy given what the pot holds when it is read:

    n~_t = -log P(x_t | c_0 .. c_{|C|-1}, x_{|C|} .. x_{t-1})

computed from the same forward pass that writes the token into the pot: the hidden state at t-1 is
projected through the LM head. The head is applied in row blocks so the (T, vocab) logits never exist
at once (the 49K-vocab projection is ~20 % of a 135M model's FLOPs; blocks keep peak memory flat).
"""

from __future__ import annotations

import torch

BLOCK = 256  # rows of hidden states projected at once


def lm_head_logits(model, hidden: torch.Tensor) -> torch.Tensor:
    """Logits for hidden states (N, d) -> (N, V) float32, with final logit soft-capping (Gemma 2/3)."""
    logits = model.lm_head(hidden).float()
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def _low_precision_nll(model, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """-log p for a bf16/fp16 model without an fp32 (b, V) copy: the LM-head matmul in the model dtype (fp32
    accumulation inside), logsumexp reduced over it directly, and the target's logit exactly in fp32 from its
    weight row. h: (b, d); targets: (b,). Returns (b,) float32."""
    head = model.lm_head
    logits = head(h)  # (b, V) model dtype
    lse = torch.logsumexp(logits, -1).float()  # (b,)
    w = head.weight.index_select(0, targets)  # (b, d)
    tgt = (h.float() * w.float()).sum(-1)
    bias = getattr(head, "bias", None)
    if bias is not None:
        tgt = tgt + bias.index_select(0, targets).float()
    return lse - tgt


@torch.no_grad()
def novelty(model, prev_hidden: torch.Tensor | None, hidden: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Per-token cross-entropy (nats) of `ids` given the pot.

    prev_hidden: (d,) last hidden state before this chunk (None at the very start: novelty 0 for token 0).
    hidden: (T, d) hidden states of this chunk; ids: (T,) its token ids. Returns (T,) float32.
    """
    t = ids.shape[0]
    if prev_hidden is None:
        preds = hidden[:-1]
        targets = ids[1:]
        out = [torch.zeros(1, device=ids.device)]
    else:
        preds = torch.cat([prev_hidden[None], hidden[:-1]], dim=0)  # (T, d): row i predicts ids[i]
        targets = ids
        out = []
    low = preds.dtype in (torch.bfloat16, torch.float16) and not getattr(model.config, "final_logit_softcapping", None)
    for s in range(0, preds.shape[0], BLOCK):
        if low:
            out.append(_low_precision_nll(model, preds[s:s + BLOCK], targets[s:s + BLOCK]))
            continue
        logits = lm_head_logits(model, preds[s:s + BLOCK])  # (b, V)
        out.append(torch.logsumexp(logits, -1) - logits.gather(-1, targets[s:s + BLOCK, None])[:, 0])
    res = torch.cat(out) if out else torch.zeros(0, device=ids.device)
    assert res.shape[0] == t
    return res
