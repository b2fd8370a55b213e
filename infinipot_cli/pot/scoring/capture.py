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

All layers at once, off the CPU. On an accelerator each layer's handful of small kernels is host-bound (launches,
not arithmetic), so there `record` only keeps the layer's catalyst query rows and its keys (views of the pot's
buffer, still intact when the forward ends), and the block's end computes every layer's scores in one batched
sequence (:meth:`Capture.flush`: the layers' queries and keys stacked into the batch dimension, one product, one
softmax, one sum), layers that share a mask together. Each (layer, head) is the same product, softmax and sum as
a layer at a time, bit for bit (tests/test_gpu_path.py). On the CPU a layer at a time, as before: it keeps one
layer's temporaries (~2.5 MB for the built-in model) instead of every captured layer's (~100 MB).

    scores[l], relevance[l]  (H_kv, S) float32;  stacked: (L', H_kv, S) float32 for layers from_layer.. (batched)
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch

from ...runtime.devices import Clock, on_host
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
    stacked, stacked_rel: (L', H_kv, S) every captured layer's scores / relevance as one tensor, layers from_layer..
    in order, when they were computed at once (flush); scores[l] are views of it. None otherwise.
    """

    rows: int = 0
    all_rows: bool = False
    focus: tuple[int, int] | None = None
    from_layer: int = 0
    scores: dict[int, torch.Tensor] = field(default_factory=dict)
    relevance: dict[int, torch.Tensor] = field(default_factory=dict)
    spans: list = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)
    stacked: torch.Tensor | None = None
    stacked_rel: torch.Tensor | None = None
    # layers deferred to flush(): (layer, query rows (B, Hq, r, D), key (B, Hkv, S, D), mask rows, scaling, softcap,
    # the mask they came from: its id, or None for a causal mask built here)
    pending: list = field(default_factory=list)

    def flush(self) -> None:
        """Compute the deferred layers' scores (and relevance) in one batched sequence per group of layers with the
        same mask, shapes, scaling and soft-cap (one group for most models; Gemma's sliding and global layers two)."""
        if not self.pending:
            return
        t0 = self.clock.now()
        groups: dict = {}
        for item in self.pending:
            layer, q, k, m, scaling, softcap, mask_id = item
            groups.setdefault((mask_id, tuple(q.shape), tuple(k.shape), scaling, softcap), []).append(item)
        layers = [item[0] for item in self.pending]
        for items in groups.values():
            _, q0, k0, m, scaling, softcap, _ = items[0]
            b = q0.shape[0]
            q = torch.stack([it[1] for it in items]).flatten(0, 1)  # (n*B, Hq, r, D)
            k = torch.stack([it[2] for it in items]).flatten(0, 1)  # (n*B, Hkv, S, D)
            if m is not None and m.shape[0] != 1:  # a per-batch mask: repeated for every layer of the group
                m = m.repeat(len(items), *([1] * (m.dim() - 1)))
            p = grouped_probs(q, k, m, scaling, softcap)  # (n*B, Hkv, G, r, S)
            scores = p.sum(dim=(2, 3)).view(len(items), b, *p.shape[1:2], p.shape[-1])[:, 0]  # (n, Hkv, S)
            rel = None
            if self.focus is not None:
                f0, f1 = self.focus
                rel = (p[:, :, :, f0:f1].mean(3) - p[:, :, :, :f0].mean(3)).sum(2)  # (n*B, Hkv, S)
                rel = rel.view(len(items), b, *rel.shape[1:])[:, 0]
            for i, it in enumerate(items):
                self.scores[it[0]] = scores[i]
                if rel is not None:
                    self.relevance[it[0]] = rel[i]
            if len(groups) == 1 and layers == list(range(layers[0], layers[0] + len(layers))):
                self.stacked, self.stacked_rel = scores, rel
        self.pending = []
        self.spans.append(self.clock.span(t0))

    def stack(self, kind: str, num_layers: int, lo: int, hi: int, device) -> torch.Tensor:
        """(L, H_kv, hi - lo) float32 on `device`: the captured `kind` ("scores" / "relevance") of every layer over
        entries lo..hi-1, zeros for the layers not captured (below from_layer). One concatenation when the layers
        were computed at once (`stacked`), else a layer at a time: the same values."""
        by_layer = self.scores if kind == "scores" else self.relevance
        stacked = self.stacked if kind == "scores" else self.stacked_rel
        first = min(by_layer) if by_layer else num_layers
        if stacked is not None and first + stacked.shape[0] == num_layers:
            part = stacked[:, :, lo:hi].float().to(device)                      # (L', H, N)
            return torch.cat([part.new_zeros(first, *part.shape[1:]), part])  # (L, H, N)
        h = next(iter(by_layer.values())).shape[0]
        unread = torch.zeros(h, hi - lo, device=device)  # layers below the policy's cap_from: not captured
        return torch.stack([by_layer[l][:, lo:hi].float().to(device) if l in by_layer else unread
                            for l in range(num_layers)])


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
    cap = Capture(rows=rows, all_rows=all_rows, focus=valid_focus(focus, rows), from_layer=from_layer,
                  clock=Clock(device))
    prev, _ACTIVE = _ACTIVE, cap
    try:
        with tapped(record):
            yield cap
        cap.flush()  # the layers deferred off the CPU, all at once (their keys are still the pot's)
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
            if r < q_len and not on_host(query):  # the wrapper needs no probabilities back: all layers at once
                mask_id = id(attention_mask) if attention_mask is not None and attention_mask.dim() == 4 else None
                cap.pending.append((module.layer_idx, query[:, :, q_len - r:], key, m, scaling, softcap, mask_id))
                return None
            p = grouped_probs(query[:, :, q_len - r:], key, m, scaling, softcap)  # (B, Hkv, G, r, S)
            cap.scores[module.layer_idx] = p.sum(dim=(2, 3))[0]  # (Hkv, S)
            if cap.focus is not None and r == cap.rows:
                f0, f1 = cap.focus
                rel = p[:, :, :, f0:f1].mean(3) - p[:, :, :, :f0].mean(3)  # (B, Hkv, G, S)
                cap.relevance[module.layer_idx] = rel.sum(2)[0]  # (Hkv, S)
    cap.spans.append(cap.clock.span(t0))
    return p if p is not None and p.shape[3] == q_len else None
