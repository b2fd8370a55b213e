"""SnapKV (Li et al. 2024): read everything, then one compression before the answer with the question as the
observation window, the window's attention max-pooled over 7 neighbours (a kept entry brings its context)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .infinipot import InfiniPotPolicy


@dataclass
class SnapKVPolicy(InfiniPotPolicy):
    name: ClassVar[str] = "snapkv"
    bounded: ClassVar[bool] = False
    compress_at_end: ClassVar[bool] = True
    pot_options: ClassVar[bool] = False

    alpha: float = 0.0
    segment: int = 0
    share: bool = False
    relevance: bool = False
    pool: int = 7

    @classmethod
    def from_config(cls, cfg) -> "SnapKVPolicy":
        return cls()  # the published method: InfiniPot's options do not apply
