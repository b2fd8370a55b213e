"""The decode step replayed as a CUDA graph: a token of a small model in one launch instead of ~1,000.

On a GPU the eager decode step (``decode_step.py``) launches ~30 kernels a layer, each a few microseconds of host
work for far less of GPU work when the model is small: the built-in model's token is launch-bound (30 layers,
~900 launches), and so is much of an 8B model's. :class:`GraphedStep` captures that same step once per answer
cache — the embedding, every layer (``DecodeStep.layers_forward``) and the final norm — and replays it per token
with two inputs written in place: the token id and its position. What depends on the position comes from those
tensors inside the graph: the RoPE tables are taken from tables for every row of the cache (computed once per
capture; the rotary module is elementwise in the position, the same bits as the eager step's blocks), the masks
are compared from a column index, and the key/value row is written at that index. So a replay is the eager step,
kernel for kernel: the same values and the same tokens.

A capture is tied to the answer cache's buffers: a new answer cache, or one that grew (every ``GROW`` tokens past
its room), is captured again (a capture costs about three eager tokens). CUDA only; the RoPE types that rescale
with the longest position (dynamic, longrope) and layers of unequal lengths decode eagerly, and so does
everything when a capture fails or ``INFINIPOT_CUDA_GRAPHS=0``. ``torch.compile`` is not used: compiling 30 layers
costs tens of seconds per process, more than a short answer takes (compiled_step.py's ahead-of-time libraries are
built for the CPU only).
"""

from __future__ import annotations

import os

import torch


def wanted(device: torch.device) -> bool:
    """CUDA graphs for the decode step on `device`: on CUDA unless INFINIPOT_CUDA_GRAPHS=0."""
    return device.type == "cuda" and torch.cuda.is_available() and os.environ.get("INFINIPOT_CUDA_GRAPHS", "1") != "0"


class GraphedStep:
    """One captured decode step (see the module docstring); `run` replays it or returns None (decode eagerly)."""

    def __init__(self):
        self.key: tuple | None = None  # the buffers the graph was captured over
        self.graph = None
        self.broken = False  # a capture failed: eager from now on
        self.token = self.pos = self.out = None

    def applies(self, step, at: list[int]) -> bool:
        return not self.broken and step._rope_blocks and len(set(at)) == 1

    def run(self, step, token: int, keys: list[torch.Tensor], values: list[torch.Tensor], at: list[int]):
        """The final-norm hidden state (1, d) of `token` at row `at[0]` of the buffers `keys`/`values` (per layer
        (H_kv, capacity, D), the row already counted as filled), its key and value written there; None when the
        graph does not apply (the caller runs the eager step over the same rows)."""
        if not self.applies(step, at):
            return None
        key = (tuple(t.data_ptr() for t in keys), tuple(t.data_ptr() for t in values), keys[0].shape[1])
        try:
            if key != self.key:
                self._capture(step, token, at[0], keys, values)
                self.key = key
            else:
                self.token.fill_(token)
                self.pos.fill_(at[0])
                self.graph.replay()
        except Exception:  # noqa: BLE001 - a capture the driver refuses: decode eagerly, the same values
            self.broken, self.graph, self.key = True, None, None
            return None
        return self.out

    def _body(self, step, tables: list[torch.Tensor], cols: torch.Tensor, keys, values) -> torch.Tensor:
        """The step as a function of the static tensors: token, position, RoPE tables, buffers."""
        x = step.embed(self.token)  # (1, d)
        ropes = []
        for i in range(0, len(tables), 3):  # per layer type: cos, sin_rot at the position; swap
            ropes += [tables[i].index_select(0, self.pos), tables[i + 1].index_select(0, self.pos), tables[i + 2]]
        seen = cols <= self.pos  # (capacity,) the filled rows, this token's included
        made: dict = {}
        masks = []
        for L in step.layers:
            m = made.get(L.window)
            if m is None:
                vis = seen if L.window is None else seen & (cols > self.pos - L.window)
                m = made[L.window] = torch.zeros(cols.shape[0], device=cols.device).masked_fill_(~vis, float("-inf"))
            masks.append(m)
        return step.layers_forward(x, [self.pos] * len(step.layers), ropes, masks, keys, values)

    def _capture(self, step, token: int, row: int, keys, values) -> None:
        """Capture the step over these buffers (warmed up on a side stream first, as CUDA graphs need); the
        warm-up computes this very token, and the graph's first replay writes the same row again."""
        dev = keys[0].device
        cap = keys[0].shape[1]
        self.graph = None
        self.token = torch.full((1,), token, dtype=torch.long, device=dev)
        self.pos = torch.full((1,), row, dtype=torch.long, device=dev)
        x0 = step.embed(self.token)
        tables = step._rope_at(x0, torch.arange(cap, device=dev)[None])  # per type: cos, sin_rot (cap, R); swap
        cols = torch.arange(cap, device=dev)
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            self._body(step, tables, cols, keys, values)
        torch.cuda.current_stream(dev).wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self.out = self._body(step, tables, cols, keys, values)
        graph.replay()
        self.graph = graph
