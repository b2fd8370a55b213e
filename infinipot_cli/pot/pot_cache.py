"""The pot cache: read a document once, then answer its next questions in seconds without reading it again.

`ask`, `summarize` and `chat` store the pot of a read that took a while (MIN_READ_S) under the cache folder
(`$INFINIPOT_CACHE/pots`), and a later command on the same document loads it instead of reading. An entry is a
pot file (potfile.py: atomic writes, checksums) named by its key:

    <document key>-<read key>.pot
    document key: the sources' bytes (sha256 of each, in order, with its format and, with several sources, the
                  name each is labelled with), the model (fingerprint: config + vocabulary; a weights probe; the
                  dtype), this infinipot's version and the pot settings (PotConfig) except `spread`
    read key:     what the read was distilled for: the catalyst kind (CaP-Q, CaP-G, --catalyst TEXT and its text)
                  and `spread`

A question is answered from passages of the whole document as read (the pot and its archive hold every token
read), not from the pot's KV, so with InfiniPot's archive recall (`answers_from_document`) a question may use any
pot of the document (any read key): its answer is the one the pot it was read with would give. A summary is
written from the pot's KV, so it uses only a pot read as `summarize` reads (general catalyst, its spread). The
measurements behind this choice: docs/pot-cache.md.

Stdin: a pipe (or a FIFO, `<(command)`) is kept whole on disk first, in a file with no name in the cache folder,
hashed on the way (flat memory; documents/opener.py), so it is looked up and found as a file with the same bytes
is; the file goes once the command is done with it. Stdin redirected from a file (`< book.txt`) is hashed in place
before reading.

The cache's size is bounded (`INFINIPOT_CACHE_BUDGET`, default 4 GiB; 0 turns the cache off): storing a pot drops
just enough of the least recently used entries to fit, and says which on stderr; a pot larger than the whole
budget is not stored, and the other entries stay. An entry's metadata repeats its key; an entry that does not
load, or whose key or source hashes do not match, is dropped (one line on stderr) and the document read again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import InfinipotError, UsageError

CACHE_FORMAT = 1               # bumped when the key's parts change: older entries then simply miss
MIN_READ_S = 3.0               # reads shorter than this are not stored: reading again costs about what loading does
BUDGET_ENV = "INFINIPOT_CACHE_BUDGET"
DEFAULT_BUDGET = 4 << 30       # 4 GiB
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)


def folder() -> Path:
    """Where cached pots live: the `pots` folder of the cache folder ($INFINIPOT_CACHE, else ~/.cache/infinipot)."""
    from ..runtime.catalogue import cache_dir

    return cache_dir() / "pots"


def parse_size(text: str) -> int:
    """'4G' -> 4 GiB, '500M', '1.5GiB', '0', '123456' (bytes); binary units."""
    m = _SIZE.fullmatch(text or "")
    if not m:
        raise UsageError(f"{BUDGET_ENV}={text!r} is not a size: use e.g. 4G, 500M or 0 (no cache)")
    return int(float(m.group(1)) * (1 << (10 * " kmgt".index(m.group(2).lower() or " "))))


def budget() -> int:
    """The cache's size budget in bytes ($INFINIPOT_CACHE_BUDGET; 0: no cache)."""
    env = os.environ.get(BUDGET_ENV)
    return DEFAULT_BUDGET if env is None or not env.strip() else parse_size(env)


def answers_from_document(cfg) -> bool:
    """Whether a question asked of a pot read with `cfg` is answered from passages of the whole document as read
    (an InfiniPot pot with the archive's recall: every token read is in the pot or its archive), so that any pot
    of the same document and settings answers it alike; otherwise (the paper's selection, the baselines) the answer
    comes from the pot's KV and depends on what the read was distilled for."""
    from .config import INFINIPOT_METHODS

    return cfg.method in INFINIPOT_METHODS and cfg.bounded and bool(cfg.recall)


def _digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def stdin_digest() -> str | None:
    """sha256 of what stdin will give when it is a regular file (`< book.txt`): from its offset to its end, read
    with pread so the offset does not move; None for a pipe, a terminal or a stream with no file behind it."""
    try:
        fd = sys.stdin.fileno()
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not hasattr(os, "pread"):
            return None
        pos = os.lseek(fd, 0, os.SEEK_CUR)
        h = hashlib.sha256()
        while block := os.pread(fd, 1 << 20, pos):
            h.update(block)
            pos += len(block)
        return h.hexdigest()
    except (AttributeError, ValueError, OSError):
        return None


def _file_state(path: str) -> tuple | None:
    """(size, mtime, inode) of a regular file: a document that changes between its hash and the end of its read
    is not stored."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino) if stat.S_ISREG(st.st_mode) else None


def fmt_age(s: float) -> str:
    """'12 s', '3 min', '5 h', '2 days'."""
    s = max(0.0, s)
    if s < 60:
        return f"{s:.0f} s"
    if s < 3600:
        return f"{s // 60:.0f} min"
    if s < 86400:
        return f"{s // 3600:.0f} h"
    return f"{s // 86400:.0f} day" + ("s" if s >= 2 * 86400 else "")


# ---- the entries ------------------------------------------------------------------------------------------
@dataclass
class Entry:
    """One cached pot: its file, size, last use (the file's mtime) and metadata (None: unreadable)."""

    path: Path
    size: int
    used: float
    meta: dict | None = None

    @property
    def key(self) -> str:
        return self.path.stem

    @property
    def info(self) -> dict:
        return (self.meta or {}).get("cache") or {}

    def as_json(self, now: float | None = None) -> dict:
        now = time.time() if now is None else now
        m, c = self.meta or {}, self.info
        read = c.get("read") or {}
        return {"key": self.key, "file": str(self.path), "size": self.size, "damaged": self.meta is None,
                "sources": [s.get("path") for s in m.get("sources", [])], "model": m.get("model"),
                "tokens_read": m.get("tokens_read"), "read_s": c.get("read_s"),
                "age_s": round(now - c["stored"], 1) if "stored" in c else None, "used_s": round(now - self.used, 1),
                "catalyst": read.get("catalyst"), "spread": read.get("spread")}


def entries() -> list[Entry]:
    """The cached pots with their metadata (None: unreadable), least recently used first (headers only: cheap)."""
    from .potfile import read_meta

    out = [e for e in map(_stat_entry, folder().glob("*.pot")) if e]
    for e in out:
        try:
            e.meta = read_meta(e.path)
        except InfinipotError:
            e.meta = None
    return sorted(out, key=lambda e: e.used)


def _stat_entry(path: Path) -> Entry | None:
    """An entry from its file alone (metadata not read), None when there is no such file."""
    try:
        st = path.stat()
    except OSError:
        return None
    return Entry(path, st.st_size, st.st_mtime)


def _unlink(path: Path) -> bool:
    """Remove a file: True when removed, False when it was gone already (another process); InfinipotError when
    it cannot be."""
    try:
        path.unlink()
        return True
    except FileNotFoundError:
        return False
    except OSError as e:
        raise InfinipotError(f"cannot remove {path}: {e.strerror or e}") from None


def remove(key: str | None = None) -> list[Entry]:
    """Drop the entry whose key starts with `key` (a UsageError when none or several do), or every entry when
    `key` is None (and what killed saves left: their scratch folders, older temp files); returns the entries
    removed."""
    from ..scratch import remove_stale

    found = entries()
    if key is None:
        remove_stale(folder())
        with contextlib.suppress(OSError):
            for tmp in folder().glob(".*.tmp"):
                _unlink(tmp)
        return [e for e in found if _unlink(e.path)]
    match = [e for e in found if e.key.startswith(key.strip())] if key.strip() else []
    if not match:
        raise UsageError(f"no cached pot has the key {key!r} (`infinipot cache` lists them)")
    if len(match) > 1:
        raise UsageError(f"{len(match)} cached pots have keys starting with {key!r}: give more of the key")
    return [e for e in match if _unlink(e.path)]


def evict(limit: int, keep: Path | None = None) -> list[Entry]:
    """Drop the least recently used entries, oldest first, just until the cache fits `limit` bytes; `keep` (the
    entry just stored) is never dropped. Returns the entries dropped, with their metadata (read before they go:
    what they held can be named)."""
    from .potfile import read_meta

    with contextlib.suppress(OSError):  # temp files of older versions' killed saves (a save takes seconds)
        for tmp in folder().glob(".*.tmp"):
            with contextlib.suppress(OSError):
                if time.time() - tmp.stat().st_mtime > 3600:
                    tmp.unlink()
    found = [e for e in map(_stat_entry, folder().glob("*.pot")) if e]
    total = sum(e.size for e in found)
    dropped = []
    for e in sorted((e for e in found if e.path != keep), key=lambda e: e.used):
        if total <= limit:
            break
        try:
            e.meta = read_meta(e.path)
        except InfinipotError:
            e.meta = None
        try:
            if _unlink(e.path):
                dropped.append(e)
        except InfinipotError:
            continue
        total -= e.size
    return dropped


def _named(found: list[Entry], most: int = 3) -> str:
    """What entries held, for a message: "book.txt, stdin, notes.pdf and 2 more"."""
    names = []
    for e in found:
        srcs = [s.get("path") for s in (e.meta or {}).get("sources", [])]
        names.append(" + ".join("stdin" if p == "-" else os.path.basename(p or "?") for p in srcs) or "a damaged pot")
    more = len(names) - most
    return ", ".join(names[:most]) + (f" and {more} more" if more > 0 else "")


# ---- one command's use of the cache -------------------------------------------------------------------------
class PotCache:
    """The cache as one reading command uses it: plan() before the sources are opened, find() once the model is
    loaded (a Session from a cached pot, or None: read), store() after a read."""

    def __init__(self, job, stdin_hash: str | None):
        self.job = job
        self.stdin_hash = stdin_hash
        self.hit: Entry | None = None
        self.age_s: float | None = None   # a hit's age when it was found: what stderr says and --json reports
        self.key: str | None = None
        self.stored = False
        self.why: str | None = None       # why a read was not stored
        self._doc: dict | None = None
        self._states: list | None = None

    @classmethod
    def plan(cls, job) -> "PotCache | None":
        """The cache for `job`, or None when the command neither looks up nor stores: `read` (it saves its own pot),
        --load-pot, --no-cache, a budget of 0. Stdin from a file is hashed here, before it is opened."""
        if job.kind not in ("ask", "summarize", "chat") or job.load_pot or not job.cache or not job.sources:
            return None
        if budget() <= 0:
            return None
        from ..scratch import remove_stale

        remove_stale(folder())  # scratch folders of saves killed outright (each the size of a pot)
        return cls(job, stdin_digest() if "-" in job.sources else None)

    def spool_folder(self) -> Path | None:
        """Where a piped source is kept on disk before it is read (its hash looked up first): the cache folder,
        on disk beside the pots (the system's temp folder may be memory); None when it cannot be made (the pipe
        is then read as it comes, and not looked up)."""
        where = folder()
        try:
            where.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None
        return where

    # ---- keys ---------------------------------------------------------------------------------------------
    def _hashes(self, opened: list) -> list[str | None]:
        return [src.content_hash or (self.stdin_hash if src.path == "-" else None) for src in opened]

    def _document(self, lm, opened: list, hashes: list[str]) -> dict:
        """What the document key hashes: the sources, the model, the version and the settings but `spread`."""
        from .. import __version__
        from ..runtime.loading import fingerprint
        from .potfile import weights_probe

        labels = [os.path.basename(s.path) if len(opened) > 1 else "" for s in opened]  # as session reads them
        cfg = {k: v for k, v in self.job.pot.as_dict().items() if k != "spread"}
        return {"cache": CACHE_FORMAT, "infinipot": __version__,
                "sources": [[h, s.format, label] for h, s, label in zip(hashes, opened, labels)],
                "model": fingerprint(lm.model, lm.tokenizer), "weights": _digest(weights_probe(lm.model))[:16],
                "dtype": str(lm.dtype).removeprefix("torch."), "config": cfg}

    def _read_tag(self) -> dict:
        """What the read key hashes: what the pot was distilled for. A question's own text only where the answer
        depends on it (answers_from_document false)."""
        cat, cfg = self.job.reading_catalyst(), self.job.pot
        text = cat.text if cat.kind == "text" or (cat.kind == "question" and not answers_from_document(cfg)) else None
        return {"catalyst": cat.kind, "text": text, "spread": cfg.spread}

    @staticmethod
    def _key(doc: dict, tag: dict) -> tuple[str, str]:
        d = _digest(doc)[:32]
        return d, f"{d}-{_digest(tag)[:12]}"

    # ---- look up ------------------------------------------------------------------------------------------
    def find(self, lm, opened: list, display, resume, on_event=None):
        """A Session resumed from the cached pot for these sources and settings (`resume`: Session.resume), or
        None (then read, and store)."""
        self._states = [_file_state(s.path) for s in opened]  # before hashing: a change from now on is seen
        hashes = self._hashes(opened)
        if any(h is None for h in hashes):
            self.why = "a pipe that could not be kept on disk first: its bytes are known only once read"
            return None
        self._doc = self._document(lm, opened, hashes)
        doc_key, self.key = self._key(self._doc, self._read_tag())
        where = folder()
        cands = [e for e in map(_stat_entry, [where / f"{self.key}.pot"]) if e]
        if self.job.kind in ("ask", "chat") and answers_from_document(self.job.pot):
            with contextlib.suppress(OSError):
                others = [e for e in map(_stat_entry, where.glob(f"{doc_key}-*.pot")) if e and e.key != self.key]
                cands += sorted(others, key=lambda e: -e.used)  # any read of the document, the last used first
        for e in cands:
            session = self._load(e, lm, hashes, doc_key, display, resume, on_event)
            if session is not None:
                for rec, src in zip(session.records, opened):  # the same bytes, perhaps under another name
                    rec.path = src.path
                self.hit = e
                info = e.info
                self.age_s = round(max(0.0, time.time() - info.get("stored", e.used)), 1)  # one value, said twice
                with contextlib.suppress(OSError):
                    os.utime(e.path)  # used now: the last to be evicted
                verb = "summarizing" if self.job.kind == "summarize" else "answering"
                display.message(f"{verb} from the pot cached {fmt_age(self.age_s)} "
                                f"ago: read {int(e.meta.get('tokens_read', 0)):,} tokens in "
                                f"{_fmt_dur(info.get('read_s'))}; --no-cache to read again")
                return session
        return None

    def _load(self, e: Entry, lm, hashes: list[str], doc_key: str, display, resume, on_event):
        """The entry as a Session, or None: a damaged entry (or one that does not match its key) is dropped with a
        line on stderr; one that vanished (evicted by another process) is simply missed."""
        from .potfile import check_pot

        try:
            checked = check_pot(e.path)
            meta = checked[0]
            info = meta.get("cache") or {}
            if info.get("key") != e.key or info.get("document") != doc_key:
                raise InfinipotError("its key does not match its name")
            if [s.get("sha256") for s in meta.get("sources", [])] != hashes or \
                    any(s.get("stopped_at") is not None for s in meta.get("sources", [])):
                raise InfinipotError("its sources do not match the document")
            session = resume(lm, str(e.path), on_event=on_event, checked=checked)
        except Exception as err:  # noqa: BLE001 - whatever a damaged file raises, the document is read again
            if not e.path.exists():
                return None
            with contextlib.suppress(InfinipotError):
                _unlink(e.path)
            reason = str(err).replace(str(e.path), "").strip(" :") or "unreadable"
            display.warn(f"dropped a damaged cached pot ({reason}); reading the document again")
            return None
        e.meta = meta
        return session

    # ---- store --------------------------------------------------------------------------------------------
    def store(self, session, opened: list, display) -> None:
        """Store the pot of a complete read (atomically: potfile.save_pot), unless it was quick or a source
        changed while it was read; then drop the least recently used entries over the budget."""
        from .potfile import save_pot
        from ..units import fmt_bytes

        if session.read_s < MIN_READ_S:
            self.why = f"read in under {MIN_READ_S:g} s"
            return
        hashes = [s.content_hash for s in opened]
        if any(h is None for h in hashes) or any(r.stopped_at is not None for r in session.records):
            self.why = "the read is incomplete"
            return
        if self._states is not None and [_file_state(s.path) for s in opened] != self._states:
            self.why = "a source changed while it was read"
            return
        if self._doc is None or [s[0] for s in self._doc["sources"]] != hashes:  # stdin: known now
            self._doc = self._document(session.lm, opened, hashes)
        doc_key, self.key = self._key(self._doc, self._read_tag())
        where = folder()
        path = where / f"{self.key}.pot"
        info = {"key": self.key, "document": doc_key, "read": self._read_tag(), "stored": time.time(),
                "read_s": round(session.read_s, 3), "format": CACHE_FORMAT}
        try:
            where.mkdir(parents=True, exist_ok=True)
            size = save_pot(path, session.engine, {**session.meta(), "cache": info})
        except (InfinipotError, OSError) as e:
            self.why = f"could not write it: {e}"
            display.warn(f"the pot was not cached: {str(e).replace(str(path), 'the cache')}")
            return
        limit = budget()
        if size > limit:  # the others stay: dropping them would not make room for this one
            with contextlib.suppress(InfinipotError):
                _unlink(path)
            self.why = (f"the pot ({fmt_bytes(size)}) exceeds the cache budget ({fmt_bytes(limit)}, ${BUDGET_ENV}); "
                        "the cached pots are kept")
            display.notice(f"not cached: {self.why}")
            return
        dropped = evict(limit, keep=path)
        if dropped:
            n = len(dropped)
            display.notice(f"evicted {n} least recently used cached pot{'' if n == 1 else 's'} "
                           f"({fmt_bytes(sum(e.size for e in dropped))}: {_named(dropped)}) to keep the cache within "
                           f"its budget ({fmt_bytes(limit)}, ${BUDGET_ENV})")
        self.stored, self.why = True, None
        display.message(f"pot cached ({fmt_bytes(size)}): the next question about it answers without reading")

    def as_json(self) -> dict:
        """The --json "cache" object."""
        if self.hit is not None:
            info, m = self.hit.info, self.hit.meta or {}
            return {"hit": True, "key": self.hit.key, "age_s": self.age_s,
                    "read_s": info.get("read_s"), "tokens_read": m.get("tokens_read")}
        return {"hit": False, "key": self.key, "stored": self.stored, "why": self.why}


def _fmt_dur(s) -> str:
    from ..units import fmt_dur

    return fmt_dur(s)


def off_json(job) -> dict | None:
    """The --json "cache" object of a command that did not use the cache (None for `read` and --load-pot)."""
    if job.kind not in ("ask", "summarize", "chat") or job.load_pot:
        return None
    return {"hit": False, "key": None, "stored": False, "why": "--no-cache" if not job.cache else "the cache is off"}


# ---- `infinipot cache` ------------------------------------------------------------------------------------
def cache_command(clear: bool, key: str | None, json_out: bool, out) -> None:
    """List the cached pots, or drop one (`key`) or all (`clear`)."""
    from ..units import fmt_bytes, fmt_dur

    if clear or key is not None:
        gone = remove(None if clear else key)
        freed = sum(e.size for e in gone)
        if json_out:
            out.write(json.dumps({"removed": [e.key for e in gone], "bytes": freed}) + "\n")
        else:
            out.write(f"removed {len(gone)} cached pot{'' if len(gone) == 1 else 's'} ({fmt_bytes(freed)})\n")
        return
    found = entries()[::-1]  # the most recently used first
    now = time.time()
    limit = budget()
    total = sum(e.size for e in found)
    if json_out:
        out.write(json.dumps({"folder": str(folder()), "budget": limit, "bytes": total,
                              "entries": [e.as_json(now) for e in found]}, ensure_ascii=False) + "\n")
        return
    head = (f"{len(found)} cached pot{'' if len(found) == 1 else 's'}, {fmt_bytes(total)} of "
            + (f"{fmt_bytes(limit)}" if limit else "0 (the cache is off)") + f" (${BUDGET_ENV}) in {folder()}")
    out.write(head + "\n")
    if not found:
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, show_edge=False)
    for col in ("key", "sources", "tokens", "read in", "read for", "size", "cached", "used", "model"):
        table.add_column(col, justify="right" if col in ("tokens", "size") else "left", overflow="fold")
    for e in found:
        j = e.as_json(now)
        if e.meta is None:
            table.add_row(e.key[:12], "(damaged: dropped when next used)", "", "", "", fmt_bytes(e.size), "",
                          fmt_age(now - e.used) + " ago", "")
            continue
        names = ", ".join(os.path.basename(p or "?") if p != "-" else "stdin" for p in j["sources"])
        read_for = {"question": "questions", "general": "summary" if j["spread"] else "general"}.get(
            j["catalyst"], "--catalyst")
        table.add_row(e.key[:12], names, f"{j['tokens_read']:,}" if j["tokens_read"] is not None else "?",
                      fmt_dur(j["read_s"]), read_for, fmt_bytes(e.size),
                      fmt_age(j["age_s"]) + " ago" if j["age_s"] is not None else "?", fmt_age(j["used_s"]) + " ago",
                      str(j["model"] or "?"))
    Console(file=out, highlight=False, soft_wrap=False, width=200 if not getattr(out, "isatty", lambda: False)()
            else None).print(table)
