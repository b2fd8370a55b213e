"""CaP only (§4.4.2 ablation): InfiniPot's selection with no share chosen by novelty."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .infinipot import InfiniPotPolicy


@dataclass
class CaPPolicy(InfiniPotPolicy):
    name: ClassVar[str] = "cap"

    @classmethod
    def from_config(cls, cfg) -> "CaPPolicy":
        pol = super().from_config(cfg)
        pol.alpha = 0.0
        return pol
