"""`plain`, the speed limit of `bench speed` (not a reader): the engine's own fill/crop schedule keeping the most
recent entries, with no scoring, no NuC and no re-rotation (so its positions drift: a timing reference only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..policy import Policy, SelectionInputs, span

if TYPE_CHECKING:
    import torch


@dataclass
class PlainPolicy(Policy):
    name: ClassVar[str] = "plain"
    rerotate: ClassVar[bool] = False
    reader: ClassVar[bool] = False

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return span(inp, inp.n - inp.budget, inp.n)
