"""The InfiniPot selector — InfiniPot §3.3.3 (Appendix B, Code 1): which entries a distillation keeps.

The top round(alpha * budget) entries by novelty (NuC) are kept first, the rest of the budget by the catalyst
score (CaP). Either single tokens (the paper) or whole sentence segments ranked by their mean score
(scoring/segments.py: `max_len` > 0), so a kept fact is not shredded into scattered tokens.

    scores.cap, scores.nov  (R1, R2, N)   one row per (layer, KV head), or (1, 1, N) when shared
    returns idx             (R1, R2, budget) int64 candidate indices, ascending per row
            by_nuc          (R1, R2, N) bool: the entries novelty chose (for --trace diagnostics)
"""

from __future__ import annotations

import torch

from .scorer import Scores
from .segments import segment_ids, take_segments


def select_tokens(scores: Scores, budget: int, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    cap, nov = scores.cap, scores.nov
    shape = torch.broadcast_shapes(cap.shape, nov.shape)
    cap, nov = cap.expand(shape), nov.expand(shape)
    forced = torch.zeros(shape, dtype=torch.bool, device=cap.device)
    t = min(int(round(alpha * budget)), budget)
    if t > 0:
        forced.scatter_(-1, nov.topk(t, dim=-1).indices, True)
    by_nuc = forced.clone()
    ranked = torch.where(forced, torch.full_like(cap, float("inf")), cap)
    return ranked.topk(budget, dim=-1).indices.sort(dim=-1).values, by_nuc


def select_segments(scores: Scores, starts: torch.Tensor, budget: int, alpha: float,
                    max_len: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Whole segments: round(alpha * budget) entries' worth by mean NuC first, then by mean CaP; the first
    segment that does not fit fills the rest. starts: (R1, R2, N) bool, a unit begins here."""
    shape = torch.broadcast_shapes(scores.cap.shape, scores.nov.shape, starts.shape)
    r1, r2, n = shape
    R = r1 * r2
    cap = scores.cap.expand(shape).reshape(R, n)
    nov = scores.nov.expand(shape).reshape(R, n)
    seg = segment_ids(starts.expand(shape).reshape(R, n), max_len)       # (R, N)
    taken = torch.zeros(R, n, dtype=torch.bool, device=cap.device)
    t = min(int(round(alpha * budget)), budget)
    if t > 0:
        taken = take_segments(seg, nov, torch.full((R,), t, device=cap.device), taken, exact=False, longest=max_len)
    by_nuc = taken.clone()
    taken = take_segments(seg, cap, budget - taken.long().sum(-1), taken, exact=True, longest=max_len)
    # fewer free segments than the budget (tiny pots; none left short otherwise): the best single entries, from a
    # top-k of the static bound (`short` is never read)
    short = budget - taken.long().sum(-1)                                 # (R,)
    extra = cap.masked_fill(taken, float("-inf")).topk(min(budget, n), dim=-1).indices
    rank = torch.arange(extra.shape[-1], device=extra.device).expand_as(extra)
    taken.scatter_(-1, extra, (rank < short[:, None]) | taken.gather(-1, extra))
    # the `budget` taken entries of each row, ascending (nonzero would read their count on the host)
    cols = torch.arange(n, device=cap.device).expand(R, n)
    idx = torch.where(taken, cols, n).sort(-1).values[:, :budget]
    return idx.view(r1, r2, budget), by_nuc.view(r1, r2, n)
