"""Catalyst Prompt (CaP) scores — InfiniPot §3.3.1, Eq. (2).

The representativeness of pot entry t in layer l, KV head h is the attention probability the |P| catalyst
queries give it, summed over the CaP rows and over the query heads of h's GQA group:

    u~[l, h, t] = sum_{i in CaP rows} sum_{q in group(h)} softmax(q_i . K^T * scale + mask)[t]

The main attention keeps running through SDPA (or FlashAttention on CUDA), which never exposes weights;
the runtime's wrapper around that function (runtime/attention.py) hands this module the queries and keys, and it
computes only the CaP rows itself, from the same post-RoPE queries and keys the model attends with (paper, Appendix
B, footnote 10). The same capture also serves two baselines: H2O (column sums of *all* query rows, accumulated)
and TOVA (the last query row only).

Question relevance (beyond the paper; docs/design.md). A CaP-Q catalyst is a fixed template ("(End of the
document.) Answer the question using the document above. Question:") followed by the user's question. When
the capture knows which rows are the question (`focus`), it also records, per layer and KV head,

    rel[l, h, t] = sum_{q in group(h)} ( mean_{i in question rows} p_qi[t]  -  mean_{i in template rows} p_qi[t] )

the attention the question gives entry t beyond what the generic template gives it. The template rows
attend where any request attends — sinks, recent text, punctuation, " the" — so the difference leaves what
is specific to the question. Measured on the built-in model (84 distillations, needles of three kinds):
the needle's sentence ranked first among ~120 sentence segments in the median case (the plain CaP sum:
44 candidate tokens ahead of it, up to 165).

The wrapper is the runtime's (runtime/attention.py, :func:`~infinipot_cli.runtime.attention.register_attention`,
which model loading registers); it hands every layer's queries and keys to :func:`record` while a :func:`capture`
block is open, which selects the rows to capture.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch

from ...runtime.devices import Clock
from ...runtime.attention import grouped_probs, rows_mask, tapped

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
    spans: the time spent computing the captured rows, one devices.Clock span per layer (CUDA: event pairs, so
    timing the capture never waits for the device).
    """

    rows: int = 0
    all_rows: bool = False
    focus: tuple[int, int] | None = None
    from_layer: int = 0
    scores: dict[int, torch.Tensor] = field(default_factory=dict)
    relevance: dict[int, torch.Tensor] = field(default_factory=dict)
    spans: list = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)


_ACTIVE: Capture | None = None


def valid_focus(focus, rows: int) -> tuple[int, int] | None:
    """`focus` when it is a non-empty question range with template rows before it, inside `rows`; else None."""
    if focus is None:
        return None
    start, stop = int(focus[0]), int(focus[1])
    return (start, stop) if 0 < start < stop <= rows else None


@contextlib.contextmanager
def capture(rows: int = 0, all_rows: bool = False, focus: tuple[int, int] | None = None, from_layer: int = 0,
            device=None):
    """Within this block, every attention layer from `from_layer` on records CaP/H2O scores into the yielded
    Capture (`device`: where the model runs, for its timer)."""
    global _ACTIVE
    prev, _ACTIVE = _ACTIVE, Capture(rows=rows, all_rows=all_rows, focus=valid_focus(focus, rows),
                                     from_layer=from_layer, clock=Clock(device))
    try:
        with tapped(record):
            yield _ACTIVE
    finally:
        _ACTIVE = prev


def record(module, query: torch.Tensor, key: torch.Tensor, attention_mask: torch.Tensor | None,
           scaling: float | None, softcap: float | None) -> torch.Tensor | None:
    """Compute the captured rows for this layer (the attention wrapper's tap, runtime/attention.py). Returns their probabilities
    (B, Hkv, G, R, S) float32 when they are all the query rows (a catalyst forwarded alone: the final
    distillation), so the wrapper can take the attention output from them instead of computing it again."""
    cap = _ACTIVE
    if cap is None or (cap.rows <= 0 and not cap.all_rows) or module.layer_idx < cap.from_layer:
        return None
    p = None
    t0 = cap.clock.now()
    if scaling is None:
        scaling = query.shape[-1] ** -0.5
    q_len, kv_len = query.shape[2], key.shape[2]
    with torch.no_grad():
        if cap.all_rows:
            total = None
            for start in range(0, q_len, _BLOCK_ROWS):
                stop = min(q_len, start + _BLOCK_ROWS)
                m = rows_mask(attention_mask, q_len, kv_len, start, stop, query.device)
                p = grouped_probs(query[:, :, start:stop], key, m, scaling, softcap)
                part = p.sum(dim=(2, 3))[0]  # (Hkv, S)
                total = part if total is None else total + part
            cap.scores[module.layer_idx] = total
        else:
            r = min(cap.rows, q_len)
            m = rows_mask(attention_mask, q_len, kv_len, q_len - r, q_len, query.device)
            p = grouped_probs(query[:, :, q_len - r:], key, m, scaling, softcap)  # (B, Hkv, G, r, S)
            cap.scores[module.layer_idx] = p.sum(dim=(2, 3))[0]  # (Hkv, S)
            if cap.focus is not None and r == cap.rows:
                f0, f1 = cap.focus
                rel = p[:, :, :, f0:f1].mean(3) - p[:, :, :, :f0].mean(3)  # (B, Hkv, G, S)
                cap.relevance[module.layer_idx] = rel.sum(2)[0]  # (Hkv, S)
    cap.spans.append(cap.clock.span(t0))
    return p if p is not None and p.shape[3] == q_len else None
