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
from .html import HtmlSource, check_bytes
from .pdf import PdfSource
from .sniff import format_from_extension, format_from_magic, normalize_format, not_a_document, sniff_format
from .text import TextSource, read_block, read_head


WAIT_NOTICE_S = 0.5  # a pipe or terminal silent this long gets a line saying what we wait for
SPOOL_NOTICE_S = 3.0  # a pipe still being kept on disk after this long gets a line saying why nothing is read yet


@contextlib.contextmanager
def _say_if_waiting(notice: Callable[[str], None] | None, text: str, after: float = WAIT_NOTICE_S) -> Iterator[None]:
    """Call notice(text) if the block is still waiting after `after` seconds (a FIFO with no writer yet, a
    terminal nobody types into); a prompt answer prints nothing."""
    if notice is None:
        yield
        return
    timer = threading.Timer(after, notice, args=(text,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def open_source(path: str, format: str = "auto", stdin: IO[bytes] | None = None,
                notice: Callable[[str], None] | None = None, spool: str | os.PathLike | None = None) -> Source:
    """Open a document for reading.

    Args:
        path: a file path, or ``"-"`` for standard input.
        format: ``"auto"`` (sniff magic bytes, then the extension, else text) or ``"pdf"``, ``"epub"``,
            ``"html"``, ``"text"``.
        stdin: the binary stream ``"-"`` reads (default ``sys.stdin.buffer``).
        notice: called with one line when opening waits (a FIFO with no writer, stdin on a terminal) or unpacks
            a large EPUB (documents/ziplimits.py).
        spool: a folder where a stream (a pipe on stdin, a FIFO, ``<(command)``) is first kept whole, in a file
            with no name that goes with it, while it is hashed: the source then has its content hash before it
            is read (the pot cache looks it up) and reads like a file. None: a text stream is read as it comes.

    Raises:
        InputError: missing file, a directory, permission denied, empty/binary/corrupt/encrypted input…
    """
    fmt = normalize_format(format)
    if path == "-":
        if stdin is None and sys.stdin is None:  # started with standard input closed (`<&-`)
            raise InputError("standard input is closed: there is no document to read from '-'")
        stream = stdin if stdin is not None else sys.stdin.buffer
        if isinstance(stream, io.TextIOBase):  # given sys.stdin rather than sys.stdin.buffer
            stream = stream.buffer
        on_tty = False
        with contextlib.suppress(AttributeError, ValueError, OSError):
            on_tty = stream.isatty()
        wait = "reading the document from the terminal: type or paste it, then Ctrl-D" if on_tty else \
            "waiting for text on stdin…"
        return _open_stream(path, stream, fmt, close=False, notice=notice, wait=wait, spool=spool)
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path} is a directory, not a document")
        if not stat.S_ISREG(st.st_mode):  # a pipe or device, e.g. a FIFO, <(command) or /dev/stdin: like stdin
            what = "a writer on the named pipe" if stat.S_ISFIFO(st.st_mode) else "input"
            with _say_if_waiting(notice, f"waiting for {what} {path}… (Ctrl-C to stop)"):
                stream = open(path, "rb")  # a FIFO's open waits for its writer, then its first block
                head = _head(path, stream, close=True)
            return _open_stream(path, stream, fmt, close=True, notice=notice, spool=spool, head=head)
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
            check_bytes(st.st_size, path)  # refused before it is read whole
            data = head + f.read()
        finally:
            f.close()
        return HtmlSource(path, data, hash_file=path, notice=notice)
    f.seek(0)
    if kind == "pdf":
        return PdfSource(path, f, st.st_size, hash_file=path)
    return EpubSource(path, f, st.st_size, hash_file=path, notice=notice)


def _regular(stream: IO[bytes]) -> bool:
    """Whether a stream reads a regular file (stdin redirected from one: hashed in place, pot_cache.stdin_digest)."""
    try:
        return stat.S_ISREG(os.fstat(stream.fileno()).st_mode)
    except (AttributeError, ValueError, OSError):
        return False  # no file behind it (text handed in by a caller): like a pipe


def _spool(stream: IO[bytes], head: bytes, folder: str | os.PathLike | None, name: str,
           notice: Callable[[str], None] | None = None) -> tuple[IO[bytes], str, int]:
    """Copy a stream whole into a temporary file in `folder` (the system's when None), hashing it on the way, in
    blocks (flat memory): (the file at its start, sha256, size). The file has no name where the system allows
    (Linux: O_TMPFILE) and goes when it is closed, also when the process is killed."""
    hasher = hashlib.sha256(head)
    size = len(head)
    where = f" in {folder}" if folder is not None else ""
    hint = "; --no-cache reads it as it comes" if folder is not None else ""
    try:
        spool = tempfile.TemporaryFile(prefix=".infinipot-stdin-", suffix=".spool", dir=folder)
    except OSError as e:
        raise InputError(f"{name}: cannot keep it on disk{where} ({e.strerror or e}){hint}") from None
    try:
        text = (f"{name}: keeping it on disk as it comes ({folder}), to look it up in the pot cache before reading "
                "it (--no-cache reads it as it comes)")
        with _say_if_waiting(notice if folder is not None else None, text, after=SPOOL_NOTICE_S):
            spool.write(head)
            while True:
                try:
                    block = read_block(stream, 1024 * 1024)
                except OSError as e:  # the pipe's error, not the disk's
                    raise InputError(f"{name}: cannot read ({e.strerror or e})") from None
                if not block:
                    break
                spool.write(block)
                hasher.update(block)
                size += len(block)
        spool.flush()
        spool.seek(0)
    except OSError as e:
        spool.close()
        raise InputError(f"{name}: cannot keep it on disk{where} ({e.strerror or e}){hint}") from None
    except BaseException:
        spool.close()
        raise
    return spool, hasher.hexdigest(), size


def _head(path: str, stream: IO[bytes], close: bool) -> bytes:
    """A stream's first block (to sniff its format), or InputError (the stream closed when it is ours)."""
    try:
        return read_head(stream)
    except OSError as e:
        if close:
            stream.close()
        raise InputError(f"{display_name(path)}: cannot read ({e.strerror or e})") from None


def _open_stream(path: str, stream: IO[bytes], fmt: str, *, close: bool,
                 notice: Callable[[str], None] | None = None, wait: str = "",
                 spool: str | os.PathLike | None = None, head: bytes | None = None) -> Source:
    """Open a non-seekable stream: text is streamed; HTML is read whole; PDF/EPUB are spooled to a temp file. With
    `spool` (a folder), any stream but a regular file is first kept whole in a temporary file there, its hash
    known before it is read (the pot cache looks a pipe up as it does a file)."""
    name = display_name(path)
    if head is None:
        with _say_if_waiting(notice if wait else None, wait):
            head = _head(path, stream, close)
    if not head or not_a_document(head, name):
        if close:
            stream.close()
        raise InputError(not_a_document(head, name) or f"{name} is empty")
    kind = fmt
    if kind == "auto":
        kind = format_from_magic(head) or (format_from_extension(path) if path != "-" else None) or "text"
    if kind == "text" and (spool is None or _regular(stream)):
        return TextSource(path, stream, head, None, close_stream=close)
    try:
        if kind == "html" and spool is None:
            hasher = hashlib.sha256(head)
            parts = [head]
            got = len(head)
            while block := read_block(stream):
                parts.append(block)
                hasher.update(block)
                got += len(block)
                check_bytes(got, name, more=True)  # no more of it is held than a page may be
            return HtmlSource(path, b"".join(parts), content_hash=hasher.hexdigest(), notice=notice)
        f, digest, size = _spool(stream, head, spool, name, notice)
    except OSError as e:
        raise InputError(f"{name}: cannot read ({e.strerror or e})") from None
    finally:
        if close:
            stream.close()
    if kind == "text":
        f.seek(len(head))
        return TextSource(path, f, head, size, content_hash=digest)
    if kind == "html":
        try:
            check_bytes(size, name)
            data = f.read()
        finally:
            f.close()
        return HtmlSource(path, data, content_hash=digest, notice=notice)
    if kind == "pdf":
        return PdfSource(path, f, size, content_hash=digest)
    return EpubSource(path, f, size, content_hash=digest, notice=notice)
