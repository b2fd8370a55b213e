"""``open_source``: turn a path (or ``-`` for stdin) into the right :class:`~.base.Source`."""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import stat
import sys
import tempfile
import threading
from typing import IO, Callable, Iterator

from infinipot_cli.errors import InputError

from .base import BLOCK_BYTES, Source, display_name
from .epub import EpubSource
from .html import HtmlSource
from .pdf import PdfSource
from .sniff import format_from_extension, format_from_magic, normalize_format, not_a_document, sniff_format
from .text import TextSource, read_block, read_head


WAIT_NOTICE_S = 0.5  # a pipe or terminal silent this long gets a line saying what we wait for


@contextlib.contextmanager
def _say_if_waiting(notice: Callable[[str], None] | None, text: str) -> Iterator[None]:
    """Call notice(text) if the block is still waiting after WAIT_NOTICE_S (a FIFO with no writer yet, a
    terminal nobody types into); a prompt answer prints nothing."""
    if notice is None:
        yield
        return
    timer = threading.Timer(WAIT_NOTICE_S, notice, args=(text,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def open_source(path: str, format: str = "auto", stdin: IO[bytes] | None = None,
                notice: Callable[[str], None] | None = None) -> Source:
    """Open a document for reading.

    Args:
        path: a file path, or ``"-"`` for standard input.
        format: ``"auto"`` (sniff magic bytes, then the extension, else text) or ``"pdf"``, ``"epub"``,
            ``"html"``, ``"text"``.
        stdin: the binary stream ``"-"`` reads (default ``sys.stdin.buffer``).
        notice: called with one line when opening waits (a FIFO with no writer, stdin on a terminal) or unpacks
            a large EPUB (documents/ziplimits.py).

    Raises:
        InputError: missing file, a directory, permission denied, empty/binary/corrupt/encrypted input…
    """
    fmt = normalize_format(format)
    if path == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        if isinstance(stream, io.TextIOBase):  # given sys.stdin rather than sys.stdin.buffer
            stream = stream.buffer
        on_tty = False
        with contextlib.suppress(AttributeError, ValueError, OSError):
            on_tty = stream.isatty()
        wait = "reading the document from the terminal: type or paste it, then Ctrl-D" if on_tty else \
            "waiting for text on stdin…"
        with _say_if_waiting(notice, wait):
            return _open_stream(path, stream, fmt, close=False, notice=notice)
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path} is a directory, not a document")
        if not stat.S_ISREG(st.st_mode):  # a pipe or device, e.g. a FIFO, <(command) or /dev/stdin: like stdin
            what = "a writer on the named pipe" if stat.S_ISFIFO(st.st_mode) else "input"
            with _say_if_waiting(notice, f"waiting for {what} {path}… (Ctrl-C to stop)"):
                return _open_stream(path, open(path, "rb"), fmt, close=True, notice=notice)
        f = open(path, "rb")
    except InputError:
        raise
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a directory, not a document") from None
    except OSError as e:
        raise InputError(f"{path}: cannot open ({e.strerror or e})") from None
    try:
        head = f.read(BLOCK_BYTES)
    except OSError as e:
        f.close()
        raise InputError(f"{path}: cannot read ({e.strerror or e})") from None
    if not head:
        f.close()
        raise InputError(f"{path} is empty")
    why = not_a_document(head, path)
    if why:
        f.close()
        raise InputError(why)
    kind = fmt if fmt != "auto" else sniff_format(head, path)
    if kind == "text":
        return TextSource(path, f, head, st.st_size, hash_file=path)
    if kind == "html":
        try:
            data = head + f.read()
        finally:
            f.close()
        return HtmlSource(path, data, hash_file=path)
    f.seek(0)
    if kind == "pdf":
        return PdfSource(path, f, st.st_size, hash_file=path)
    return EpubSource(path, f, st.st_size, hash_file=path, notice=notice)


def _open_stream(path: str, stream: IO[bytes], fmt: str, *, close: bool,
                 notice: Callable[[str], None] | None = None) -> Source:
    """Open a non-seekable stream: text is streamed; HTML is read whole; PDF/EPUB are spooled to a temp file."""
    name = display_name(path)
    try:
        head = read_head(stream)
    except OSError as e:
        raise InputError(f"{name}: cannot read ({e.strerror or e})") from None
    if not head or not_a_document(head, name):
        if close:
            stream.close()
        raise InputError(not_a_document(head, name) or f"{name} is empty")
    kind = fmt
    if kind == "auto":
        kind = format_from_magic(head) or (format_from_extension(path) if path != "-" else None) or "text"
    if kind == "text":
        return TextSource(path, stream, head, None, close_stream=close)
    hasher = hashlib.sha256(head)
    size = len(head)
    try:
        if kind == "html":
            parts = [head]
            while block := read_block(stream):
                parts.append(block)
                hasher.update(block)
            return HtmlSource(path, b"".join(parts), content_hash=hasher.hexdigest())
        spool = tempfile.TemporaryFile(prefix="infinipot-", suffix=f".{kind}")
        try:
            spool.write(head)
            while block := read_block(stream, 1024 * 1024):
                spool.write(block)
                hasher.update(block)
                size += len(block)
            spool.seek(0)
        except BaseException:
            spool.close()
            raise
    except OSError as e:
        raise InputError(f"{name}: cannot read ({e.strerror or e})") from None
    finally:
        if close:
            stream.close()
    if kind == "pdf":
        return PdfSource(path, spool, size, content_hash=hasher.hexdigest())
    return EpubSource(path, spool, size, content_hash=hasher.hexdigest(), notice=notice)
