"""Functions of tensors replayed as CUDA graphs: the reading loop's chunk forward and its selection (InfiniPot §3.2's
cycle) in one launch each instead of hundreds.

On a GPU the reading loop is bound by the host when the model is small: the built-in model's 1K-token chunk is under
a millisecond of arithmetic and ~40 ms of launches (docs/results/speed.md), and a distillation's selection is ~250
small kernels. Nothing in a cycle reads a value on the host (tests/test_gpu_path.py), and with the pot's
preallocated buffer a cycle repeats the same shapes at the same addresses, so each piece can be captured once and
replayed:

    Graphs.run(key, fn, inputs) -> fn(*inputs)'s outputs

`key` names everything the call depends on besides `inputs` (shapes, options, the addresses of the buffers `fn`
reads or writes in place); `inputs` are tensors. The first calls of a key run `fn` eagerly; the `after`-th is run
once on a side stream (CUDA's warm-up), captured and replayed; later calls copy their inputs into the captured ones
and replay. A replay returns the outputs captured (the same tensors, rewritten by every replay),
so a caller uses them before the next call of that key, and re-applies whatever Python state `fn` changes (a
replay runs no Python): `fn` itself must leave the same state whenever it runs. A key whose capture fails runs
eagerly from then on, with the same values.

CUDA only, unless INFINIPOT_CUDA_GRAPHS=0 (graphed_step.wanted); everywhere else `run` is `fn(*inputs)`. Tests run the
replay's bookkeeping on the CPU with a stand-in for the graph (`factory`) that recomputes `fn` and writes its
outputs into the captured tensors, which is what a replay does.
"""

from __future__ import annotations

import sys
from collections import Counter
from typing import Callable

import torch
from torch.utils import _pytree as pytree

from .graphed_step import wanted


class CudaGraph:
    """A CUDA graph of one call: `fn` warmed up on a side stream (as CUDA graphs need), then captured into a memory
    pool shared by every graph of a `Graphs` (their outputs stay allocated, so none overwrites another's)."""

    def __init__(self, fn: Callable, inputs: tuple, pool):
        dev = inputs[0].device
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(side):
            fn(*inputs)
        torch.cuda.current_stream(dev).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph, pool=pool):
            self.outputs = fn(*inputs)
        self.pool = self.graph.pool()

    def replay(self) -> None:
        self.graph.replay()


class EagerGraph:
    """The CPU's stand-in: a replay recomputes `fn` on the captured inputs and writes the results into the captured
    outputs, as a CUDA graph's replay rewrites them in place (tests only)."""

    def __init__(self, fn: Callable, inputs: tuple, pool):
        self.fn, self.inputs, self.pool = fn, inputs, pool
        self.outputs = fn(*inputs)
        self.replays = 0

    def replay(self) -> None:
        new = pytree.tree_leaves(self.fn(*self.inputs))
        for old, fresh in zip(pytree.tree_leaves(self.outputs), new):
            if isinstance(old, torch.Tensor):  # an expanded output (a shared row): its one row
                one = tuple(slice(0, 1) if st == 0 and n > 1 else slice(None) for st, n in zip(old.stride(), old.shape))
                old[one].copy_(fresh[one])
        self.replays += 1


class Graphs:
    """Captured calls by key (module docstring). `after`: the call of a key that is captured (the ones before run
    eagerly: a shape seen once, such as a read's first or last piece, is never captured); `limit`: keys captured
    at most (later ones run eagerly); `factory`: the graph class (default CudaGraph on CUDA, nothing elsewhere)."""

    def __init__(self, device, after: int = 2, limit: int = 8, factory=None):
        self.on = factory is not None or wanted(torch.device(device))
        self.factory = factory or CudaGraph
        self.after, self.limit = after, limit
        self.entries: dict = {}        # key -> (static inputs, graph)
        self.seen: Counter = Counter()
        self.failed: set = set()       # keys whose capture failed: eager
        self.errors: dict = {}         # their kind -> why (the first failure's message)
        self.pool = None               # the memory pool every graph shares (their outputs stay allocated)

    def run(self, key, fn: Callable, inputs: tuple):
        if not self.on or key in self.failed:
            return fn(*inputs)
        got = self.entries.get(key)
        if got is None:
            self.seen[key] += 1
            if self.seen[key] < self.after or len(self.entries) >= self.limit:
                return fn(*inputs)
            return self._capture(key, fn, inputs)
        static, graph = got
        for s, x in zip(static, inputs):
            s.copy_(x)
        graph.replay()
        return graph.outputs

    def summary(self) -> dict:
        """What ran as graphs, for a bench record: {"on", "captured", "failed", "errors"}, by the keys' kinds."""
        return {"on": self.on, "captured": sorted(_kind(k) for k in self.entries),
                "failed": sorted(_kind(k) for k in self.failed), "errors": dict(self.errors)}

    def _capture(self, key, fn: Callable, inputs: tuple):
        """Capture `fn` on copies of `inputs` (the graph's inputs from now on) and replay it once for this call; a
        capture that fails leaves the key eager, this call included."""
        static = tuple(x.clone() for x in inputs)
        try:
            graph = self.factory(fn, static, self.pool)
        except Exception as e:  # noqa: BLE001 - a capture the driver refuses (a host read, an unsupported kernel)
            self.failed.add(key)
            why = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            self.errors.setdefault(_kind(key), why)
            print(f"note: no CUDA graph for the {_kind(key)} ({why}); it runs eagerly, the same values", file=sys.stderr)
            return fn(*inputs)
        self.pool = graph.pool
        self.entries[key] = (static, graph)
        graph.replay()
        return graph.outputs


def _kind(key) -> str:
    """What a key is for: its first item ("forward", "select")."""
    return str(key[0] if isinstance(key, tuple) and key else key)
