"""A pipe hits the pot cache as a file does: with the cache in use, a piped source (stdin, a FIFO) is first kept
whole on disk in the cache folder, in a file with no name, hashed on the way in blocks (memory stays flat); its
hash is looked up before anything is read, and the file goes once the command is done with it. No user file is
touched; --no-cache still reads the pipe as it comes."""

from __future__ import annotations

import errno
import hashlib
import io
import os
import tempfile
import threading
import tracemalloc

import pytest

from infinipot_cli.documents import opener, open_source
from infinipot_cli.errors import InputError
from helpers import make_pdf
from test_pot_cache import SMALL, cache, document, feeds, leftovers, pots, run, tiny  # noqa: F401 - fixtures


def ours_in_tmp() -> list[str]:
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith(".infinipot-stdin-")]


def test_the_same_pipe_twice_is_read_once(tiny, cache, feeds, tmp_path):  # noqa: F811
    path = tmp_path / "piped.txt"
    document(path, seed=70)
    data = path.read_bytes()
    r, first = run(["ask", "Which gull?"] + SMALL, tiny, input=data)  # no SOURCE: the piped text
    assert r.exit_code == 0 and first["cache"]["hit"] is False and first["cache"]["stored"], r.stderr
    assert first["sources"][0]["path"] == "-" and first["sources"][0]["sha256"] == hashlib.sha256(data).hexdigest()
    feeds["calls"] = 0
    r, second = run(["ask", "-", "Where is the boat?"] + SMALL, tiny, input=data)
    assert r.exit_code == 0 and second["cache"]["hit"] is True and feeds["calls"] == 0, r.stderr
    assert second["cache"]["key"] == first["cache"]["key"] and second["sources"][0]["path"] == "-"
    assert leftovers(cache) == [] and ours_in_tmp() == []  # the kept copies went; only the pot stays
    assert path.read_bytes() == data
    feeds["calls"] = 0
    r, fresh = run(["ask", "-", "Where is the boat?", "--no-cache"] + SMALL, tiny, input=data)
    assert r.exit_code == 0 and fresh["cache"]["hit"] is False and feeds["calls"] > 0
    changed = data.replace(b"e", b"E", 1)  # one byte more or less is another document
    r, other = run(["ask", "-", "Where is the boat?"] + SMALL, tiny, input=changed)
    assert r.exit_code == 0 and other["cache"]["hit"] is False and other["cache"]["key"] != first["cache"]["key"]


class Lines(io.RawIOBase):
    """A pipe of `n` bytes of text, made as it is read (nothing of it held)."""

    def __init__(self, n: int):
        self.left = n
        self.hasher = hashlib.sha256()

    def readable(self):
        return True

    def readinto(self, b):
        k = min(len(b), self.left, 1 << 16)
        chunk = (b"the keeper climbs the stair to the lamp at dusk.\n" * 1400)[:k]
        b[:k] = chunk
        self.hasher.update(chunk)
        self.left -= k
        return k


def test_a_pipe_is_kept_on_disk_in_flat_memory_and_read_like_a_file(tmp_path):
    size = 24 << 20
    stream = Lines(size)
    tracemalloc.start()
    try:
        src = open_source("-", stdin=stream, spool=tmp_path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 6 << 20, peak  # 24 MiB kept on disk, a few blocks in memory
    assert src.content_hash == stream.hasher.hexdigest() and src.size_bytes == size  # known before reading
    assert os.listdir(tmp_path) == []  # a file with no name (where the system allows) ...
    first = next(src.passages())
    assert first.where == "line 1" and first.at == 0.0  # ... read like a file: the progress is known
    src.close()
    plain = open_source("-", stdin=io.BytesIO(b"a note about the harbour\n"))  # no spool: read as it comes
    assert plain.content_hash is None and plain.size_bytes is None


def test_a_fifo_html_and_pdf_are_kept_and_hashed_first(tmp_path):
    html = b"<html><body><h1>Harbour</h1><p>The ferry leaves at 7:45 from pier 3.</p></body></html>"
    src = open_source("-", stdin=io.BytesIO(html), spool=tmp_path)
    assert src.format == "html" and src.content_hash == hashlib.sha256(html).hexdigest()
    pdf = make_pdf([["The lamp was lit at dusk."]])
    src = open_source("-", stdin=io.BytesIO(pdf), spool=tmp_path)
    assert src.format == "pdf" and src.content_hash == hashlib.sha256(pdf).hexdigest()
    assert "lamp" in next(src.passages()).text
    src.close()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    text = b"From a named pipe: the bell rang twice.\n" * 100

    def write():
        with open(fifo, "wb") as f:
            f.write(text)
    t = threading.Thread(target=write)
    t.start()
    src = open_source(str(fifo), spool=tmp_path)
    t.join(timeout=30)
    assert src.content_hash == hashlib.sha256(text).hexdigest() and src.size_bytes == len(text)
    assert "bell rang" in next(src.passages()).text
    src.close()
    assert sorted(os.listdir(tmp_path)) == ["pipe"]


def test_no_room_to_keep_a_pipe_is_one_clear_line(tmp_path, monkeypatch):
    class Full(io.BytesIO):
        def write(self, b):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(opener.tempfile, "TemporaryFile", lambda **kw: Full())
    with pytest.raises(InputError, match=r"stdin: cannot keep it on disk in .* \(No space left on device\); "
                                         r"--no-cache reads it as it comes"):
        open_source("-", stdin=io.BytesIO(b"some text\n" * 10), spool=tmp_path)
