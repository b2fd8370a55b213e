"""Selection policies: which pot entries survive a distillation — InfiniPot §3.3.3 and the baselines of §4.

Every policy runs inside the same CCD loop under the same memory cap (the engine calls `select` whenever
the pot is full). A policy sees the *candidates* — the pot entries after the pinned prefix, in document
order — and returns, per (layer, KV head), the indices of `budget` candidates to keep:

    select(inp) -> (L, H_kv, budget) int64, ascending per head

Inputs (all (L, H_kv, N) over the N candidates): `cap` — CaP scores (or TOVA's last-row attention),
`rel` — question relevance (question rows minus template rows, scoring/cap.py; CaP-Q only), `nov` — NuC
novelty, `acc` — accumulated attention (H2O), `starts` — where sentence units start (scoring/segments.py).
What a policy needs it declares, so the engine computes nothing it does not use:

    catalyst  "prompt": append the catalyst prompt and capture its rows; "last": capture the last query
              row of the chunk (no catalyst); None: no attention capture
    needs_nuc compute NuC for every token read
    needs_acc accumulate every query row's attention (H2O)
    needs_units  say where sentence units start (`starts`, for segment selection)
    relevance capture question relevance (`rel`) when the catalyst has a question
    share     every (layer, head) keeps the same entries (inputs that depend only on the entry need one row)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .segments import segment_ids, take_segments


@dataclass
class SelectionInputs:
    budget: int                    # entries to keep per head (pinned prefix excluded)
    n: int                         # number of candidates
    cap: torch.Tensor | None       # (L, H, N) float32
    nov: torch.Tensor              # (L, H, N) float32
    acc: torch.Tensor | None       # (L, H, N) float32
    shape: tuple[int, int]         # (L, H)
    rel: torch.Tensor | None = None     # (L, H, N) float32 question relevance (None without a question)
    starts: torch.Tensor | None = None  # (L, H, N) bool: a sentence unit starts here (policies with `segment`)


def _sorted(idx: torch.Tensor) -> torch.Tensor:
    return idx.sort(dim=-1).values


def _range(inp: SelectionInputs, start: int, stop: int) -> torch.Tensor:
    L, H = inp.shape
    return torch.arange(start, stop).view(1, 1, -1).expand(L, H, -1)


def _topk_with_forced(scores: torch.Tensor, forced: torch.Tensor | None, k: int) -> torch.Tensor:
    """Top-k of scores (L, H, N) per head, where `forced` (bool, same shape) entries always win."""
    s = scores.clone()
    if forced is not None:
        s = torch.where(forced, torch.full_like(s, float("inf")), s)
    return _sorted(s.topk(k, dim=-1).indices)


def _span_mean(x: torch.Tensor, span: int) -> torch.Tensor:
    """Sliding mean over `span` neighbouring entries along the last axis (same length). x: (L, H, N)."""
    n = x.shape[-1]
    flat = x.flatten(0, 1)[:, None].float()  # (L*H, 1, N)
    out = F.avg_pool1d(flat, span, stride=1, padding=span // 2, count_include_pad=False)[:, 0, :n]
    return out.view(x.shape)


class Policy:
    name = "base"
    catalyst: str | None = None
    needs_nuc = False
    needs_acc = False
    needs_units = False
    relevance = False
    share = False

    def select(self, inp: SelectionInputs) -> torch.Tensor:  # pragma: no cover - interface
        raise NotImplementedError

    def age(self, nov: torch.Tensor) -> torch.Tensor:
        """Novelty of entries that survived a distillation, as carried into the next cycle."""
        return nov

    def describe(self) -> dict:
        return {"name": self.name}


@dataclass
class InfiniPotPolicy(Policy):
    """CaP + NuC (§3.3.3, Appendix B Code 1): the top round(alpha*budget) entries by NuC first, the rest by CaP.

    Options beyond the paper (all off in this class = the paper's behaviour; the product default, PotConfig,
    turns on segment=48, relevance and share with share_from=0.5 — measured on the needle bench, issue 6 — and
    `infinipot-paper` turns them off):
      pool        max-pool CaP scores over `pool` neighbouring entries (SnapKV's kernel), so a kept token
                  brings its neighbours: contiguous spans rather than scattered tokens
      nuc_decay   multiply the stored novelty of survivors by this factor each cycle, so the first chunk's
                  novelty (where everything is new) does not crowd out later novelty forever
      recent      always keep the last `recent` candidates (a short recency window)
      span        average both scores over a sliding window of `span` entries, so whole spans around
                  salient tokens are kept instead of scattered single tokens
      share       one CaP score per entry for every layer and head (the mean over all of them): early
                  layers, whose catalyst attention is mostly local, keep what the deep layers find. NuC is
                  per token already, so with share every head keeps the same subset of the document
      share_from  with share, average only the layers from this fraction of the depth on (0 = all layers).
                  Measured on the built-in model (issue 6): the catalyst's attention averaged over all layers
                  favours " the" tokens everywhere, and the needle's answer words rank ~800th of ~2000;
                  averaged over the deeper half, the needle ranks near the top and stays in the pot
      relevance   rank by question relevance (the question rows' attention minus the template rows', see
                  scoring/cap.py) instead of the CaP sum, whenever the catalyst has a question (CaP-Q)
      segment     select whole sentence segments of at most `segment` entries, in document coordinates
                  (scoring/segments.py), by their mean score: NuC's share first, then CaP's
      rel_share   with relevance, the share of the CaP slots ranked by question relevance; the rest are
                  ranked by the plain CaP sum (1 = relevance only, the default). Meant to keep relevance's
                  margin for the answer's sentence while filling fewer slots with sentences that merely
                  resemble the question. Measured (issue 6, four cells): 0.25 answered more hidden-fact
                  needles but kept only 44 % of a pass-key needle on real prose; 0.5 kept it and answered one
                  more — the same trade-off as relevance on/off
    """

    alpha: float = 0.5
    pool: int = 0
    nuc_decay: float = 1.0
    recent: int = 0
    span: int = 0
    share: bool = False
    share_from: float = 0.0
    relevance: bool = False
    segment: int = 0
    rel_share: float = 1.0
    name: str = "infinipot"
    catalyst: str | None = "prompt"

    @property
    def needs_nuc(self) -> bool:  # type: ignore[override]
        return self.alpha > 0

    @property
    def needs_units(self) -> bool:  # type: ignore[override]
        return self.segment > 0

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        k = inp.budget
        cap, rel = inp.cap, (inp.rel if self.relevance else None)
        if rel is not None and self.rel_share >= 1.0:
            cap, rel = rel, None  # relevance only
        if self.pool and self.pool > 1:
            cap = self._pooled(cap)
            rel = self._pooled(rel) if rel is not None else None
        if self.segment and inp.starts is not None:
            return self._select_segments(inp, cap, rel)
        nov = inp.nov
        if self.share:
            cap = self._shared(cap)  # (1, 1, N): smoothed once, not once per head
            rel = self._shared(rel) if rel is not None else None
        if self.span and self.span > 1:
            cap, nov = _span_mean(cap, self.span), _span_mean(nov, self.span)
            rel = _span_mean(rel, self.span) if rel is not None else None
        cap = cap.expand_as(nov)
        forced = torch.zeros_like(cap, dtype=torch.bool)
        recent = min(self.recent, k)
        if recent:
            forced[..., inp.n - recent:] = True
        t = min(int(round(self.alpha * k)), k - recent)
        if t > 0:
            nov = nov.masked_fill(forced, float("-inf"))
            forced.scatter_(-1, nov.topk(t, dim=-1).indices, True)
        self.last_nuc = forced.clone()
        r = int(round(self.rel_share * (k - recent - t))) if rel is not None else 0
        if r > 0:  # the relevance share of the CaP slots first, then the plain CaP sum
            rel = rel.expand_as(nov).masked_fill(forced, float("-inf"))
            forced.scatter_(-1, rel.topk(r, dim=-1).indices, True)
        return _topk_with_forced(cap, forced, k)

    def _pooled(self, x: torch.Tensor) -> torch.Tensor:
        """Max-pool scores (L, H, N) over `pool` neighbouring entries (SnapKV's kernel)."""
        n = x.shape[-1]
        out = F.max_pool1d(x.flatten(0, 1)[:, None], self.pool, stride=1, padding=self.pool // 2)[:, 0, :n]
        return out.view(x.shape)

    def _shared(self, cap: torch.Tensor) -> torch.Tensor:
        """One score per entry: the mean over the heads of the layers from share_from on. (L, H, N) -> (1, 1, N)."""
        first = min(int(round(self.share_from * cap.shape[0])), cap.shape[0] - 1)
        return cap[first:].mean(dim=(0, 1), keepdim=True)

    def _select_segments(self, inp: SelectionInputs, cap: torch.Tensor, rel: torch.Tensor | None) -> torch.Tensor:
        """Whole sentence segments: round(alpha*budget) entries' worth by mean NuC first, then (with a
        relevance mix, `rel`) rel_share of what is left by mean relevance, the rest by mean CaP."""
        L, H = inp.shape
        k, n = inp.budget, inp.n
        nov, starts = inp.nov, inp.starts
        if self.share:  # every head holds the same entries: one row
            cap, nov, starts = self._shared(cap), nov[:1, :1], starts[:1, :1]
            rel = self._shared(rel) if rel is not None else None
        R = starts.shape[0] * starts.shape[1]
        rows3 = (starts.shape[0], starts.shape[1], n)
        cap, nov, starts = cap.expand(rows3).reshape(R, n), nov.reshape(R, n), starts.reshape(R, n)
        seg = segment_ids(starts, self.segment)                               # (R, N)
        taken = torch.zeros(R, n, dtype=torch.bool)
        recent = min(self.recent, k)
        if recent:
            taken[:, n - recent:] = True
        t = min(int(round(self.alpha * k)), k - recent)
        if t > 0:
            taken = take_segments(seg, nov, torch.full((R,), t), taken, exact=False)
        by_nuc = taken.clone()
        if rel is not None:  # relevance's share of what is left, whole segments only
            quota = ((k - taken.long().sum(-1)).float() * self.rel_share).round().long()  # (R,)
            taken = take_segments(seg, rel.expand(rows3).reshape(R, n), quota, taken, exact=False)
        taken = take_segments(seg, cap, k - taken.long().sum(-1), taken, exact=True)
        short = k - taken.long().sum(-1)                                      # (R,)
        if int(short.max()) > 0:  # fewer free segments than the budget (tiny pots): best single entries
            extra = cap.masked_fill(taken, float("-inf")).topk(int(short.max()), dim=-1).indices
            rank = torch.arange(extra.shape[-1]).expand_as(extra)
            taken.scatter_(-1, extra, rank < short[:, None])
        idx = taken.nonzero()[:, 1].view(R, k)                                # ascending per row
        rows = (1, 1) if self.share else (L, H)
        self.last_nuc = by_nuc.view(*rows, n).expand(L, H, n)
        return idx.view(*rows, k).expand(L, H, k)

    def age(self, nov: torch.Tensor) -> torch.Tensor:
        return nov * self.nuc_decay if self.nuc_decay != 1.0 else nov

    def describe(self) -> dict:
        return {"name": self.name, "alpha": self.alpha, "pool": self.pool, "nuc_decay": self.nuc_decay,
                "recent": self.recent, "span": self.span, "share": self.share,
                "share_from": self.share_from, "relevance": self.relevance, "segment": self.segment,
                "rel_share": self.rel_share}


class CapPolicy(InfiniPotPolicy):
    """CaP only (§4.4.2 ablation): alpha = 0."""

    def __init__(self, **kw):
        super().__init__(alpha=0.0, name="cap", **kw)


class SirLLMPolicy(Policy):
    """SirLLM / NuC only: the highest-novelty tokens, the same set in every head."""

    name = "sirllm"
    needs_nuc = True

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return _sorted(inp.nov.topk(inp.budget, dim=-1).indices)


class StreamingPolicy(Policy):
    """StreamingLLM: attention sinks (the first `sinks` candidates) + the most recent entries."""

    name = "streaming"

    def __init__(self, sinks: int = 4):
        self.sinks = sinks

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        s = min(self.sinks, inp.budget)
        return torch.cat([_range(inp, 0, s), _range(inp, inp.n - (inp.budget - s), inp.n)], -1)


class TruncatePolicy(Policy):
    """Keep the beginning and the end: the first half of the budget and the most recent half."""

    name = "truncate"

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        head = inp.budget // 2
        return torch.cat([_range(inp, 0, head), _range(inp, inp.n - (inp.budget - head), inp.n)], -1)


class H2OPolicy(Policy):
    """H2O: heavy hitters by accumulated attention of every query so far, plus a recent window (half/half)."""

    name = "h2o"
    needs_acc = True

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        recent = inp.budget // 2
        forced = torch.zeros_like(inp.acc, dtype=torch.bool)
        if recent:
            forced[..., inp.n - recent:] = True
        return _topk_with_forced(inp.acc, forced, inp.budget)


class TOVAPolicy(Policy):
    """TOVA: keep the entries the last token attends to most (per layer and head)."""

    name = "tova"
    catalyst = "last"

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return _sorted(inp.cap.topk(inp.budget, dim=-1).indices)


class SnapKVPolicy(InfiniPotPolicy):
    """SnapKV reference: no cap while reading; one compression at the end with the question as the
    observation window, scores max-pooled over 7 neighbours (SnapKV's kernel)."""

    def __init__(self, **kw):
        super().__init__(alpha=0.0, pool=7, name="snapkv", **kw)


class FullPolicy(Policy):
    """Full-context reference: nothing is ever evicted (memory grows with the document)."""

    name = "full"


METHODS = ["infinipot", "cap", "sirllm", "streaming", "truncate", "h2o", "tova", "snapkv", "full"]
UNBOUNDED = {"full", "snapkv"}  # references that read without a memory cap


def make_policy(method: str, alpha: float = 0.5, **opts) -> Policy:
    if method == "infinipot":
        return InfiniPotPolicy(alpha=alpha, **opts)
    if method == "cap":
        return CapPolicy(**opts)
    simple = {"sirllm": SirLLMPolicy, "nuc": SirLLMPolicy, "streaming": StreamingPolicy, "truncate": TruncatePolicy,
              "h2o": H2OPolicy, "tova": TOVAPolicy, "full": FullPolicy}
    if method == "snapkv":
        return SnapKVPolicy()
    if method not in simple:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    return simple[method]()
