"""Hold Ctrl-C back while a few related assignments run, so an interrupt never leaves state half-updated.

The engine computes new tensors first (interruptible: nothing is changed yet) and then commits them inside
`deferred_interrupt()`; a SIGINT that arrives during the commit is re-delivered right after it. The last
consistent state is therefore what a Ctrl-C checkpoint (`--save-pot`) writes.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Run the block with SIGINT postponed to its end (main thread only; elsewhere it simply runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        old = signal.getsignal(signal.SIGINT)
    except (ValueError, OSError):
        yield
        return
    got: list[tuple] = []

    def hold(signum, frame):
        got.append((signum, frame))

    try:
        signal.signal(signal.SIGINT, hold)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
        if got:
            if callable(old):
                old(*got[0])                     # default_int_handler raises KeyboardInterrupt
            elif old == signal.SIG_DFL:
                raise KeyboardInterrupt
