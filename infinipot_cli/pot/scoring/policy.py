"""What a selection policy is: which pot entries survive a distillation (InfiniPot §3.3 and the baselines of §4).

Every policy runs inside the same CCD loop under the same memory cap (engine.py calls `select` whenever the
pot is full). A policy sees the *candidates* — the pot entries after the pinned header, in pot order — and
returns, per (layer, KV head), the indices of `budget` of them to keep:

    select(inp) -> (L, H_kv, budget) int64, ascending per row

A policy is a dataclass whose fields are its options (taken from the PotConfig knobs of the same name by
`from_config`); what it needs it declares as class attributes, so the engine computes nothing it does not use:

    catalyst         "prompt": append the catalyst prompt and capture its rows (CaP); "last": capture the last
                     query row of the chunk (TOVA); None: no attention capture
    needs_nuc        compute NuC for every token read
    needs_acc        accumulate every query row's attention (H2O)
    needs_units      say where sentence units start (`starts`, for segment selection)
    relevance        capture question relevance (`rel`) when the catalyst holds a question
    cap_from         the first layer whose captured scores `select` reads; earlier layers are not captured
    rerotate         re-rotate kept keys to contiguous positions (CR-RoPE); only the `plain` speed reference skips it
    bounded          reads under the memory cap (False: a reference that keeps everything while reading)
    compress_at_end  unbounded, but one compression to `keep` entries before the answer (SnapKV)
    reader           a selection method for users (False: `plain`, a timing reference of `bench speed`)
    pot_options      takes the InfiniPot options of config.py (final_keep, reencode, recall, ...)

One policy per module in scoring/policies/; the registry (scoring/policies/__init__.py) is built from the
classes, so adding a method is adding one file. This module and the policy modules import no torch at import
time (config.py reads the registry for `--help`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    import torch


@dataclass
class SelectionInputs:
    budget: int                         # entries to keep per head (pinned header excluded)
    n: int                              # number of candidates
    shape: tuple[int, int]              # (L, H)
    nov: torch.Tensor                   # (L, H, N) float32 NuC novelty
    cap: torch.Tensor | None = None     # (L, H, N) float32 CaP sum (TOVA: the last row's attention); 0 below cap_from
    rel: torch.Tensor | None = None     # (L, H, N) float32 question relevance (CaP-Q only); 0 below cap_from
    acc: torch.Tensor | None = None     # (L, H, N) float32 accumulated attention (H2O)
    starts: torch.Tensor | None = None  # (L|1, H|1, N) bool: a sentence unit starts here


@dataclass
class Policy:
    name: ClassVar[str] = ""
    catalyst: ClassVar[str | None] = None
    needs_nuc: ClassVar[bool] = False
    needs_acc: ClassVar[bool] = False
    needs_units: ClassVar[bool] = False
    relevance: ClassVar[bool] = False
    share: ClassVar[bool] = False
    rerotate: ClassVar[bool] = True
    bounded: ClassVar[bool] = True
    compress_at_end: ClassVar[bool] = False
    reader: ClassVar[bool] = True
    pot_options: ClassVar[bool] = False

    def __post_init__(self) -> None:
        self.last_nuc: torch.Tensor | None = None  # (L, H, N) bool after select: entries chosen by novelty

    @classmethod
    def from_config(cls, cfg) -> "Policy":
        """The policy with its options taken from the PotConfig fields of the same names."""
        return cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cls) if hasattr(cfg, f.name)})

    def cap_from(self, num_layers: int) -> int:
        return 0

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        """(L, H, budget) int64 candidate indices to keep, ascending per row (the reference keeps everything)."""
        raise NotImplementedError(f"{self.name} never distills")


def span(inp: SelectionInputs, start: int, stop: int) -> torch.Tensor:
    """Candidates start..stop-1 in every (layer, head): (L, H, stop - start)."""
    import torch

    L, H = inp.shape
    return torch.arange(start, stop, device=inp.nov.device).view(1, 1, -1).expand(L, H, -1)


def head_and_tail(inp: SelectionInputs, head: int) -> torch.Tensor:
    """The first `head` candidates and the most recent `budget - head`: (L, H, budget)."""
    import torch

    return torch.cat([span(inp, 0, head), span(inp, inp.n - (inp.budget - head), inp.n)], -1)


def top_sorted(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The indices of the `k` highest scores per row, ascending: (..., k)."""
    return scores.topk(k, dim=-1).indices.sort(dim=-1).values
