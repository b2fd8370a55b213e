"""Scratch folders for writes that must be atomic (a pot file, a converted model): one hidden folder beside the
target per write, named with the writing process's id and locked while the write runs, so that what a write
killed outright (kill -9, a power cut) leaves behind is one folder that the next start of a write into that folder
recognises and removes (`remove_stale`). No torch here: a command removes stale folders before it loads anything.

    .NAME.infinipot-save-PID-XXXX/       the target NAME's scratch folder, written by process PID
        lock                             flock'd by the writer while it writes (the lock dies with the process)
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

SCRATCH_MARK = ".infinipot-save-"
STALE_AFTER_S = 60.0  # a scratch folder whose lock is free and is older than this was left by a killed write
_NAME = re.compile(r"\..+" + re.escape(SCRATCH_MARK) + r"(\d+)-\w+")


class Scratch:
    """A folder beside the target `name` in `folder` for one write (".NAME.infinipot-save-PID-XXXX"), locked while
    the write runs; `remove()` when done (the target then replaced whole by os.replace)."""

    def __init__(self, folder: Path, name: str):
        self.dir = Path(tempfile.mkdtemp(prefix=f".{name[:100]}{SCRATCH_MARK}{os.getpid()}-", dir=folder))
        self._lock = _lock(self.dir, block=True)

    def remove(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock)
            self._lock = None


def _lock(folder: Path, block: bool) -> int | None:
    """An exclusive lock on `folder`'s lock file: its descriptor, or None when another process holds it (or
    the platform has no flock; the owner's pid then decides). The lock dies with the process, kill -9 included."""
    try:
        import fcntl
    except ImportError:  # not POSIX
        return None
    try:
        fd = os.open(folder / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if block else fcntl.LOCK_NB))
    except OSError:
        os.close(fd)
        return None
    return fd


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def is_scratch(name: str) -> bool:
    """Whether a file name is a scratch folder's."""
    return _NAME.fullmatch(name) is not None


def remove_stale(folder: str | os.PathLike) -> list[str]:
    """Remove the scratch folders that killed writes left in `folder` (their owner is gone: its pid is not
    running, or its lock is free and the folder older than STALE_AFTER_S); returns their names. A write still
    running keeps its lock and is left alone; a folder that does not exist has nothing to remove."""
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for e in entries:
        m = _NAME.fullmatch(e.name)
        if not m or not e.is_dir(follow_symlinks=False):
            continue
        try:
            age = time.time() - e.stat(follow_symlinks=False).st_mtime
        except OSError:
            continue
        fd = _lock(Path(e.path), block=False)
        if fd is None and _alive(int(m.group(1))):
            continue  # locked by a running write (or no flock here and its process runs)
        try:
            if _alive(int(m.group(1))) and age < STALE_AFTER_S:
                continue  # its process may not have taken its lock yet
            shutil.rmtree(e.path, ignore_errors=True)
            removed.append(e.name)
        finally:
            if fd is not None:
                os.close(fd)
    return removed
