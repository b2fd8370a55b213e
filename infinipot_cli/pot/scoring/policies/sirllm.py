"""SirLLM / NuC only (§4 baseline): the highest-novelty tokens, the same set in every head."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..policy import Policy, SelectionInputs, top_sorted

if TYPE_CHECKING:
    import torch


@dataclass
class SirLLMPolicy(Policy):
    name: ClassVar[str] = "sirllm"
    needs_nuc: ClassVar[bool] = True

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return top_sorted(inp.nov, inp.budget)
