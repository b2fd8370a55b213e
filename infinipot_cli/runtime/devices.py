"""Accelerator helpers for honest timing and memory figures: CUDA runs asynchronously, so a host timer read
without a synchronisation measures kernel launches, not work. Every helper is a no-op on the CPU."""

from __future__ import annotations

import contextlib
import time

import torch


def _cuda(device) -> bool:
    if device is None:
        return False
    kind = device.type if isinstance(device, torch.device) else torch.device(device).type
    return kind == "cuda" and torch.cuda.is_available()


def sync(device) -> None:
    """Wait for the device's queued work (CUDA), so that a timer read next covers it; nothing on the CPU."""
    if _cuda(device):
        torch.cuda.synchronize(device)


def reset_peak(device) -> None:
    """Start a fresh GPU peak-memory count (CUDA only)."""
    if _cuda(device):
        torch.cuda.reset_peak_memory_stats(device)


def peak_mb(device) -> float | None:
    """Peak GPU memory allocated by tensors since `reset_peak` (MiB); None off CUDA."""
    if not _cuda(device):
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def gpu_name(device) -> str | None:
    """The GPU's name (e.g. "NVIDIA H100 80GB HBM3"); None off CUDA."""
    return torch.cuda.get_device_name(device) if _cuda(device) else None


def free_bytes(device) -> int | None:
    """Free memory on the GPU right now (bytes, `torch.cuda.mem_get_info`) plus what torch's allocator holds
    cached and could reuse; None off CUDA."""
    if not _cuda(device):
        return None
    free, _total = torch.cuda.mem_get_info(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(free + max(0, cached))


_AS_IF_ACCELERATOR = [False]


def on_host(t: torch.Tensor) -> bool:
    """True when reading `t`'s values on the host costs nothing (a CPU tensor); on an accelerator it waits for every
    kernel queued before it (a host synchronisation), which the reading loop avoids (docs/design.md)."""
    return t.device.type == "cpu" and not _AS_IF_ACCELERATOR[0]


@contextlib.contextmanager
def as_if_on_accelerator():
    """Within this block CPU tensors take the accelerator's code paths (`on_host` is False): the paths that never
    read a value on the host run where their results can be compared with the CPU's (tests/test_gpu_path.py)."""
    prev, _AS_IF_ACCELERATOR[0] = _AS_IF_ACCELERATOR[0], True
    try:
        yield
    finally:
        _AS_IF_ACCELERATOR[0] = prev


def count_or_bound(count, bound: int, like: torch.Tensor) -> int:
    """`count()` (an int read from a tensor) where that is free (`like` on the CPU), else the static `bound` it
    never exceeds: shapes then come from the bound on an accelerator, with no wait for the device."""
    return int(count()) if on_host(like) else int(bound)


def to_device(values, device, dtype=torch.long) -> torch.Tensor:
    """A host list (or CPU tensor) as a tensor on `device`. To a CUDA device through pinned memory, without
    waiting (a plain copy from pageable memory waits for every queued kernel first); on the CPU a plain tensor."""
    t = values if isinstance(values, torch.Tensor) else torch.tensor(values, dtype=dtype)
    if not _cuda(device):
        return t.to(device)
    return t.to(dtype).pin_memory().to(device, non_blocking=True)


class Clock:
    """Spans of device work without waiting for the device. On the CPU a span is a perf_counter difference; on CUDA
    a pair of events recorded in the stream, read only when the total is asked for (`Tally.settle`), so timing a
    phase never stalls the queue (a synchronised timer would, once per phase)."""

    def __init__(self, device=None):
        self.cuda = _cuda(device)

    def now(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def span(self, start, stop=None):
        """The span from `start` (a `now()`) to `stop` (default: now): seconds on the CPU, an event pair on CUDA."""
        stop = self.now() if stop is None else stop
        return (start, stop) if self.cuda else stop - start


def seconds(span) -> float:
    """A Clock span in seconds (an event pair waits for its second event)."""
    if isinstance(span, tuple):
        span[1].synchronize()
        return span[0].elapsed_time(span[1]) / 1000.0
    return float(span)


class Tally:
    """Named totals of Clock spans; CUDA spans are summed when a total is read (one wait for the last event)."""

    def __init__(self, names):
        object.__setattr__(self, "_sec", dict.fromkeys(names, 0.0))
        object.__setattr__(self, "_pending", [])

    def add(self, name: str, *spans, sign: float = 1.0) -> None:
        for s in spans:
            if isinstance(s, tuple):
                self._pending.append((name, sign, s))
            else:
                self._sec[name] += sign * s
        if len(self._pending) > 1024:  # a long read: sum the spans already finished, without waiting
            done = 0
            while done < len(self._pending) and self._pending[done][2][1].query():
                done += 1
            for n, sg, sp in self._pending[:done]:
                self._sec[n] += sg * seconds(sp)
            del self._pending[:done]

    def settle(self) -> None:
        pending, self._pending[:] = list(self._pending), []
        for name, sign, s in pending:
            self._sec[name] += sign * seconds(s)

    def __getattr__(self, name):
        sec = object.__getattribute__(self, "_sec")
        if name in sec:
            self.settle()
            return sec[name]
        raise AttributeError(name)

    def __setattr__(self, name, value) -> None:
        if name not in self._sec:
            raise AttributeError(name)
        self.settle()
        self._sec[name] = float(value)

    def as_dict(self) -> dict:
        self.settle()
        return {k: round(v, 4) for k, v in self._sec.items()}
