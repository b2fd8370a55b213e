"""Novelty under Compression (NuC) — InfiniPot §3.3.2, Eq. (4).

The novelty of token x_t is its cross-entropy given what the pot holds when it is read:

    n~_t = -log P(x_t | c_0 .. c_{|C|-1}, x_{|C|} .. x_{t-1}) = logsumexp_v(z_v) - z_{x_t}

computed from the same forward pass that writes the token into the pot: the hidden state at t-1 is
projected through the LM head. Only the log-sum-exp over the vocabulary and the target's logit are needed, so
the (T, vocab) logits never exist: the head is applied in blocks of rows and of vocabulary, each (rows,
block) product reduced to its log-sum-exp while it is still in cache (the 49K-vocab head is ~20 % of a 135M
model's FLOPs; measured: docs/results/speed.md), and the target's logit is taken in fp32 from its weight row.

A large vocabulary on a small model. The head's share of a read grows with its rows per body parameter: the
built-in model (49K rows, 106M body parameters) spends ~10 % of a read in NuC, Gemma 3 270M (262K rows, ~100M)
45 % — share ~= c r / (1 + c r) with r = V d / body parameters and c ~= 0.46 on this CPU for both. Where the whole
vocabulary would cost more than :data:`BUDGET_R` (~15 % of the read), the log-sum-exp runs over a :class:`Sample`
of the vocabulary of that many rows: the first ids exactly (a tokenizer's most frequent pieces), every id of the
chunk being read exactly (so each token's own logit is in its sum), and a fixed stride over the remaining ids,
each standing for `stride` ids (Z's unbiased estimate, so the probability mass a name spreads over many rare
pieces is still counted — the shortlist that dropped it lost a name needle: docs/results/needle.md). Models under
the budget (the built-in one, Llama 3 8B, Qwen2 0.5B) stay exact; method option ``nuc_sample=off`` keeps every
model exact.
"""

from __future__ import annotations

import math

import torch

from ...runtime.devices import on_host

BLOCK = 256  # hidden-state rows projected at once on the CPU (in cache)
ROW_BLOCK = {"cpu": BLOCK}  # rows per product by device type (others: DEFAULT_ROW_BLOCK: fewer launches on a GPU)
DEFAULT_ROW_BLOCK = 1024
BUDGET_R = 0.38  # at most this many head rows x hidden size per body parameter: c r / (1 + c r) <= ~15 %
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


def _nll(model, h: torch.Tensor, targets: torch.Tensor, top: int = 0):
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
    best: tuple[torch.Tensor, torch.Tensor] | None = None  # with `top`: each row's best logits so far and their ids
    for j, s in enumerate(range(0, V, step)):
        n = min(step, V - s)
        z = torch.matmul(h, w[s:s + n].T, out=buf) if n == step else torch.matmul(h, w[s:s + n].T)  # (b, n)
        if bias is not None:
            z = z + bias[s:s + n]
        if cap:
            z = torch.tanh(z.float() / cap) * cap
        m = z.amax(-1, keepdim=True)  # (b, 1)
        if top:
            best = _keep_top(z, m[:, 0], s, top, best)
        z = z - m if z is not buf else z.sub_(m)  # the block's buffer is overwritten in place
        parts[:, j] = z.exp_().sum(-1, dtype=torch.float32).log_() + m[:, 0].float()
    lse = torch.logsumexp(parts, -1)  # (b,)
    nll = lse - _target_logit(h, w, bias, cap, targets)
    if not top:
        return nll
    v, k = best[0].topk(min(top, best[0].shape[1]), -1)  # (b, top) the most probable first
    return nll, best[1].gather(-1, k), v - lse[:, None]


def _keep_top(z: torch.Tensor, m: torch.Tensor, s: int, top: int,
              best: tuple[torch.Tensor, torch.Tensor] | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Each row's `top` best logits and their ids (b, top) float32 and long, unordered, after the vocabulary block
    z (b, n) of ids s .. s + n - 1, whose row maxima are m (b,). On the host a row whose block maximum is below
    its top-th best so far is not searched: the same values at about half the cost, since a tokenizer's first ids
    are its frequent pieces and after the first block most rows have their best (docs/results/speed.md; ties among
    equal logits may keep another id)."""
    if best is None:
        v, i = z.topk(min(top, z.shape[1]), -1, sorted=False)  # (b, top)
        return v.float(), i + s
    best_v, best_i = best
    rows = None  # all
    if on_host(z) and best_v.shape[1] == top:  # (a device would wait on the count)
        rows = (m.float() > best_v.amin(-1)).nonzero()[:, 0]  # (r,) the rows this block may improve
        if not rows.numel():
            return best
        z = z.index_select(0, rows)
    v, i = z.topk(min(top, z.shape[1]), -1, sorted=False)  # (r, top)
    v = torch.cat([best_v if rows is None else best_v[rows], v.float()], -1)
    i = torch.cat([best_i if rows is None else best_i[rows], i + s], -1)
    v, k = v.topk(min(top, v.shape[1]), -1, sorted=False)
    i = i.gather(-1, k)
    if rows is None:
        return v, i
    best_v[rows], best_i[rows] = v, i
    return best


def _target_logit(h: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, cap: float | None,
                  targets: torch.Tensor) -> torch.Tensor:
    """Each row's logit of its target in fp32 from the target's weight row (and bias), soft-capped: (b,)."""
    tgt = (h.float() * w.index_select(0, targets).float()).sum(-1)  # (b,)
    if bias is not None:
        tgt = tgt + bias.index_select(0, targets).float()
    return torch.tanh(tgt / cap) * cap if cap else tgt


class Sample:
    """The vocabulary rows a budgeted log-sum-exp reads (module docstring): ids [0, exact) and a stride of the rest,
    its weight rows gathered once per model (`rows` of them in all, the chunk's own ids added per call)."""

    def __init__(self, w: torch.Tensor, rows: int):
        V = w.shape[0]
        self.exact = rows // 2
        room = max(rows // 4, rows - self.exact - 1024)  # a chunk's own ids take up to ~1,024 of the rows
        self.exact = min(self.exact, V)
        self.stride = max(1, -(-(V - self.exact) // room))
        self.ids = torch.arange(self.exact, V, self.stride, device=w.device)  # (S,) the strided ids
        self.w = w.index_select(0, self.ids)  # (S, d) a copy: S / V of the head
        self.log_stride = math.log(self.stride)

    def nll(self, model, h: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """-log p(targets | h) with Z estimated over the sample: h (b, d), targets (b,) -> (b,) float32."""
        head = model.lm_head
        w, bias, cap = head.weight, getattr(head, "bias", None), _softcap(model)
        if on_host(targets):
            own = torch.unique(targets)
            own = own[own >= self.exact]  # (u,) the chunk's rarer ids, counted exactly
            own_off = None
        else:  # the same set without reading its size: every id once (sorted), the others' terms -inf
            own = targets.sort().values
            first = torch.ones_like(own, dtype=torch.bool)
            first[1:] = own[1:] != own[:-1]
            keep = first & (own >= self.exact)
            own_off = torch.zeros(own.shape[0], device=h.device).masked_fill_(~keep, float("-inf"))
            own = torch.where(keep, own, -1)
        clash = torch.isin(self.ids, own)  # (S,) strided ids the chunk also holds: counted once, exactly
        own_rows = own.clamp_min(0)
        parts = [_lse_rows(h, w[:self.exact], None if bias is None else bias[:self.exact], cap),
                 _lse_rows(h, w.index_select(0, own_rows), None if bias is None else bias.index_select(0, own_rows),
                           cap, own_off)]
        off = torch.zeros(self.ids.shape[0], device=h.device).masked_fill_(clash, float("-inf")) + self.log_stride
        parts.append(_lse_rows(h, self.w, None if bias is None else bias.index_select(0, self.ids), cap, off))
        return torch.logsumexp(torch.stack(parts, -1), -1) - _target_logit(h, w, bias, cap, targets)


def _lse_rows(h: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None, cap: float | None,
              off: torch.Tensor | None = None) -> torch.Tensor:
    """log sum_v exp(z_v + off_v) over the rows of w (n, d) in blocks: h (b, d) -> (b,) float32 (-inf for none)."""
    b = h.shape[0]
    if w.shape[0] == 0:
        return torch.full((b,), float("-inf"), device=h.device)
    step = min(w.shape[0], VOCAB_BLOCK.get(h.device.type, DEFAULT_VOCAB_BLOCK))
    out = []
    for s in range(0, w.shape[0], step):
        z = torch.matmul(h, w[s:s + step].T).float()  # (b, n)
        if bias is not None:
            z = z + bias[s:s + step].float()
        if cap:
            z = torch.tanh(z / cap) * cap
        if off is not None:
            z = z + off[s:s + step]
        out.append(torch.logsumexp(z, -1))
    return torch.logsumexp(torch.stack(out, -1), -1)


def budget_rows(model) -> int | None:
    """Head rows NuC may read per token (BUDGET_R), or None when the whole vocabulary fits that budget."""
    w = model.lm_head.weight
    V, d = w.shape
    body = sum(p.numel() for n, p in model.named_parameters() if p is not w and "embed" not in n)
    rows = int(BUDGET_R * body / d)
    return rows if rows < V else None


def _sample_for(model, w: torch.Tensor) -> Sample | None:
    """The model's Sample, built once (None: exact)."""
    key = "_infinipot_nuc_sample"
    got = getattr(model, key, None)
    if got is None or (got and got.w.device != w.device):
        rows = budget_rows(model)
        got = Sample(w, rows) if rows else False
        setattr(model, key, got)
    return got or None


def _nll_logits(model, h: torch.Tensor, targets: torch.Tensor, top: int = 0):
    """The same from whole logits, for a head that is not a plain weight matrix."""
    logits = lm_head_logits(model, h)  # (b, V)
    lse = torch.logsumexp(logits, -1)
    nll = lse - logits.gather(-1, targets[:, None])[:, 0]
    if not top:
        return nll
    v, i = logits.topk(top, -1)
    return nll, i, v - lse[:, None]


@torch.no_grad()
def novelty(model, prev_hidden: torch.Tensor | None, hidden: torch.Tensor, ids: torch.Tensor,
            sample: bool = True, top: int = 0):
    """Per-token cross-entropy (nats) of `ids` given the pot; with `sample`, over the model's Sample of the
    vocabulary when its head is over the budget (module docstring).

    prev_hidden: (d,) last hidden state before this chunk (None at the very start: novelty 0 for token 0).
    hidden: (T, d) hidden states of this chunk; ids: (T,) its token ids. Returns (T,) float32; with `top`,
    also the `top` most probable ids predicted for each token and their log-probabilities ((T, top) each; -1 and
    -inf where there is no prediction: the first token read, or a head read over a sample), from the same
    products (scoring/expected.py).
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
    sampled = _sample_for(model, w) if sample and nll is _nll else None
    if sampled is not None:
        nll = sampled.nll
    k = top if sampled is None else 0
    got_i = [torch.full((t - preds.shape[0], top), -1, dtype=torch.long, device=ids.device)]
    got_v = [torch.full((t - preds.shape[0], top), float("-inf"), device=ids.device)]
    rows = ROW_BLOCK.get(preds.device.type, DEFAULT_ROW_BLOCK)  # rows are independent: the same values either way
    for s in range(0, preds.shape[0], rows):
        r = nll(model, preds[s:s + rows], targets[s:s + rows], *((k,) if k else ()))  # (a Sample ranks nothing)
        if k:
            r, i, v = r
            got_i.append(i)
            got_v.append(v)
        out.append(r)
    res = torch.cat(out) if out else torch.zeros(0, device=ids.device)
    assert res.shape[0] == t
    if not top:
        return res
    if not k:  # a sampled head's partial sums rank no vocabulary
        return res, torch.full((t, top), -1, dtype=torch.long, device=ids.device), \
            torch.full((t, top), float("-inf"), device=ids.device)
    return res, torch.cat(got_i), torch.cat(got_v)
