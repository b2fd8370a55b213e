"""A chunk's attention on the CPU in two parts: over the cache it is read against, and over itself.

Reading forwards a chunk of T new tokens over a pot of P entries; its causal mask lets every new token see all
P old entries and the new ones up to itself. PyTorch's CPU flash kernel, given that (T, P + T) mask, computes
every block of it; told instead that the old keys need no mask and the new ones a plain causal one
(``is_causal``, whose blocks above the diagonal it skips), it does ~15 % less work for a 1,024-token chunk over
1,024 entries (35 -> 30 ms a layer on 2 cores; docs/results/speed.md). The two halves are joined exactly by
their log-sum-exps, which the kernel returns:

    out = sigmoid(lse_old - lse_new) * out_old + sigmoid(lse_new - lse_old) * out_new     (fp32)

Only a chunk of at least 512 rows over a cache of at least 64 entries with the plain causal mask (checked against
the mask itself) is split: shorter query blocks have few blocks to skip and run faster as one call (40 rows over
2,048 entries: 1.9 ms as one, 3.6 as two; 512 over 1,024: 16.1 and 15.6). Prompts, sliding windows, padding and
every other mask go to SDPA as before.
"""

from __future__ import annotations

import torch

_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_MIN_PAST = 64  # a shorter cache is not worth a second kernel call
_MIN_ROWS = 512  # nor a shorter chunk (a prompt): measured slower split
_LAST: list = [None, False]  # the last mask checked and whether it was plain causal (one mask serves all layers)


def _plain_causal(mask: torch.Tensor, past: int) -> bool:
    """mask (1, 1, T, P + T) bool is all-True over the first P keys and lower-triangular over the last T."""
    if _LAST[0] is mask:
        return _LAST[1]
    t = mask.shape[-2]
    m = mask[0, 0]
    ok = bool(m[:, :past].all()) and torch.equal(m[:, past:], torch.ones(t, t, dtype=torch.bool,
                                                                        device=m.device).tril_())
    _LAST[0], _LAST[1] = mask, ok
    return ok


def split_causal(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor | None,
                 scaling: float) -> torch.Tensor | None:
    """Attention output (B, T, Hq, D), as transformers' SDPA function returns it, or None when this does not
    apply. query: (1, Hq, T, D) post-RoPE; key/value: (1, Hkv, P + T, D), the cache and the chunk; mask: the
    model's (1, 1, T, P + T) bool mask."""
    if _FLASH is None or query.device.type != "cpu" or mask is None or mask.dtype != torch.bool:
        return None
    b, hq, t, d = query.shape
    s = key.shape[2]
    past = s - t
    if b != 1 or t < _MIN_ROWS or past < _MIN_PAST or tuple(mask.shape) != (1, 1, t, s) or not _plain_causal(mask, past):
        return None
    g = hq // key.shape[1]
    if g > 1:  # the kernel wants one key head per query head (repeat_kv order: head h*g+j reads KV head h)
        key = key[:, :, None].expand(b, key.shape[1], g, s, d).reshape(b, hq, s, d)
        value = value[:, :, None].expand(b, value.shape[1], g, s, value.shape[-1]).reshape(b, hq, s, -1)
    out_old, lse_old = _FLASH(query, key[:, :, :past], value[:, :, :past], scale=scaling)[:2]  # (1, Hq, T, D)
    out_new, lse_new = _FLASH(query, key[:, :, past:], value[:, :, past:], is_causal=True, scale=scaling)[:2]
    w = torch.sigmoid(lse_old - lse_new).unsqueeze(-1)  # (1, Hq, T, 1): the old keys' share of the softmax
    out = torch.lerp(out_new.float(), out_old.float(), w).to(query.dtype)  # new + w * (old - new)
    return out.transpose(1, 2).contiguous()
