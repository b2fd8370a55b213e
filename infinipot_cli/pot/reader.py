"""From documents to the pot: tokenize passages as a stream and feed them to the engine with provenance.

A source is tokenized passage by passage (long passages in pieces of a few KB, cut at whitespace), so a
1 GB pipe streams through with flat memory. Tokenization is deterministic, so "skip the first N tokens"
resumes an interrupted read exactly where it stopped.
"""

from __future__ import annotations

import bisect
import os
import stat
from dataclasses import dataclass, field
from typing import Iterator

from .engine import Engine
from ..documents.where import Where, join, kind_of, read_part

PIECE_CHARS = 4000
LINE_PIECE_CHARS = 2000  # text labelled "line N": pieces cut at line ends, each labelled with its own first line
MAX_READ_LABELS = 2000   # most labels a SourceRecord lists in "read"


@dataclass
class SourceRecord:
    """What the pot knows about one source it read (saved in pot files, printed by --json)."""

    path: str
    format: str
    size: int | None = None
    sha256: str | None = None
    tokens: int = 0                # tokens of this source read into the pot
    units: dict = field(default_factory=dict)   # {"pages": n} / {"chapters": n} / {"lines": n}
    stopped_at: int | None = None  # token offset where reading stopped (None: read to the end)
    read: list = field(default_factory=list)    # the page labels / chapters read, in order ("lines 1-223" for text)

    def as_json(self) -> dict:
        d = {"path": self.path, "format": self.format, "tokens": self.tokens, "size": self.size,
             "sha256": self.sha256, "stopped_at": self.stopped_at}
        d.update(self.units)
        if self.read:
            d["read"] = list(self.read)
        return d

    @classmethod
    def from_json(cls, r: dict) -> "SourceRecord":
        """The record `as_json` wrote (a saved pot's sources)."""
        units = {k: r[k] for k in ("pages", "chapters", "lines") if k in r}
        return cls(path=r.get("path", "?"), format=r.get("format", "?"), size=r.get("size"), sha256=r.get("sha256"),
                   tokens=r.get("tokens", 0), units=units, stopped_at=r.get("stopped_at"),
                   read=list(r.get("read") or []))


def _pieces(text: str, limit: int = PIECE_CHARS) -> Iterator[str]:
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit)
        cut = limit if cut <= 0 else cut
        yield text[:cut]
        text = text[cut:]
    if text:
        yield text


def _line_pieces(text: str, first_line: int, limit: int = LINE_PIECE_CHARS) -> Iterator[tuple[str, int]]:
    """(piece, its first line number) of a text whose first line is `first_line`: pieces end at a line end
    where one lies in the second half of `limit`, else as _pieces cuts them."""
    line = first_line
    while len(text) > limit:
        cut = text.rfind("\n", limit // 2, limit)
        cut = cut + 1 if cut > 0 else next(iter(_pieces(text, limit))).__len__()
        yield text[:cut], line
        line += text.count("\n", 0, cut)
        text = text[cut:]
    if text:
        yield text, line


def token_stream(tokenizer, passages, label: str = "", seen: list | None = None,
                 progress=None, after: bool = False) -> Iterator[tuple[list[int], str]]:
    """(token ids, where) pieces of a stream of Passages; passages are separated by a blank line, and so is the
    first one from the source before it (`after`: this source is not the pot's first; the blank line comes
    unlabelled, so it ends the source before), so no sentence runs on from one source into the next.

    A passage labelled "line N" (text) is cut at line ends and every piece is labelled with its own first line,
    so provenance says where in the file a kept passage came from. `seen` collects each passage's label once;
    `progress(fraction)` is told how much of the source the next piece reaches (when the source knows).
    """
    first = True
    for p in passages:
        if not p.text.strip():
            continue
        if first and after:
            yield tokenizer.encode("\n\n", add_special_tokens=False), ""
        prefix = "" if first else "\n\n"
        first = False
        if seen is not None and p.where and (not seen or seen[-1] != p.where):
            seen.append(p.where)
        found = read_part(p.where or "")
        if found and found[0] == "line":
            pieces = _line_pieces(p.text, int(found[1]))
        else:
            pieces = ((piece, None) for piece in _pieces(p.text))
        done = 0
        for n, (piece, line) in enumerate(pieces):
            done += len(piece)
            if progress is not None and p.at is not None:
                progress(min(1.0, p.at + p.share * done / max(1, len(p.text))))
            where = join(label, p.where if line is None else Where(line=line).label())
            ids = tokenizer.encode((prefix if n == 0 else "") + piece, add_special_tokens=False)
            if ids:
                yield ids, where


def _read_labels(labels: list[str], upto: str | None) -> list[str]:
    """The labels a record lists as read: page / chapter labels in order (at most MAX_READ_LABELS, then a count);
    for text, one range "lines 1-N", N from `upto` ("line N": the source's last line, or the engine's label
    where reading stopped)."""
    if not labels:
        return []
    if kind_of(labels[0]) == "line":
        last = Where.parse(upto or "").line
        return [f"lines 1-{last}"] if last is not None else []
    if len(labels) > MAX_READ_LABELS:
        return labels[:MAX_READ_LABELS] + [f"... and {len(labels) - MAX_READ_LABELS} more"]
    return list(labels)


def _file_state(path: str) -> tuple[int, int] | None:
    """(size, mtime in ns) of a regular file, to notice a document that changes while it is read."""
    if not path or path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None


class _ProgressMarks:
    """Source tokens fed -> the fraction of the source they reach, so progress follows the tokens the engine has
    forwarded (it holds up to a pot's room of fed tokens before forwarding them), not the text tokenized."""

    def __init__(self) -> None:
        self.fed: list[int] = [0]
        self.f: list[float] = [0.0]
        self._next: float | None = None

    def reached(self, f: float) -> None:
        """token_stream's progress callback: the next piece reaches fraction f."""
        self._next = f

    def add(self, fed: int) -> bool:
        if self._next is None:
            return False
        if fed > self.fed[-1]:
            self.fed.append(fed)
            self.f.append(max(self._next, self.f[-1]))
        return True

    def at(self, tokens: int) -> float:
        """The fraction reached by the first `tokens` tokens of the source (linear between marks)."""
        i = bisect.bisect_left(self.fed, tokens)
        if i >= len(self.fed):
            return self.f[-1]
        if i == 0 or self.fed[i] == tokens:
            return self.f[i]
        f0, f1, t0, t1 = self.f[i - 1], self.f[i], self.fed[i - 1], self.fed[i]
        return f0 + (f1 - f0) * (tokens - t0) / (t1 - t0)


def read_source(engine: Engine, tokenizer, source, record: SourceRecord, label: str = "",
                skip_tokens: int = 0, progress=None) -> None:
    """Feed one source into the engine, skipping its first `skip_tokens` tokens (resume).

    On KeyboardInterrupt the tokens fed but not yet forwarded are dropped, `record.stopped_at` says how
    many tokens of this source the pot holds, and the interrupt propagates (the caller may save the pot).
    """
    start = engine.tokens_read
    follows = start > skip_tokens  # another source was read before this one (a resumed source counts its own part)
    seen = 0
    labels: list[str] = []
    marks = _ProgressMarks() if progress is not None else None
    before = _file_state(source.path)
    try:
        for ids, where in token_stream(tokenizer, source.passages(), label, labels,
                                       marks.reached if marks else None, after=follows):
            if seen + len(ids) <= skip_tokens:
                seen += len(ids)
                continue
            if seen < skip_tokens:
                ids = ids[skip_tokens - seen:]
                seen = skip_tokens
            engine.feed(ids, where)
            seen += len(ids)
            if marks is not None and marks.add(seen):
                # the engine forwards behind what it was fed: report how far the forwarded tokens reach
                progress(marks.at(skip_tokens + engine.tokens_read - start))
        engine.finish()
        if marks is not None and marks.f:
            progress(marks.f[-1])
    except KeyboardInterrupt:
        engine.drop_pending()
        record.stopped_at = skip_tokens + engine.tokens_read - start
        record.tokens = record.stopped_at
        record.read = _read_labels(labels, engine.where)
        record.size = source.size_bytes
        try:
            record.sha256 = source.content_hash
        except Exception:  # noqa: BLE001 - a stream cut short has no hash
            record.sha256 = None
        raise
    after = _file_state(source.path)
    if before is not None and (after != before or (source.size_bytes and after[0] != source.size_bytes)):
        source.warnings.append("changed while it was read: the pot may hold a mix of its old and new text; "
                               "read it again to be sure")
    record.stopped_at = None
    record.tokens = seen
    record.units = dict(getattr(source, "units", {}) or {})
    lines = record.units.get("lines")
    record.read = _read_labels(labels, Where(line=lines).label() if lines else engine.where)
    record.sha256 = source.content_hash
    record.size = source.size_bytes
