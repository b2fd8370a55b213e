"""Hold Ctrl-C (and SIGTERM) back while a few related assignments run, so an interrupt never leaves state
half-updated; and let SIGTERM stop a read the way Ctrl-C does.

The engine computes new tensors first (interruptible: nothing is changed yet) and then commits them inside
`deferred_interrupt()`; a SIGINT that arrives during the commit is re-delivered right after it. The last
consistent state is therefore what a Ctrl-C checkpoint (`--save-pot`) writes.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so the same checkpoint and clean-up run (the CLI exits 143, not 130)."""


def _raise_terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def terminate_like_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises Terminated (a KeyboardInterrupt) instead of killing the process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    try:
        old = signal.signal(signal.SIGTERM, _raise_terminated)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signal.SIGTERM, old)


HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Run the block with SIGINT and SIGTERM postponed to its end (main thread only; elsewhere it simply runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: list[tuple] = []

    def hold(signum, frame):
        got.append((signum, frame))

    old: dict = {}
    try:
        for sig in HELD:
            old[sig] = signal.signal(sig, hold)
    except (ValueError, OSError):
        for sig, h in old.items():
            signal.signal(sig, h)
        yield
        return
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)
        if got:
            signum, frame = got[0]
            h = old[signum]
            if callable(h):
                h(signum, frame)                 # default_int_handler / _raise_terminated raise
            elif h == signal.SIG_DFL:
                if signum == signal.SIGINT:
                    raise KeyboardInterrupt
                signal.raise_signal(signum)
