"""The baselines of InfiniPot §4 under the same CCD loop and memory cap (scoring/policies.py's interface),
and `plain`, the speed reference of `bench speed`."""

from __future__ import annotations

import torch

from .policies import Policy, SelectionInputs


def _range(inp: SelectionInputs, start: int, stop: int) -> torch.Tensor:
    L, H = inp.shape
    return torch.arange(start, stop, device=inp.nov.device).view(1, 1, -1).expand(L, H, -1)


def _head_and_tail(inp: SelectionInputs, head: int) -> torch.Tensor:
    return torch.cat([_range(inp, 0, head), _range(inp, inp.n - (inp.budget - head), inp.n)], -1)


class SirLLMPolicy(Policy):
    """SirLLM / NuC only: the highest-novelty tokens, the same set in every head."""

    name = "sirllm"
    needs_nuc = True

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return inp.nov.topk(inp.budget, dim=-1).indices.sort(dim=-1).values


class StreamingPolicy(Policy):
    """StreamingLLM: attention sinks (the first 4 candidates) + the most recent entries."""

    name = "streaming"
    sinks = 4

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return _head_and_tail(inp, min(self.sinks, inp.budget))


class TruncatePolicy(Policy):
    """Keep the beginning and the end: the first half of the budget and the most recent half."""

    name = "truncate"

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return _head_and_tail(inp, inp.budget // 2)


class H2OPolicy(Policy):
    """H2O: heavy hitters by accumulated attention of every query so far, plus a recent window (half/half)."""

    name = "h2o"
    needs_acc = True

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        acc = inp.acc.clone()
        acc[..., inp.n - inp.budget // 2:] = float("inf")
        return acc.topk(inp.budget, dim=-1).indices.sort(dim=-1).values


class TOVAPolicy(Policy):
    """TOVA: keep the entries the last token attends to most (per layer and head)."""

    name = "tova"
    catalyst = "last"

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return inp.cap.topk(inp.budget, dim=-1).indices.sort(dim=-1).values


class FullPolicy(Policy):
    """Full-context reference: nothing is ever evicted (memory grows with the document)."""

    name = "full"


class PlainPolicy(Policy):
    """`bench speed`'s speed limit: the engine's own fill/crop schedule keeping the most recent entries, with
    no scoring, no NuC and no re-rotation (so its positions drift: a timing reference, not a reader)."""

    name = "plain"
    rerotate = False

    def select(self, inp: SelectionInputs) -> torch.Tensor:
        return _range(inp, inp.n - inp.budget, inp.n)


BASELINES = {"sirllm": SirLLMPolicy, "nuc": SirLLMPolicy, "streaming": StreamingPolicy,
             "truncate": TruncatePolicy, "h2o": H2OPolicy, "tova": TOVAPolicy, "full": FullPolicy,
             "plain": PlainPolicy}
