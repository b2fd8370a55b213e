"""InfiniPot (§3.3.3): CaP + NuC — the scorer's two scores (scoring/scorer.py), the selector's alpha split
(scoring/selector.py), single tokens or whole sentence segments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..policy import Policy, SelectionInputs

if TYPE_CHECKING:
    import torch


@dataclass
class InfiniPotPolicy(Policy):
    name: ClassVar[str] = "infinipot"
    catalyst: ClassVar[str | None] = "prompt"
    pot_options: ClassVar[bool] = True

    alpha: float = 0.5          # share of the budget chosen by novelty (NuC)
    segment: int = 48           # keep whole segments of at most N entries (0: single tokens)
    share: bool = True          # one score for every layer and head
    share_from: float = 0.5     # with share: the layers from this depth fraction on
    relevance: bool = True      # with a question: its attention beyond the template's
    pool: int = 0               # max-pool the catalyst scores over this many neighbours (SnapKV's kernel)

    def __post_init__(self) -> None:
        from ..scorer import InfiniPotScorer

        super().__post_init__()
        self.scorer = InfiniPotScorer(share=self.share, share_from=self.share_from, relevance=self.relevance)

    @property
    def needs_nuc(self) -> bool:  # type: ignore[override]
        return self.alpha > 0

    @property
    def needs_units(self) -> bool:  # type: ignore[override]
        return self.segment > 0

    def cap_from(self, num_layers: int) -> int:  # shared scores read the deeper layers only
        return self.scorer.first_layer(num_layers)

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        from ..selector import select_segments, select_tokens

        L, H = inp.shape
        cap, rel = inp.cap, inp.rel
        if self.pool > 1:  # a kept entry brings its neighbours
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
    import torch.nn.functional as F

    n = x.shape[-1]
    return F.max_pool1d(x.flatten(0, 1)[:, None], k, stride=1, padding=k // 2)[:, 0, :n].view(x.shape)
