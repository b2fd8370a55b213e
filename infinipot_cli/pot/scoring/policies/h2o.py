"""H2O (Zhang et al. 2023; §4 baseline): heavy hitters by the accumulated attention of every query so far, plus a
recent window (half and half)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..policy import Policy, SelectionInputs, top_sorted

if TYPE_CHECKING:
    import torch


@dataclass
class H2OPolicy(Policy):
    name: ClassVar[str] = "h2o"
    needs_acc: ClassVar[bool] = True

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        acc = inp.acc.clone()
        acc[..., inp.n - inp.budget // 2:] = float("inf")  # the recent half is always kept
        return top_sorted(acc, inp.budget)
