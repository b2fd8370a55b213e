"""The full-context reference (§4): nothing is ever evicted (memory grows with the document)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..policy import Policy


@dataclass
class FullPolicy(Policy):
    name: ClassVar[str] = "full"
    bounded: ClassVar[bool] = False
