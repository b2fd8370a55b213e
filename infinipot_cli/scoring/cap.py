"""Catalyst Prompt (CaP) scores — InfiniPot §3.3.1, Eq. (2).

The representativeness of pot entry t in layer l, KV head h is the attention probability the |P| catalyst
queries give it, summed over the CaP rows and over the query heads of h's GQA group:

    u~[l, h, t] = sum_{i in CaP rows} sum_{q in group(h)} softmax(q_i . K^T * scale + mask)[t]

The main attention keeps running through SDPA (or FlashAttention on CUDA), which never exposes weights;
this module wraps that function and computes only the CaP rows itself, from the same post-RoPE queries
and keys the model attends with (paper, Appendix B, footnote 10). The same wrapper also serves two
baselines: H2O (column sums of *all* query rows, accumulated) and TOVA (the last query row only).

Question relevance (beyond the paper; docs/design.md). A CaP-Q catalyst is a fixed template ("(End of the
document.) Answer the question using the document above. Question:") followed by the user's question. When
the capture knows which rows are the question (`focus`), it also records, per layer and KV head,

    rel[l, h, t] = sum_{q in group(h)} ( mean_{i in question rows} p_qi[t]  -  mean_{i in template rows} p_qi[t] )

the attention the question gives entry t beyond what the generic template gives it. The template rows
attend where any request attends — sinks, recent text, punctuation, " the" — so the difference leaves what
is specific to the question. Measured on the built-in model (84 distillations, needles of three kinds):
the needle's sentence ranked first among ~120 sentence segments in the median case (the plain CaP sum:
44 candidate tokens ahead of it, up to 165).

Register once with :func:`register_attention`; select the rows to capture with :func:`capture`.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

import torch

from ..devices import sync
from ..split_attention import split_causal

_BLOCK_ROWS = 256  # query rows per block when accumulating all rows (H2O), bounds the (G*rows, S) temp


@dataclass
class Capture:
    """What to capture during one forward pass.

    rows: capture the last `rows` query rows (CaP rows, or 1 for TOVA); 0 = none.
    all_rows: accumulate column sums of every query row (H2O).
    focus: (start, stop) of the question inside the captured rows; the rows before `start` are the template.
    from_layer: layers before it are not captured (a policy that reads only the deeper layers' scores).
    scores: layer index -> (H_kv, S_kv) float32 summed probabilities, filled by the attention wrapper.
    relevance: layer index -> (H_kv, S_kv) float32 question-minus-template attention (only with `focus`).
    """

    rows: int = 0
    all_rows: bool = False
    focus: tuple[int, int] | None = None
    from_layer: int = 0
    scores: dict[int, torch.Tensor] = field(default_factory=dict)
    relevance: dict[int, torch.Tensor] = field(default_factory=dict)
    seconds: float = 0.0  # time spent computing the captured rows


_ACTIVE: Capture | None = None


def valid_focus(focus, rows: int) -> tuple[int, int] | None:
    """`focus` when it is a non-empty question range with template rows before it, inside `rows`; else None."""
    if focus is None:
        return None
    start, stop = int(focus[0]), int(focus[1])
    return (start, stop) if 0 < start < stop <= rows else None


@contextlib.contextmanager
def capture(rows: int = 0, all_rows: bool = False, focus: tuple[int, int] | None = None, from_layer: int = 0):
    """Within this block, every attention layer from `from_layer` on records CaP/H2O scores into the yielded
    Capture."""
    global _ACTIVE
    prev, _ACTIVE = _ACTIVE, Capture(rows=rows, all_rows=all_rows, focus=valid_focus(focus, rows),
                                     from_layer=from_layer)
    try:
        yield _ACTIVE
    finally:
        _ACTIVE = prev


def _group_logits(module, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None, scaling: float,
                  softcap: float | None) -> torch.Tensor:
    """Attention probabilities of some query rows, GQA-grouped without repeating K.

    query: (B, Hq, R, D); key: (B, Hkv, S, D); mask: (B|1, 1|Hq, R, S) bool (True = attend) or additive float.
    Returns probabilities (B, Hkv, G, R, S) in float32.
    """
    b, hq, r, d = query.shape
    hkv, s = key.shape[1], key.shape[2]
    g = hq // hkv
    q = query.reshape(b, hkv, g * r, d).float()  # query head h*g+j belongs to KV head h (repeat_kv order)
    logits = torch.matmul(q, key.float().transpose(-1, -2)) * scaling  # (B, Hkv, G*R, S)
    logits = logits.view(b, hkv, g, r, s)
    if softcap is not None:
        logits = torch.tanh(logits / softcap) * softcap
    return torch.softmax(_masked(logits, mask), dim=-1)


def _masked(logits: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """GQA-grouped logits (B, Hkv, G, R, S) with an attention mask (B|1, 1|Hq, R, S) applied: bool (True =
    attend) or additive float."""
    if mask is None:
        return logits
    b, hkv, g, r, s = logits.shape
    m = mask.unsqueeze(1) if mask.shape[1] == 1 else mask.reshape(mask.shape[0], hkv, g, r, s)
    return logits.masked_fill(~m, float("-inf")) if m.dtype == torch.bool else logits + m.float()


def _rows_mask(mask: torch.Tensor | None, q_len: int, kv_len: int, first: int, last: int,
               device) -> torch.Tensor:
    """The mask rows [first, last) of the query block; builds the causal mask when SDPA ran mask-free."""
    if mask is not None and mask.dim() == 4:  # flash-attention passes None or a 2D padding mask instead
        return mask[..., first:last, :]
    # No mask means plain causal alignment with the end of the keys (queries are the last q_len positions).
    q_pos = torch.arange(first, last, device=device) + (kv_len - q_len)
    k_pos = torch.arange(kv_len, device=device)
    return (k_pos[None, :] <= q_pos[:, None])[None, None]  # (1, 1, R, S)


def record(module, query: torch.Tensor, key: torch.Tensor, attention_mask: torch.Tensor | None,
           scaling: float | None, softcap: float | None) -> torch.Tensor | None:
    """Compute the captured rows for this layer (called by the attention wrapper). Returns their probabilities
    (B, Hkv, G, R, S) float32 when they are all the query rows (a catalyst forwarded alone: the final
    distillation), so the wrapper can take the attention output from them instead of computing it again."""
    cap = _ACTIVE
    if cap is None or (cap.rows <= 0 and not cap.all_rows) or module.layer_idx < cap.from_layer:
        return None
    p = None
    sync(query.device)  # CUDA: the timer covers this layer's capture, not the attention queued before it
    t0 = time.perf_counter()
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    q_len, kv_len = query.shape[2], key.shape[2]
    with torch.no_grad():
        if cap.all_rows:
            total = None
            for start in range(0, q_len, _BLOCK_ROWS):
                stop = min(q_len, start + _BLOCK_ROWS)
                m = _rows_mask(attention_mask, q_len, kv_len, start, stop, query.device)
                p = _group_logits(module, query[:, :, start:stop], key, m, scaling, softcap)
                part = p.sum(dim=(2, 3))[0]  # (Hkv, S)
                total = part if total is None else total + part
            cap.scores[module.layer_idx] = total
        else:
            r = min(cap.rows, q_len)
            m = _rows_mask(attention_mask, q_len, kv_len, q_len - r, q_len, query.device)
            p = _group_logits(module, query[:, :, q_len - r:], key, m, scaling, softcap)  # (B, Hkv, G, r, S)
            cap.scores[module.layer_idx] = p.sum(dim=(2, 3))[0]  # (Hkv, S)
            if cap.focus is not None and r == cap.rows:
                f0, f1 = cap.focus
                rel = p[:, :, :, f0:f1].mean(3) - p[:, :, :, :f0].mean(3)  # (B, Hkv, G, S)
                cap.relevance[module.layer_idx] = rel.sum(2)[0]  # (Hkv, S)
    sync(query.device)
    cap.seconds += time.perf_counter() - t0
    return p if p is not None and p.shape[3] == q_len else None


def _math_attention(module, query, key, value, attention_mask, scaling, softcap, probs=None):
    """Plain attention with logit soft-capping (Gemma 2), which SDPA does not support; `probs` (B, Hkv, G, R, S):
    the probabilities already computed for the capture."""
    b, hq, q_len, d = query.shape
    hkv = key.shape[1]
    if scaling is None:
        scaling = d ** -0.5
    if probs is None:
        m = _rows_mask(attention_mask, q_len, key.shape[2], 0, q_len, query.device)
        probs = _group_logits(module, query, key, m, scaling, softcap)
    p = probs.to(value.dtype)  # (B, Hkv, G, R, S)
    out = torch.matmul(p.reshape(b, hkv, -1, key.shape[2]), value)  # (B, Hkv, G*R, Dv)
    out = out.view(b, hq, q_len, value.shape[-1])
    return out.transpose(1, 2).contiguous(), None


def one_row_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                      attention_mask: torch.Tensor | None, scaling: float | None):
    """Attention of a single query row (decoding on the CPU): GQA-grouped batched products in the model's dtype
    (fp32 accumulation inside the GEMM), the softmax in fp32, no mask when none is given (one last row attends to
    every key). query: (B, Hq, 1, D); key/value: (B, Hkv, S, D). Returns (B, 1, Hq, Dv).

    K @ q^T reads K's rows in place, where q @ K^T over a cache view made PyTorch copy K whole. Over a view of a
    preallocated cache the batched products still copy (its heads are not S rows apart); decode_step.py avoids
    that by attending over the whole buffer."""
    b, hq, _, d = query.shape
    hkv, s, dv = key.shape[1], key.shape[2], value.shape[-1]
    g = hq // hkv
    if scaling is None:
        scaling = d ** -0.5
    mask = attention_mask[..., -1:, :] if attention_mask is not None and attention_mask.dim() == 4 else None
    q = query.reshape(b * hkv, g, d)  # query head h*g+j belongs to KV head h (repeat_kv order)
    logits = torch.bmm(key.flatten(0, 1), q.transpose(-1, -2))  # (B*Hkv, S, G)
    logits = logits.transpose(-1, -2).float().view(b, hkv, g, 1, s) * scaling
    p = torch.softmax(_masked(logits, mask), dim=-1).to(value.dtype).view(b * hkv, g, s)
    out = torch.bmm(p, value.flatten(0, 1))  # (B*Hkv, G, Dv)
    return out.reshape(b, 1, hq, dv), None


def _make_wrapper(base_name: str):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    base = ALL_ATTENTION_FUNCTIONS[base_name]

    def infinipot_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
        # query: (B, Hq, Q, D) post-RoPE; key/value: (B, Hkv, S, D) — the whole pot plus this chunk.
        softcap = kwargs.get("softcap")
        probs = record(module, query, key, attention_mask, scaling, softcap)
        # every query row was captured (the final distillation's catalyst): attend with those probabilities
        # rather than a second time; SDPA's masks are materialized, so they were the exact ones
        if base_name == "sdpa" and (softcap is not None or probs is not None):
            return _math_attention(module, query, key, value, attention_mask, scaling, softcap, probs)
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
