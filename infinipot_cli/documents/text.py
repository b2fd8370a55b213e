"""Plain text (files, pipes, stdin), read as a stream of blocks with flat memory use."""

from __future__ import annotations

import codecs
import hashlib
import io
import time
from typing import IO, Iterator

from infinipot_cli.errors import InputError
from infinipot_cli.documents.where import Where

from .base import BLOCK_BYTES, PASSAGE_CHARS, Passage, Source, clean_plain_text, display_name

# Bytes that are normal in text: \t \n \v \f \r, ESC (ANSI colours in logs) and backspace (man pages).
_ALLOWED_CONTROL = b"\x08\t\n\x0b\x0c\r\x1b"
_CONTROL_BYTES = bytes(b for b in range(32) if b not in _ALLOWED_CONTROL) + b"\x7f"
#: Share of control bytes in the first block above which the input is called binary.
BINARY_CONTROL_SHARE = 0.05

_UTF_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def looks_binary(block: bytes) -> bool:
    """True when ``block`` holds NUL bytes or more than 5% control characters (not text)."""
    if not block:
        return False
    if b"\x00" in block:
        return True
    controls = len(block) - len(block.translate(None, _CONTROL_BYTES))
    return controls / len(block) > BINARY_CONTROL_SHARE


def read_block(stream: IO[bytes], size: int = BLOCK_BYTES) -> bytes:
    """Read up to ``size`` bytes (``b""`` at end of input); copes with raw streams that return ``None``."""
    while True:
        data = stream.read(size)
        if data is not None:
            return bytes(data)
        time.sleep(0.01)  # non-blocking stream with nothing available yet


def read_head(stream: IO[bytes], size: int = BLOCK_BYTES) -> bytes:
    """Read the first block, filling it up to ``size`` bytes unless the input ends first (short reads)."""
    parts: list[bytes] = []
    got = 0
    while got < size:
        data = read_block(stream, size - got)
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


class TextSource(Source):
    """Plain text from a file or a stream, decoded incrementally and yielded in ~64 KB passages.

    The first block (``head``, already read by the caller for sniffing) decides the encoding: a UTF-16/32
    BOM selects that codec, else UTF-8 (a BOM is stripped) if the block is valid UTF-8, else cp1252. If a
    later block turns out not to be UTF-8 the rest is read as cp1252 and a warning is recorded. Blocks are
    cut at a line break (or whitespace) so words stay whole; ``where`` is ``"line N"`` of the block start.
    """

    format = "text"

    def __init__(
        self,
        path: str,
        stream: IO[bytes],
        head: bytes,
        size_bytes: int | None = None,
        *,
        hash_file: str | None = None,
        content_hash: str | None = None,
        close_stream: bool = True,
    ) -> None:
        super().__init__(path, size_bytes)
        self._stream: IO[bytes] | None = stream
        self._close_stream = close_stream
        self._head = head
        self._hash_file = hash_file
        self._hash = content_hash  # known before reading (a stream kept on disk first), else once read
        name = display_name(path)
        if not head:
            self.close()
            raise InputError(f"{name} is empty")
        self._encoding = "utf-8"
        for bom, enc in _UTF_BOMS:
            if head.startswith(bom):
                self._encoding = enc
                break
        if self._encoding == "utf-8" and looks_binary(head):
            self.close()
            raise InputError(f"{name} looks like binary data, not text")
        if self._encoding == "utf-8":
            body = head[3:] if head.startswith(codecs.BOM_UTF8) else head
            self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
            try:
                self._first_text = self._decoder.decode(body, False)
            except UnicodeDecodeError:
                self._encoding = "cp1252"
                self.warnings.append("not valid UTF-8; read as cp1252")
                self._decoder = codecs.getincrementaldecoder("cp1252")("replace")
                self._first_text = self._decoder.decode(head, False)
        else:
            self._decoder = codecs.getincrementaldecoder(self._encoding)("replace")
            self._first_text = self._decoder.decode(head, False)
        self._offset = len(head)  # bytes fed to the decoder so far

    def _decode(self, data: bytes, final: bool) -> str:
        try:
            return self._decoder.decode(data, final)
        except UnicodeDecodeError as e:
            # Switch to cp1252 from the first bad byte on; keep the valid UTF-8 before it.
            obj = bytes(e.object)
            good = obj[: e.start].decode("utf-8", "replace")
            bad_at = self._offset - len(obj) + e.start
            self.warnings.append(f"not valid UTF-8 from byte {bad_at} on; read the rest as cp1252")
            self._encoding = "cp1252"
            self._decoder = codecs.getincrementaldecoder("cp1252")("replace")
            return good + self._decoder.decode(obj[e.start:], final)

    def _passages(self) -> Iterator[Passage]:
        stream = self._stream
        assert stream is not None
        hasher = hashlib.sha256(self._head)
        total = len(self._head)
        head_text, self._head, self._first_text = self._first_text, b"", ""
        newlines = io.IncrementalNewlineDecoder(None, translate=True)
        buf = newlines.decode(head_text)
        line = 1
        done = 0  # bytes of the pieces passed on so far
        ended_nl = False
        yielded = False
        try:
            while True:
                try:
                    data = read_block(stream)
                except OSError as e:
                    raise InputError(f"{self.name}: read error ({e.strerror or e})") from None
                if data:
                    hasher.update(data)
                    total += len(data)
                    self._offset += len(data)
                buf += newlines.decode(self._decode(data, not data), not data)
                while buf and (len(buf) >= PASSAGE_CHARS or not data):
                    piece, buf = _cut(buf) if data else (buf, "")
                    body = piece.lstrip("\n")
                    start = line + (len(piece) - len(body))
                    line += piece.count("\n")
                    ended_nl = piece.endswith("\n")
                    text = clean_plain_text(body).rstrip()
                    size = len(piece.encode("utf-8", "replace"))  # ~ the bytes it came from
                    at, share = (done / self.size_bytes, size / self.size_bytes) if self.size_bytes else (None, 0.0)
                    done += size
                    if text.strip():
                        yielded = True
                        yield Passage(text, Where(line=start).label(), at, share)
                if not data:
                    break
        finally:
            self.close()
        self.size_bytes = total
        self._hash = hasher.hexdigest()
        self.units = {"lines": line - 1 if ended_nl else line}
        if not yielded:
            raise InputError(f"{self.name} is empty (only whitespace)")

    def close(self) -> None:
        if self._stream is not None and self._close_stream:
            try:
                self._stream.close()
            except OSError:
                pass
        self._stream = None


def _cut(buf: str, limit: int = PASSAGE_CHARS) -> tuple[str, str]:
    """Split ``buf`` into (piece, rest): after the last line break within ``limit``, else after the last
    whitespace, else hard at ``limit`` (a single "word" longer than a block)."""
    cut = buf.rfind("\n", 0, limit)
    if cut < 0:
        cut = max(buf.rfind(" ", 0, limit), buf.rfind("\t", 0, limit))
    end = cut + 1 if cut >= 0 else limit
    return buf[:end], buf[end:]
