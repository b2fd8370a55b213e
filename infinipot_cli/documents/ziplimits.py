"""Limits on what an EPUB's zip archive may expand to, and progress while a large one is unpacked.

An EPUB is a zip; its reader (ebooklib) unpacks every member into memory and the HTML converter parses the
chapters whole. A 333 KB zip can hold a 96 MB chapter (a zip bomb: no output for over a minute, 1.7 GB of
memory). Before anything is unpacked, the archive's directory is checked: no member may expand beyond
MAX_MEMBER_BYTES, nor (from RATIO_FROM_BYTES on) more than MAX_RATIO times its compressed size, and all members
together not beyond MAX_TOTAL_BYTES. zipfile never returns more than a member's declared size (a member that
lies about it fails its CRC check), so the declared sizes bound what is unpacked.

A legitimate archive that expands to more than PROGRESS_BYTES is unpacked with a line saying so, and then its
progress (the share of the compressed file read) every PROGRESS_EVERY_S seconds.
"""

from __future__ import annotations

import contextlib
import threading
import zipfile
from typing import IO, Callable, Iterator

from infinipot_cli.errors import InputError
from infinipot_cli.units import fmt_bytes

MAX_MEMBER_BYTES = 64 << 20   # a chapter or an image; a whole novel in one XHTML file is ~5 MB
MAX_TOTAL_BYTES = 1 << 30
MAX_RATIO = 100               # text and markup deflate 3-10x; a zip bomb, thousands of times
RATIO_FROM_BYTES = 1 << 20    # a small member may compress far better (a file of spaces); it costs nothing
PROGRESS_BYTES = 16 << 20
PROGRESS_EVERY_S = 5.0


def check_archive(fileobj: IO[bytes] | str, name: str) -> int:
    """The bytes the archive expands to, once its members are checked against the limits; InputError (one line
    naming the member and the limit) when one is exceeded. A file that is no readable zip passes: the reader
    says what is wrong with it."""
    try:
        if not isinstance(fileobj, str):
            fileobj.seek(0)
        with zipfile.ZipFile(fileobj) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError):
        return 0
    finally:
        if not isinstance(fileobj, str):
            fileobj.seek(0)
    total = 0
    for info in infos:
        size, packed = info.file_size, max(1, info.compress_size)
        if size > MAX_MEMBER_BYTES:
            raise InputError(f"{name}: refusing to unpack {info.filename}: it expands to {fmt_bytes(size)}, over the "
                             f"limit of {fmt_bytes(MAX_MEMBER_BYTES)} for one member of an EPUB")
        if size >= RATIO_FROM_BYTES and size > MAX_RATIO * packed:
            raise InputError(f"{name}: refusing to unpack {info.filename}: it expands {size // packed:,}x (from "
                             f"{fmt_bytes(packed)} to {fmt_bytes(size)}), over the limit of {MAX_RATIO}x for one "
                             "member of an EPUB (a zip bomb?)")
        total += size
        if total > MAX_TOTAL_BYTES:
            raise InputError(f"{name}: refusing to unpack it: its members expand to more than "
                             f"{fmt_bytes(MAX_TOTAL_BYTES)}, the limit for an EPUB")
    return total


class _Counting:
    """A read-only binary file that counts the bytes read from it (the share of a zip unpacked so far)."""

    def __init__(self, raw: IO[bytes]):
        self.raw, self.read_bytes = raw, 0

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.read_bytes += len(data)
        return data

    def seek(self, *a) -> int:
        return self.raw.seek(*a)

    def tell(self) -> int:
        return self.raw.tell()

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def __getattr__(self, attr):
        return getattr(self.raw, attr)


@contextlib.contextmanager
def unpacking(fileobj: IO[bytes] | str, name: str, expands_to: int, size: int | None,
              notice: Callable[[str], None] | None) -> Iterator[IO[bytes] | str]:
    """The file to unpack, and lines for `notice` while a large archive (over PROGRESS_BYTES) is unpacked: one
    now, then how far it got every PROGRESS_EVERY_S seconds."""
    if notice is None or expands_to <= PROGRESS_BYTES:
        yield fileobj
        return
    notice(f"unpacking {name} ({fmt_bytes(expands_to)} of text and images)…")
    own = isinstance(fileobj, str)
    raw = open(fileobj, "rb") if own else fileobj
    counted = _Counting(raw)
    done = threading.Event()

    def tick() -> None:
        while not done.wait(PROGRESS_EVERY_S):
            if size:
                notice(f"unpacking {name}: {min(100, 100 * counted.read_bytes // max(1, size))}%…")

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    try:
        yield counted
    finally:
        done.set()
        if own:
            raw.close()
