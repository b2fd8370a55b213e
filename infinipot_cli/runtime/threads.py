"""CPU thread settings for torch, applied once per process.

Intra-op threads: an explicit count, else $INFINIPOT_THREADS, else torch's default (the physical cores) capped at
MAX_DEFAULT: a small model's per-token matmuls are a few MB each and stop scaling after a few cores, while every
extra thread adds a synchronisation to each of the ~600 ops of a decoding step. Inter-op threads: 1 (the engine
never runs ops concurrently; torch's default starts one per core).
"""

from __future__ import annotations

import os

MAX_DEFAULT = 8


def configure(threads: int | None = None) -> int:
    """Set torch's thread counts; returns the intra-op count now in force."""
    import torch

    env = os.environ.get("INFINIPOT_THREADS", "").strip()
    if threads is None and env.isdigit() and int(env) > 0:
        threads = int(env)
    if threads is None:
        threads = min(torch.get_num_threads(), MAX_DEFAULT)
    torch.set_num_threads(max(1, int(threads)))
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set, or inter-op work already started: keep what is there
        pass
    return torch.get_num_threads()


def describe() -> str:
    """'2 threads (1 inter-op)' for headers."""
    import torch

    return f"{torch.get_num_threads()} threads ({torch.get_num_interop_threads()} inter-op)"
