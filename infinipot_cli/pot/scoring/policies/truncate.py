"""Truncation (§4 baseline): keep the beginning and the end — the first half of the budget and the most recent half."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..policy import Policy, SelectionInputs, head_and_tail

if TYPE_CHECKING:
    import torch


@dataclass
class TruncatePolicy(Policy):
    name: ClassVar[str] = "truncate"

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return head_and_tail(inp, inp.budget // 2)
