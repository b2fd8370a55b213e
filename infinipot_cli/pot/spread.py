"""A general read keeps the whole document, not mostly its end: position-balanced distillation.

Each distillation of the CCD loop (InfiniPot §3.2) keeps C of the pot's entries by score. With the general
catalyst (CaP-G, no question) the newest text wins again and again, so what an early part left in the pot
halves at every cycle and a summary of a long manual sees mostly its last appendix. `spread_select` splits the
document read so far into `bins` stretches of equal length and gives each the same share of the budget (a
stretch with fewer candidates keeps them all; its unused share goes to the others: water-filling); inside a
stretch the policy's own selection (CaP + NuC, whole sentences) decides. The pot stays bounded: the same C
entries are kept, only their spread over the document changes.
"""

from __future__ import annotations

import torch


def quotas(counts: list[int], budget: int) -> list[int]:
    """Per-bin budgets: equal shares, capped by each bin's count, summing to min(budget, sum(counts))."""
    n = len(counts)
    out = [0] * n
    left = min(budget, sum(counts))
    open_bins = [i for i in range(n) if counts[i] > 0]
    while left > 0 and open_bins:
        share = max(1, left // len(open_bins))
        for i in list(open_bins):
            take = min(share, counts[i] - out[i], left)
            out[i] += take
            left -= take
            if out[i] >= counts[i]:
                open_bins.remove(i)
            if left == 0:
                break
    return out


def bins_of(pos: torch.Tensor, read: int, bins: int) -> torch.Tensor:
    """(N,) stretch index of document positions `pos` (N,) among `bins` equal stretches of [0, read)."""
    edges = torch.linspace(0, max(read, 1), bins + 1, device=pos.device)[1:-1]
    return torch.bucketize(pos.to(edges.dtype), edges, right=True)


def spread_select(policy, inp, src: torch.Tensor, read: int, bins: int) -> torch.Tensor:
    """`policy.select(inp)` with the budget shared out over `bins` stretches of the document.

    src: (L|1, H|1, N) document positions of the candidates (every head holds the same: shared selection);
    returns (L, H, budget) candidate indices, ascending, as `policy.select` does."""
    from .scoring.policy import SelectionInputs

    L, H = inp.shape
    pos = src.reshape(-1, src.shape[-1])[0]  # (N,)
    b = bins_of(pos, read, bins)
    # the one host read of a spread distillation (on a GPU, a wait): the stretches' counts, for the quotas
    counts = torch.bincount(b, minlength=bins).tolist()
    want = quotas(counts, inp.budget)
    order = b.argsort(stable=True)  # (N,) candidates stretch by stretch, ascending inside each
    first = [0]
    for c in counts:
        first.append(first[-1] + c)
    picked, by_nuc = [], torch.zeros(L, H, inp.n, dtype=torch.bool, device=pos.device)

    def part(x, sel):
        return None if x is None else x[..., sel]

    for k, q in enumerate(want):
        if q <= 0:
            continue
        sel = order[first[k]:first[k + 1]]  # (n_k,) candidate indices of this stretch, ascending
        if q >= counts[k]:
            picked.append(sel)
            continue
        starts = part(inp.starts, sel)
        if starts is not None:
            starts = starts.clone()
            starts[..., 0] = True  # a stretch begins a unit
        sub = SelectionInputs(budget=q, n=counts[k], shape=inp.shape, nov=inp.nov[..., sel], cap=part(inp.cap, sel),
                              rel=part(inp.rel, sel), acc=part(inp.acc, sel), starts=starts)
        idx = policy.select(sub)[0, 0]  # (q,) shared: every head the same
        if policy.last_nuc is not None:
            by_nuc[..., sel[idx]] = policy.last_nuc[..., idx]
        picked.append(sel[idx])
    chosen = torch.cat(picked).sort().values if picked else torch.zeros(0, dtype=torch.long, device=pos.device)
    policy.last_nuc = by_nuc
    return chosen.view(1, 1, -1).expand(L, H, chosen.numel())
