"""Selection policies: which pot entries survive a distillation — InfiniPot (§3.3) and the baselines of §4.

Every policy runs inside the same CCD loop under the same memory cap (engine.py calls `select` whenever the
pot is full). A policy sees the *candidates* — the pot entries after the pinned header, in pot order — and
returns, per (layer, KV head), the indices of `budget` of them to keep:

    select(inp) -> (L, H_kv, budget) int64, ascending per row

What a policy needs it declares, so the engine computes nothing it does not use:

    catalyst     "prompt": append the catalyst prompt and capture its rows (CaP); "last": capture the last
                 query row of the chunk (TOVA); None: no attention capture
    needs_nuc    compute NuC for every token read
    needs_acc    accumulate every query row's attention (H2O)
    needs_units  say where sentence units start (`starts`, for segment selection)
    relevance    capture question relevance (`rel`) when the catalyst holds a question
    cap_from     the first layer whose captured scores `select` reads; earlier layers are not captured
    rerotate     re-rotate kept keys to contiguous positions (CR-RoPE); only the `plain` speed reference skips it

InfiniPot is a scorer (scoring/scorer.py) plus a selector (scoring/selector.py); the baselines are in
scoring/baselines.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from ..config import PotConfig
from .scorer import InfiniPotScorer
from .selector import select_segments, select_tokens


@dataclass
class SelectionInputs:
    budget: int                         # entries to keep per head (pinned header excluded)
    n: int                              # number of candidates
    shape: tuple[int, int]              # (L, H)
    nov: torch.Tensor                   # (L, H, N) float32 NuC novelty
    cap: torch.Tensor | None = None     # (L, H, N) float32 CaP sum (TOVA: the last row's attention); 0 below cap_from
    rel: torch.Tensor | None = None     # (L, H, N) float32 question relevance (CaP-Q only); 0 below cap_from
    acc: torch.Tensor | None = None     # (L, H, N) float32 accumulated attention (H2O)
    starts: torch.Tensor | None = None  # (L|1, H|1, N) bool: a sentence unit starts here


class Policy:
    name = "base"
    catalyst: str | None = None
    needs_nuc = False
    needs_acc = False
    needs_units = False
    relevance = False
    share = False
    rerotate = True
    last_nuc: torch.Tensor | None = None  # (L, H, N) bool after select: entries chosen by novelty

    def cap_from(self, num_layers: int) -> int:
        return 0

    def select(self, inp: SelectionInputs) -> torch.Tensor:  # pragma: no cover - interface
        raise NotImplementedError


class InfiniPotPolicy(Policy):
    """CaP + NuC (§3.3.3): the scorer's two scores, the selector's alpha split, tokens or whole sentences."""

    catalyst = "prompt"

    def __init__(self, cfg: PotConfig, alpha: float | None = None, pool: int = 0):
        self.name = cfg.method
        self.alpha = cfg.alpha if alpha is None else alpha
        self.segment = cfg.segment
        self.share = cfg.share
        self.relevance = cfg.relevance
        self.pool = pool
        self.scorer = InfiniPotScorer(share=cfg.share, share_from=cfg.share_from, relevance=cfg.relevance)

    @property
    def needs_nuc(self) -> bool:  # type: ignore[override]
        return self.alpha > 0

    @property
    def needs_units(self) -> bool:  # type: ignore[override]
        return self.segment > 0

    def cap_from(self, num_layers: int) -> int:  # shared scores read the deeper layers only
        return self.scorer.first_layer(num_layers)

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        L, H = inp.shape
        cap, rel = inp.cap, inp.rel
        if self.pool > 1:  # SnapKV's kernel: a kept entry brings its neighbours
            cap = _max_pool(cap, self.pool)
        scores = self.scorer.score(cap, inp.nov, rel)
        if self.segment and inp.starts is not None:
            idx, by_nuc = select_segments(scores, inp.starts, inp.budget, self.alpha, self.segment)
        else:
            idx, by_nuc = select_tokens(scores, inp.budget, self.alpha)
        self.last_nuc = by_nuc.expand(L, H, inp.n)
        return idx.expand(L, H, inp.budget)


def _max_pool(x: torch.Tensor, k: int) -> torch.Tensor:
    """Max-pool scores (L, H, N) over `k` neighbouring entries."""
    n = x.shape[-1]
    return F.max_pool1d(x.flatten(0, 1)[:, None], k, stride=1, padding=k // 2)[:, 0, :n].view(x.shape)


def make_policy(cfg: PotConfig) -> Policy:
    """The policy of `cfg.method`; InfiniPot's options come from `cfg`."""
    from . import baselines

    if cfg.method == "infinipot":
        return InfiniPotPolicy(cfg)
    if cfg.method == "cap":  # CaP only (§4.4.2 ablation)
        return InfiniPotPolicy(cfg, alpha=0.0)
    if cfg.method == "snapkv":  # one compression at the end, question as the window, pooled over 7
        return InfiniPotPolicy(PotConfig(method="snapkv", size=None, segment=0, share=False, relevance=False),
                               alpha=0.0, pool=7)
    if cfg.method not in baselines.BASELINES:
        raise ValueError(f"unknown method {cfg.method!r}")
    return baselines.BASELINES[cfg.method]()
