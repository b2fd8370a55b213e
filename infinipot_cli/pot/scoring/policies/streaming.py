"""StreamingLLM (Xiao et al. 2024; §4 baseline): attention sinks (the first candidates) + the most recent entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..policy import Policy, SelectionInputs, head_and_tail

if TYPE_CHECKING:
    import torch


@dataclass
class StreamingPolicy(Policy):
    name: ClassVar[str] = "streaming"

    sinks: int = 4  # attention sinks kept at the start

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return head_and_tail(inp, min(self.sinks, inp.budget))
