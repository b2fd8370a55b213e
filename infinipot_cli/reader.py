"""From documents to the pot: tokenize passages as a stream and feed them to the engine with provenance.

A source is tokenized passage by passage (long passages in pieces of a few KB, cut at whitespace), so a
1 GB pipe streams through with flat memory. Tokenization is deterministic, so "skip the first N tokens"
resumes an interrupted read exactly where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

from .engine import Engine

PIECE_CHARS = 4000


@dataclass
class SourceRecord:
    """What the pot knows about one source it read (saved in pot files, printed by --json)."""

    path: str
    format: str
    size: int | None = None
    sha256: str | None = None
    tokens: int = 0                # tokens of this source read into the pot
    units: dict = field(default_factory=dict)   # {"pages": n} / {"chapters": n}
    stopped_at: int | None = None  # token offset where reading stopped (None: read to the end)

    def as_json(self) -> dict:
        d = {"path": self.path, "format": self.format, "tokens": self.tokens, "size": self.size,
             "sha256": self.sha256, "stopped_at": self.stopped_at}
        d.update(self.units)
        return d


def _pieces(text: str, limit: int = PIECE_CHARS) -> Iterator[str]:
    while len(text) > limit:
        cut = text.rfind(" ", limit // 2, limit)
        cut = limit if cut <= 0 else cut
        yield text[:cut]
        text = text[cut:]
    if text:
        yield text


def token_stream(tokenizer, passages, label: str = "") -> Iterator[tuple[list[int], str]]:
    """(token ids, where) pieces of a stream of Passages; passages are separated by a blank line."""
    first = True
    for p in passages:
        text = p.text if first else "\n\n" + p.text
        if not p.text.strip():
            continue
        first = False
        where = f"{label} · {p.where}" if label and p.where else (p.where or label)
        for piece in _pieces(text):
            ids = tokenizer.encode(piece, add_special_tokens=False)
            if ids:
                yield ids, where


def read_source(engine: Engine, tokenizer, source, record: SourceRecord, label: str = "",
                skip_tokens: int = 0) -> None:
    """Feed one source into the engine, skipping its first `skip_tokens` tokens (resume).

    On KeyboardInterrupt the tokens fed but not yet forwarded are dropped, `record.stopped_at` says how
    many tokens of this source the pot holds, and the interrupt propagates (the caller may save the pot).
    """
    start = engine.tokens_read
    seen = 0
    try:
        for ids, where in token_stream(tokenizer, source.passages(), label):
            if seen + len(ids) <= skip_tokens:
                seen += len(ids)
                continue
            if seen < skip_tokens:
                ids = ids[skip_tokens - seen:]
                seen = skip_tokens
            engine.feed(ids, where)
            seen += len(ids)
        engine.finish()
    except KeyboardInterrupt:
        engine.drop_pending()
        record.stopped_at = skip_tokens + engine.tokens_read - start
        record.tokens = record.stopped_at
        record.size = source.size_bytes
        try:
            record.sha256 = source.content_hash
        except Exception:  # noqa: BLE001 - a stream cut short has no hash
            record.sha256 = None
        raise
    record.stopped_at = None
    record.tokens = seen
    record.units = dict(getattr(source, "units", {}) or {})
    record.sha256 = source.content_hash
    record.size = source.size_bytes
