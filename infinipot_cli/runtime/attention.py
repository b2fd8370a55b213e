"""Attention arithmetic, written once: every path that attends outside SDPA's own call comes here.

- :func:`split_causal` — a chunk read over the pot on the CPU, as two calls of PyTorch's flash kernel;
- :func:`grouped_probs` — the probabilities of some query rows, GQA-grouped (CaP / H2O / TOVA capture, §3.3.1);
- :func:`math_attention` — plain attention from such probabilities (Gemma 2's soft-capping; the final
  distillation's catalyst, whose every row was captured);
- :func:`one_row` — one query row per head over a cache (decoding): the transformers wrapper's path
  (:func:`one_row_attention`) and the decode step's, over its preallocated buffer.
- :func:`register_attention` — the model's attention function (loading.py registers it): the paths above around
  SDPA or FlashAttention, with a tap (:func:`tapped`) through which the pot's CaP capture (pot/scoring/capture.py)
  sees every layer's queries and keys while it records; the runtime itself imports nothing of the pot.

Shapes: query (B, Hq, R, D) post-RoPE, key/value (B, Hkv, S, D); query head h*G+j reads KV head h (transformers'
repeat_kv order), G = Hq / Hkv. Logits are soft-capped (Gemma 2) and softmaxed in fp32.

The split (``split_causal``). Reading forwards a chunk of T new tokens over a pot of P entries; its causal mask
lets every new token see all P old entries and the new ones up to itself. PyTorch's CPU flash kernel, given that
(T, P + T) mask, computes every block of it; told instead that the old keys need no mask and the new ones a plain
causal one (``is_causal``, whose blocks above the diagonal it skips), it does ~15 % less work for a 1,024-token
chunk over 1,024 entries (35 -> 30 ms a layer on 2 cores; docs/results/speed.md). The two halves are joined
exactly by their log-sum-exps, which the kernel returns:

    out = sigmoid(lse_old - lse_new) * out_old + sigmoid(lse_new - lse_old) * out_new     (fp32)

Only a chunk of at least 512 rows over a cache of at least 64 entries with the plain causal mask (checked against
the mask itself) is split: shorter query blocks have few blocks to skip and run faster as one call (40 rows over
2,048 entries: 1.9 ms as one, 3.6 as two; 512 over 1,024: 16.1 and 15.6). Prompts, sliding windows, padding and
every other mask go to SDPA as before.
"""

from __future__ import annotations

import contextlib

import torch

_FLASH = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_MIN_PAST = 64  # a shorter cache is not worth a second kernel call
_MIN_ROWS = 512  # nor a shorter chunk (a prompt): measured slower split
_LAST: list = [None, False]  # the last mask checked and whether it was plain causal (one mask serves all layers)


def _soft_capped(logits: torch.Tensor, softcap: float | None) -> torch.Tensor:
    """Gemma 2's logit soft-capping, tanh(z / cap) * cap, on scaled fp32 logits; the logits when there is none."""
    return logits if softcap is None else torch.tanh(logits / softcap) * softcap


# ---- a chunk over the pot (CPU) ---------------------------------------------------------------------------
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


# ---- probabilities of some rows (capture) and attention from them -----------------------------------------
def masked(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """GQA-grouped logits (B, Hkv, G, R, S) with an attention mask (B|1, 1|Hq, R, S) applied: bool (True =
    attend) or additive float."""
    if mask is None:
        return logits
    b, hkv, g, r, s = logits.shape
    m = mask.unsqueeze(1) if mask.shape[1] == 1 else mask.reshape(mask.shape[0], hkv, g, r, s)
    return logits.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else logits + m.float()


def rows_mask(mask: torch.Tensor | None, q_len: int, kv_len: int, first: int, last: int, device) -> torch.Tensor:
    """The mask rows [first, last) of a query block; builds the causal mask when SDPA ran mask-free."""
    if mask is not None and mask.dim() == 4:  # flash-attention passes None or a 2D padding mask instead
        return mask[..., first:last, :]
    # No mask means plain causal alignment with the end of the keys (queries are the last q_len positions).
    q_pos = torch.arange(first, last, device=device) + (kv_len - q_len)
    k_pos = torch.arange(kv_len, device=device)
    return (k_pos[None, :] <= q_pos[:, None])[None, None]  # (1, 1, R, S)


def grouped_probs(query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scaling: float,
                  softcap: float | None) -> torch.Tensor:
    """Attention probabilities of some query rows, GQA-grouped without repeating K, all in fp32.

    query: (B, Hq, R, D); key: (B, Hkv, S, D); mask: (B|1, 1|Hq, R, S) bool (True = attend) or additive float.
    Returns probabilities (B, Hkv, G, R, S) in float32.
    """
    b, hq, r, d = query.shape
    hkv, s = key.shape[1], key.shape[2]
    g = hq // hkv
    q = query.reshape(b, hkv, g * r, d).float()  # query head h*g+j belongs to KV head h (repeat_kv order)
    logits = torch.matmul(q, key.float().transpose(-1, -2)) * scaling  # (B, Hkv, G*R, S)
    logits = _soft_capped(logits.view(b, hkv, g, r, s), softcap)
    return torch.softmax(masked(logits, mask), dim=-1)


def math_attention(query, key, value, mask, scaling: float | None, softcap: float | None, probs=None):
    """Plain attention, (B, R, Hq, Dv) as transformers' attention functions return it (and None for the weights).
    `probs` (B, Hkv, G, R, S): the probabilities already computed for a capture; otherwise from `mask`."""
    b, hq, q_len, d = query.shape
    hkv = key.shape[1]
    if scaling is None:
        scaling = d ** -0.5
    if probs is None:
        m = rows_mask(mask, q_len, key.shape[2], 0, q_len, query.device)
        probs = grouped_probs(query, key, m, scaling, softcap)
    p = probs.to(value.dtype)  # (B, Hkv, G, R, S)
    out = torch.matmul(p.reshape(b, hkv, -1, key.shape[2]), value)  # (B, Hkv, G*R, Dv)
    out = out.view(b, hq, q_len, value.shape[-1])
    return out.transpose(1, 2).contiguous(), None


# ---- one query row (decoding) -------------------------------------------------------------------------------
def one_row(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, bias: torch.Tensor | None, scaling: float,
            softcap: float | None = None) -> torch.Tensor:
    """One query row per head over a cache: q (N, G, D), keys/values (N, S, D), N = B * Hkv; bias: an additive
    fp32 mask broadcast to (N, G, S) (-inf where a key is not seen) or None. Returns (N, G, Dv) in values' dtype.

    The products run in the model's dtype (fp32 accumulation inside the GEMM), the softmax in fp32. q @ K^T when
    K is contiguous (the decode step's whole buffer); K @ q^T over a view of a longer cache, which the first form
    would copy whole."""
    if keys.is_contiguous():
        logits = torch.bmm(q, keys.transpose(-1, -2))  # (N, G, S)
    else:
        logits = torch.bmm(keys, q.transpose(-1, -2)).transpose(-1, -2)
    if softcap is not None:
        s = _soft_capped(logits.float() * scaling, softcap)
        s = s if bias is None else s + bias
    elif bias is not None:
        s = torch.add(bias, logits, alpha=scaling)  # fp32: bias + scaling * logits
    else:
        s = logits.float() * scaling
    return torch.bmm(torch.softmax(s, dim=-1).to(values.dtype), values)


def one_row_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, scaling: float | None, softcap: float | None = None):
    """transformers' attention-function form of :func:`one_row`: query (B, Hq, 1, D); key/value (B, Hkv, S, D);
    the mask's last row when one is given (a last row sees every key otherwise). Returns ((B, 1, Hq, Dv), None)."""
    b, hq, _, d = query.shape
    hkv, s, dv = key.shape[1], key.shape[2], value.shape[-1]
    g = hq // hkv
    if scaling is None:
        scaling = d ** -0.5
    bias = None
    if attention_mask is not None and attention_mask.dim() == 4:
        m = attention_mask[..., -1:, :]  # (B|1, 1|Hq, 1, S)
        m = m.expand(b, hq, 1, s).reshape(b * hkv, g, s)
        bias = torch.zeros(m.shape, device=m.device).masked_fill_(~m, float("-inf")) if m.dtype == torch.bool else m.float()
    out = one_row(query.reshape(b * hkv, g, d), key.flatten(0, 1), value.flatten(0, 1), bias, scaling, softcap)
    return out.reshape(b, 1, hq, dv), None


# What the wrapper hands every layer's post-RoPE queries and keys to before attending: the distillation's score
# capture (pot/scoring/capture.py) while it records, else nothing. It returns the probabilities of every query row
# when it computed them all (the final distillation's catalyst), so the wrapper attends with them instead.
_TAP = None


@contextlib.contextmanager
def tapped(fn):
    """Within this block, the wrapper registered by :func:`register_attention` calls
    `fn(module, query, key, attention_mask, scaling, softcap)` in every attention layer before attending."""
    global _TAP
    prev, _TAP = _TAP, fn
    try:
        yield
    finally:
        _TAP = prev


def _make_wrapper(base_name: str):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    base = ALL_ATTENTION_FUNCTIONS[base_name]

    def infinipot_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
        # query: (B, Hq, Q, D) post-RoPE; key/value: (B, Hkv, S, D) — the whole pot plus this chunk.
        softcap = kwargs.get("softcap")
        probs = _TAP(module, query, key, attention_mask, scaling, softcap) if _TAP is not None else None
        # every query row was captured (the final distillation's catalyst): attend with those probabilities
        # rather than a second time; SDPA's masks are materialized, so they were the exact ones
        if base_name == "sdpa" and (softcap is not None or probs is not None):
            return math_attention(query, key, value, attention_mask, scaling, softcap, probs)
        # one query row on the CPU (decoding): CPU SDPA is 4-5x slower there (docs/design.md)
        if base_name == "sdpa" and query.shape[2] == 1 and query.device.type == "cpu":
            return one_row_attention(query, key, value, attention_mask, scaling)
        if base_name == "sdpa":  # a chunk over a cache on the CPU: old keys unmasked, new ones causal
            out = split_causal(query, key, value, attention_mask, query.shape[-1] ** -0.5 if scaling is None else scaling)
            if out is not None:
                return out, None
        return base(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs)

    return infinipot_attention


def register_attention(base_name: str = "sdpa") -> str:
    """Register the capturing wrapper around `base_name` (sdpa / flash_attention_2); returns its name."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    # The name must not contain "sdpa"/"flash": transformers would then apply its per-architecture SDPA/FA
    # checks (Gemma 2 refuses SDPA because of soft-capping, which the wrapper handles itself).
    name = {"sdpa": "infinipot", "flash_attention_2": "infinipot_fa2"}.get(base_name, f"infinipot_{base_name}")
    AttentionInterface.register(name, _make_wrapper(base_name))
    # Without a mask function registered under the same name the causal mask silently becomes None.
    AttentionMaskInterface.register(name, ALL_MASK_ATTENTION_FUNCTIONS[base_name])
    return name
