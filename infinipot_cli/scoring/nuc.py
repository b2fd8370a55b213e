"""Novelty under Compression (NuC) — InfiniPot §3.3.2, Eq. (4).

The novelty of token x_t is its cross-entropy given what the pot holds when it is read:

    n~_t = -log P(x_t | c_0 .. c_{|C|-1}, x_{|C|} .. x_{t-1}) = logsumexp_v(z_v) - z_{x_t}

computed from the same forward pass that writes the token into the pot: the hidden state at t-1 is
projected through the LM head. Only the log-sum-exp over the vocabulary and the target's logit are needed, so
the (T, vocab) logits never exist: the head is applied in blocks of rows and of vocabulary, each (rows,
block) product reduced to its log-sum-exp while it is still in cache (the 49K-vocab head is ~20 % of a 135M
model's FLOPs; measured: docs/results/speed.md), and the target's logit is taken in fp32 from its weight row.
"""

from __future__ import annotations

import torch

BLOCK = 256  # hidden-state rows projected at once
VOCAB_BLOCK = {"cpu": 4096}  # vocabulary rows per product by device type (others: DEFAULT_VOCAB_BLOCK)
DEFAULT_VOCAB_BLOCK = 65536  # on a GPU: few launches, bounded temporaries


def _softcap(model) -> float | None:
    return getattr(model.config, "final_logit_softcapping", None)


def lm_head_logits(model, hidden: torch.Tensor) -> torch.Tensor:
    """Logits for hidden states (N, d) -> (N, V) float32, with final logit soft-capping (Gemma 2/3)."""
    logits = model.lm_head(hidden).float()
    cap = _softcap(model)
    if cap:
        logits = torch.tanh(logits / cap) * cap
    return logits


def _nll(model, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """-log p(targets | h): h (b, d) in the model's dtype, targets (b,) -> (b,) float32.

    Per vocabulary block: the product in the model's dtype (fp32 accumulation inside the GEMM), less its row
    maxima, exponentiated in that dtype and summed in fp32 (each term's rounding is relative, so the sum keeps
    the precision of the logits); the blocks' log-sum-exps are combined in fp32. The target's logit is computed in
    fp32 from its weight row (and bias), soft-capped like the rest."""
    head = model.lm_head
    w, bias, cap = head.weight, getattr(head, "bias", None), _softcap(model)  # w: (V, d)
    V, b = w.shape[0], h.shape[0]
    step = min(V, VOCAB_BLOCK.get(h.device.type, DEFAULT_VOCAB_BLOCK))
    parts = torch.empty(b, -(-V // step), device=h.device)  # (b, blocks) float32
    buf = torch.empty(b, step, dtype=h.dtype, device=h.device)  # one block's logits, reused
    for j, s in enumerate(range(0, V, step)):
        n = min(step, V - s)
        z = torch.matmul(h, w[s:s + n].T, out=buf) if n == step else torch.matmul(h, w[s:s + n].T)  # (b, n)
        if bias is not None:
            z = z + bias[s:s + n]
        if cap:
            z = torch.tanh(z.float() / cap) * cap
        m = z.amax(-1, keepdim=True)  # (b, 1)
        z = z - m if z is not buf else z.sub_(m)  # the block's buffer is overwritten in place
        parts[:, j] = z.exp_().sum(-1, dtype=torch.float32).log_() + m[:, 0].float()
    tgt = (h.float() * w.index_select(0, targets).float()).sum(-1)  # (b,)
    if bias is not None:
        tgt = tgt + bias.index_select(0, targets).float()
    if cap:
        tgt = torch.tanh(tgt / cap) * cap
    return torch.logsumexp(parts, -1) - tgt


def _nll_logits(model, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The same from whole logits, for a head that is not a plain weight matrix."""
    logits = lm_head_logits(model, h)  # (b, V)
    return torch.logsumexp(logits, -1) - logits.gather(-1, targets[:, None])[:, 0]


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
    w = getattr(model.lm_head, "weight", None)
    nll = _nll if isinstance(w, torch.Tensor) and w.dim() == 2 and w.dtype == preds.dtype else _nll_logits
    for s in range(0, preds.shape[0], BLOCK):
        out.append(nll(model, preds[s:s + BLOCK], targets[s:s + BLOCK]))
    res = torch.cat(out) if out else torch.zeros(0, device=ids.device)
    assert res.shape[0] == t
    return res
