"""TOVA (Oren et al. 2024; §4 baseline): keep the entries the last token attends to most, per layer and head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..policy import Policy, SelectionInputs, top_sorted

if TYPE_CHECKING:
    import torch


@dataclass
class TOVAPolicy(Policy):
    name: ClassVar[str] = "tova"
    catalyst: ClassVar[str | None] = "last"

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return top_sorted(inp.cap, inp.budget)
