"""Pot files: save a distilled memory pot to disk, load it back, and show what it remembers.

A pot file is a safetensors file (never pickle). Tensors:

    layers.{i}.keys / layers.{i}.values   (1, H_kv, S, D) in the model dtype — the KV cache (post-RoPE, CR-RoPE'd)
    src, tok                              (L, H_kv, S) int64   — document position / token id of every entry
    nov, acc                              (L, H_kv, S) float32 — NuC novelty / accumulated attention
    prev_hidden                           (d,) last hidden state (absent before anything was read)
    catalyst                              (n,) int64 catalyst prompt ids
    pending                               (n,) int64 document ids fed but not yet forwarded
    archive.ids, archive.segs             (T,) int32 / (K, 2) int64 — evicted sentences (archive.py; absent
                                          when nothing was evicted, and in pots written before it existed)

The JSON metadata lives in the safetensors header, ``__metadata__ = {"infinipot": json.dumps(meta)}``; see
:func:`save_pot` for its keys. ``tensors_sha256`` (a hash over every tensor's name, dtype, shape and bytes)
catches damaged or tampered data; ``fingerprint`` (config + vocabulary) and ``weights_probe`` (a few sampled
weights) make sure a pot is only ever loaded into the model that made it.

Writes are atomic: a temporary file in the same folder, fsync'd, then ``os.replace``; a failed or
interrupted save leaves any previous pot untouched.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from . import __version__
from .engine import PAPER_OPTIONS, Engine, PotConfig
from .errors import InfinipotError, InputError, UsageError
from .model import fingerprint

FORMAT_VERSION = 1
META_KEY = "infinipot"
CATALYST_KINDS = ("general", "question", "text")
CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(PotConfig))
_MAX_HEADER = 100 * 1024 * 1024
_PROBE_PER_PARAM = 16

# Keys save_pot computes itself; a caller's `meta` may not set them.
RESERVED = {"format_version", "infinipot_version", "fingerprint", "weights_probe", "dtype", "config",
            "tokens_read", "cycles", "entries", "n_pinned", "n_distilled", "peak_entries", "layers", "kv_heads",
            "head_dim", "cache_layers", "kv_bytes", "fed", "pending", "where", "provenance", "tensors_sha256",
            "meta_sha256", "archive"}

BLOCKS = "▁▂▃▄▅▆▇█"


# ---- helpers ------------------------------------------------------------------------------------------
def _text_config(model):
    cfg = model.config
    return cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg


def _head_dim(model) -> int:
    cfg = _text_config(model)
    return getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def tensors_digest(tensors: dict[str, torch.Tensor]) -> str:
    """sha256 over every tensor's name, dtype, shape and raw bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach()
        h.update(f"{name}|{_dtype_name(t.dtype)}|{tuple(t.shape)}|".encode())
        if t.numel():
            raw = t.cpu().contiguous().reshape(-1).view(torch.uint8).numpy()
            h.update(memoryview(raw))
    return h.hexdigest()


def meta_digest(meta: dict) -> str:
    """sha256 over the metadata (canonical JSON), its own checksum left out."""
    body = {k: v for k, v in meta.items() if k != "meta_sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


def weights_probe(model: torch.nn.Module) -> list[float]:
    """A few weights sampled from the first, middle and last matrices: tells fine-tunes of one architecture apart
    (the fingerprint only covers config + vocabulary, e.g. a base and an instruct model share it)."""
    mats = [p for _, p in model.named_parameters() if p.dim() >= 2]
    if not mats:
        return []
    out: list[float] = []
    for i in sorted({0, len(mats) // 2, len(mats) - 1}):
        flat = mats[i].detach().reshape(-1)
        n = _PROBE_PER_PARAM
        # integer spacing: float32 linspace rounds past the end for large matrices
        idx = ((torch.arange(n, dtype=torch.long) * (flat.numel() - 1)) // max(1, n - 1)).to(flat.device)
        out.extend(float(x) for x in flat.index_select(0, idx).float().cpu())
    return out


def _probe_matches(saved: list, now: list[float]) -> bool:
    """Equal up to half-precision rounding (a pot saved in bf16 on a GPU loads into the fp32 model on a CPU)."""
    if len(saved) != len(now):
        return False
    bad = sum(1 for a, b in zip(saved, now) if abs(float(a) - b) > 1e-5 + 5e-3 * abs(b))
    return bad <= max(1, len(now) // 20)


def _where_at(provenance: list, index: int) -> str:
    w = ""
    for start, label in provenance:
        if start <= index:
            w = label
        else:
            break
    return w


# ---- saving -------------------------------------------------------------------------------------------
def _collect(engine: Engine, meta: dict) -> tuple[dict[str, torch.Tensor], dict]:
    """The tensors and the metadata describing `engine` (all tensors on the CPU, contiguous)."""
    pot = engine.pot
    S = len(pot)
    L, H = pot.num_layers, pot.num_kv_heads
    tensors: dict[str, torch.Tensor] = {}
    layers = pot.cache.layers if pot.cache_len() else []
    if pot.cache_len() != S:
        raise RuntimeError(f"inconsistent pot: the cache holds {pot.cache_len()} entries, the metadata {S}")
    if layers and len(layers) != L:
        raise RuntimeError(f"inconsistent pot: {len(layers)} cache layers for a {L}-layer model")
    dtype = next(engine.model.parameters()).dtype
    head_dim = _head_dim(engine.model)
    for i, layer in enumerate(layers):
        tensors[f"layers.{i}.keys"] = layer.keys.detach().cpu().contiguous()
        tensors[f"layers.{i}.values"] = layer.values.detach().cpu().contiguous()
        dtype = layer.keys.dtype
        head_dim = layer.keys.shape[-1]
    tensors["src"] = pot.src.detach().cpu().long().contiguous()
    tensors["tok"] = pot.tok.detach().cpu().long().contiguous()
    tensors["nov"] = pot.nov.detach().cpu().float().contiguous()
    tensors["acc"] = pot.acc.detach().cpu().float().contiguous()
    tensors["catalyst"] = torch.tensor(list(engine.catalyst), dtype=torch.long)
    tensors["pending"] = torch.tensor(list(engine.pending), dtype=torch.long)
    if engine.prev_hidden is not None:
        tensors["prev_hidden"] = engine.prev_hidden.detach().cpu().contiguous().clone()
    tensors.update(engine.archive.tensors())

    bad = RESERVED & set(meta)
    if bad:
        raise ValueError(f"save_pot: meta may not set {sorted(bad)}")
    meta = dict(meta)
    cat = meta.pop("catalyst", None) or {}
    kind = cat.get("kind") or meta.pop("catalyst_kind", None) or "general"
    text = cat.get("text", meta.pop("catalyst_text", None))
    if kind not in CATALYST_KINDS:
        raise ValueError(f"save_pot: catalyst kind must be one of {CATALYST_KINDS}, not {kind!r}")
    model_name = meta.pop("model", None) or getattr(engine.model.config, "_name_or_path", "") \
        or getattr(engine.model.config, "model_type", "") or "unknown"
    info: dict[str, Any] = {
        "format_version": FORMAT_VERSION,
        "infinipot_version": __version__,
        "model": str(model_name),
        "fingerprint": fingerprint(engine.model, engine.tok),
        "weights_probe": weights_probe(engine.model),
        "dtype": _dtype_name(dtype),
        "config": {k: getattr(engine.cfg, k) for k in CONFIG_FIELDS},
        "catalyst": {"kind": kind, "text": text, "tokens": len(engine.catalyst)},
        "tokens_read": int(engine.tokens_read),
        "cycles": int(engine.cycles),
        "entries": int(S),
        "n_pinned": int(pot.n_pinned),
        "n_distilled": int(pot.n_distilled),
        "peak_entries": int(pot.peak_entries),
        "layers": int(L),
        "kv_heads": int(H),
        "head_dim": int(head_dim),
        "cache_layers": len(layers),
        "kv_bytes": int(pot.kv_bytes()),
        "fed": int(engine._fed),
        "pending": len(engine.pending),
        "where": engine.where,
        "provenance": [[int(s), str(w)] for s, w in engine.provenance],
        "archive": {"segments": len(engine.archive), "tokens": engine.archive.tokens},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    info.update(meta)  # "sources", "created", anything else the caller records
    info["tensors_sha256"] = tensors_digest(tensors)
    info["meta_sha256"] = meta_digest(info)
    return tensors, info


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def save_pot(path: str | os.PathLike, engine: Engine, meta: dict | None = None) -> int:
    """Write `engine`'s pot to `path` atomically; returns the bytes written.

    `meta` adds to the metadata: the CLI passes "sources" (list of {path, format, size, sha256, tokens, units,
    stopped_at}), "model" (display name), "created", and "catalyst" = {"kind": general|question|text, "text": ...}.
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"cannot write the pot to {path}: folder {folder} does not exist")
    if path.is_dir():
        raise UsageError(f"cannot write the pot to {path}: it is a folder")
    tensors, info = _collect(engine, meta or {})
    header = {META_KEY: json.dumps(info, ensure_ascii=False)}
    mode = (path.stat().st_mode & 0o777) if path.exists() else (0o666 & ~_umask())
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        os.close(fd)
        save_file(tensors, tmp, metadata=header)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        size = os.path.getsize(tmp)
        os.replace(tmp, path)
    except BaseException as e:  # KeyboardInterrupt included: never leave a temp file, never touch `path`
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if isinstance(e, OSError):
            raise InfinipotError(f"could not write the pot to {path}: {e.strerror or e}") from e
        raise
    _fsync_dir(folder)
    return size


# ---- reading ------------------------------------------------------------------------------------------
def _read_header(path: Path) -> tuple[dict, int]:
    """The safetensors header (JSON) and the file size; checks the data section is complete."""
    if not path.exists():
        raise InputError(f"pot file not found: {path}")
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a pot file")
    try:
        size = path.stat().st_size
        with open(path, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else 0
            if len(head) < 8 or n < 2 or n > _MAX_HEADER:
                raise InputError(f"{path} is not an infinipot pot file (not a safetensors file)")
            raw = f.read(n)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror or e}") from e
    if len(raw) < n:
        if raw[:1] == b"{":
            raise InputError(f"{path} is truncated ({size} bytes; its header alone needs {n + 8})")
        raise InputError(f"{path} is not an infinipot pot file (not a safetensors file)")
    try:
        header = json.loads(raw.decode("utf-8"))
        if not isinstance(header, dict):
            raise ValueError
    except (UnicodeDecodeError, ValueError):
        raise InputError(f"{path} is not an infinipot pot file (not a safetensors file, or its header is damaged)") from None
    end = 0
    try:
        for name, entry in header.items():
            if name != "__metadata__":
                end = max(end, int(entry["data_offsets"][1]))
    except (TypeError, KeyError, IndexError, ValueError):
        raise InputError(f"{path} is corrupt: damaged safetensors header") from None
    need = 8 + n + end
    if size < need:
        raise InputError(f"{path} is truncated: {size} bytes, the pot needs {need} (an interrupted copy or save?)")
    if size > need:
        raise InputError(f"{path} is corrupt: {size - need} unexpected bytes after the data")
    return header, size


def _parse_meta(path: Path, header: dict) -> dict:
    md = header.get("__metadata__")
    if not isinstance(md, dict) or META_KEY not in md:
        raise InputError(f"{path} is a safetensors file but not an infinipot pot (no infinipot metadata)")
    try:
        meta = json.loads(md[META_KEY])
        if not isinstance(meta, dict):
            raise ValueError
    except (TypeError, ValueError):
        raise InputError(f"{path} is corrupt: its infinipot metadata is not valid JSON") from None
    v = meta.get("format_version")
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise InputError(f"{path} has an unknown pot format version ({v!r}); this infinipot reads format {FORMAT_VERSION}")
    if v > FORMAT_VERSION:
        made = meta.get("infinipot_version", "a newer version")
        raise InputError(f"{path} was written by infinipot {made} in pot format {v}; this infinipot ({__version__}) "
                         f"reads format {FORMAT_VERSION} only — upgrade infinipot-cli")
    missing = [k for k in ("fingerprint", "config", "tokens_read", "entries", "layers", "kv_heads", "head_dim",
                           "cache_layers", "n_pinned", "tensors_sha256", "meta_sha256") if k not in meta]
    if missing:
        raise InputError(f"{path} is corrupt: its metadata lacks {', '.join(missing)}")
    if meta["meta_sha256"] != meta_digest(meta):
        raise InputError(f"{path} is corrupt: its metadata does not match its checksum (damaged or modified)")
    return meta


def read_meta(path: str | os.PathLike) -> dict:
    """The pot's metadata, from the file header only (cheap; no model needed, tensors not read)."""
    path = Path(path)
    header, _ = _read_header(path)
    return _parse_meta(path, header)


def _load_tensors(path: Path, meta: dict) -> dict[str, torch.Tensor]:
    """All tensors (CPU), checked against the stored checksum and the metadata's shapes."""
    try:
        tensors = load_file(str(path), device="cpu")
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types
        raise InputError(f"{path} is corrupt: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    if tensors_digest(tensors) != meta["tensors_sha256"]:
        raise InputError(f"{path} is corrupt: its data does not match its checksum (damaged or modified)")
    _check_structure(path, tensors, meta)
    return tensors


def _load_some(path: Path, meta: dict, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """Only the named tensors, unverified (inspect without --verify)."""
    shape = (meta["layers"], meta["kv_heads"], meta["entries"])
    out = {}
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            for name in names:
                out[name] = f.get_tensor(name)
    except Exception as e:  # noqa: BLE001
        raise InputError(f"{path} is corrupt: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    for name, x in out.items():
        if tuple(x.shape) != shape or x.dtype != torch.long:
            raise InputError(f"{path} is corrupt: tensor {name!r} is {tuple(x.shape)}, expected {shape}")
    src = out.get("src")
    if src is not None and src.numel() and int(src.max()) >= meta["tokens_read"]:
        raise InputError(f"{path} is corrupt: entry positions outside the document")
    return out


def _check_structure(path: Path, t: dict[str, torch.Tensor], meta: dict) -> None:
    def bad(msg: str):
        raise InputError(f"{path} is corrupt: {msg}")

    for name in ("src", "tok", "nov", "acc", "catalyst", "pending"):
        if name not in t:
            bad(f"tensor {name!r} is missing")
    L, H, S, D = meta["layers"], meta["kv_heads"], meta["entries"], meta["head_dim"]
    shape = (L, H, S)
    for name, dt in (("src", torch.long), ("tok", torch.long), ("nov", torch.float32), ("acc", torch.float32)):
        if tuple(t[name].shape) != shape or t[name].dtype != dt:
            bad(f"tensor {name!r} is {tuple(t[name].shape)} {_dtype_name(t[name].dtype)}, expected {shape}")
    for name in ("catalyst", "pending"):
        if t[name].dim() != 1 or t[name].dtype != torch.long:
            bad(f"tensor {name!r} is not a list of token ids")
    n_layers = meta["cache_layers"]
    if n_layers not in (0, L) or (n_layers == 0 and S > 0):
        bad(f"{n_layers} cache layers for {L} layers and {S} entries")
    for i in range(n_layers):
        for part in ("keys", "values"):
            name = f"layers.{i}.{part}"
            if name not in t:
                bad(f"tensor {name!r} is missing")
            x = t[name]
            if x.dim() != 4 or tuple(x.shape[:3]) != (1, H, S) or (part == "keys" and x.shape[3] != D):
                bad(f"tensor {name!r} is {tuple(x.shape)}, expected (1, {H}, {S}, {D})")
    if "prev_hidden" in t and t["prev_hidden"].dim() != 1:
        bad("tensor 'prev_hidden' is not a vector")
    if ("archive.ids" in t) != ("archive.segs" in t):
        bad("the archive is incomplete")
    if "archive.segs" in t:
        from .archive import Archive

        try:
            Archive.from_tensors(t["archive.ids"], t["archive.segs"])
        except ValueError as e:
            bad(str(e))
        segs = t["archive.segs"]
        if segs.numel() and int((segs[:, 0] + segs[:, 1]).max()) > meta["tokens_read"]:
            bad("archive positions outside the document")
    if S:
        src = t["src"]
        if int(src.max()) >= meta["tokens_read"] or int(src.min()) < -max(1, meta["n_pinned"]):
            bad("entry positions outside the document")
    if not 0 <= meta["n_pinned"] <= S:
        bad("more pinned entries than entries")


# ---- loading ------------------------------------------------------------------------------------------
def load_pot(path: str | os.PathLike, model, tokenizer, expect_model_name: str | None = None,
             on_event=None) -> tuple[Engine, dict]:
    """Validate `path` and rebuild the Engine it was saved from, ready to answer or to read on.

    `expect_model_name`: the name of the loaded model, for the error message when the pot was made by another.
    """
    path = Path(path)
    meta = read_meta(path)
    made_by = meta.get("model") or "another model"
    ours = expect_model_name or "the loaded model"
    fp = fingerprint(model, tokenizer)
    if meta["fingerprint"] != fp:
        raise InputError(f"{path} was made by another model: {made_by} (fingerprint {meta['fingerprint']}), not by "
                         f"{ours} ({fp}); load it with -m {made_by}")
    probe = meta.get("weights_probe")
    if probe and not _probe_matches(probe, weights_probe(model)):
        raise InputError(f"{path} was made by another model: {made_by} (same architecture and tokenizer, different "
                         f"weights than {ours}); load it with -m {made_by}")
    tensors = _load_tensors(path, meta)

    cfg_m = _text_config(model)
    L = cfg_m.num_hidden_layers
    H = getattr(cfg_m, "num_key_value_heads", None) or cfg_m.num_attention_heads
    if (meta["layers"], meta["kv_heads"], meta["head_dim"]) != (L, H, _head_dim(model)):
        raise InputError(f"{path} does not fit {ours}: {meta['layers']} layers x {meta['kv_heads']} KV heads x "
                         f"{meta['head_dim']} dims, the model has {L} x {H} x {_head_dim(model)}")
    ph = tensors.get("prev_hidden")
    if ph is not None and ph.shape[0] != cfg_m.hidden_size:
        raise InputError(f"{path} does not fit {ours}: hidden size {ph.shape[0]}, the model has {cfg_m.hidden_size}")

    saved_cfg = meta["config"] if isinstance(meta["config"], dict) else {}
    # A pot saved before an option existed was made without it: options missing from its config take the
    # paper's values (PAPER_OPTIONS), not today's defaults, so it keeps selecting the way it did.
    saved_cfg = {**PAPER_OPTIONS, **saved_cfg}
    try:
        cfg = PotConfig(**{k: v for k, v in saved_cfg.items() if k in CONFIG_FIELDS})
        engine = Engine(model, tokenizer, cfg, catalyst_ids=tensors["catalyst"].tolist(), on_event=on_event)
    except (UsageError, ValueError, TypeError) as e:
        raise InputError(f"{path} is corrupt: its pot settings are invalid ({e})") from e

    cat = meta.get("catalyst") if isinstance(meta.get("catalyst"), dict) else {}
    if cat.get("kind") in ("question", "text"):  # which catalyst rows are the question (scoring/cap.py)
        from .prompts import Prompts

        ids, focus = Prompts(tokenizer).catalyst(cat["kind"], cat.get("text"))
        if ids == engine.catalyst:
            engine.catalyst_focus = focus
    pot = engine.pot
    device = engine.device
    dtype = next(model.parameters()).dtype
    for i in range(meta["cache_layers"]):
        k = tensors[f"layers.{i}.keys"].to(device=device, dtype=dtype)
        v = tensors[f"layers.{i}.values"].to(device=device, dtype=dtype)
        pot.cache.update(k, v, i)
    pot.src = tensors["src"]
    pot.tok = tensors["tok"]
    pot.nov = tensors["nov"]
    pot.acc = tensors["acc"]
    pot.n_pinned = int(meta["n_pinned"])
    pot.n_distilled = int(meta.get("n_distilled", len(pot)))
    pot.peak_entries = int(meta.get("peak_entries", len(pot)))
    engine.tokens_read = int(meta["tokens_read"])
    engine.cycles = int(meta.get("cycles", 0))
    engine.prev_hidden = ph.to(device=device, dtype=dtype) if ph is not None else None
    engine.provenance = [(int(s), str(w)) for s, w in meta.get("provenance", [])]
    engine.pending = tensors["pending"].tolist()
    engine._fed = int(meta.get("fed", engine.tokens_read + len(engine.pending)))
    engine.where = str(meta.get("where", ""))
    if "archive.segs" in tensors:
        from .archive import Archive

        engine.archive = Archive.from_tensors(tensors["archive.ids"], tensors["archive.segs"])
    return engine, meta


# ---- inspecting ---------------------------------------------------------------------------------------
def _spans(counts: torch.Tensor) -> list[tuple[int, int]]:
    """[start, end) runs of positions with a non-zero count."""
    k = (counts > 0).to(torch.int8)
    d = torch.diff(torch.cat([torch.zeros(1, dtype=torch.int8), k, torch.zeros(1, dtype=torch.int8)]))
    starts = torch.nonzero(d == 1).flatten().tolist()
    ends = torch.nonzero(d == -1).flatten().tolist()
    return list(zip(starts, ends))


def inspect_pot(path: str | os.PathLike, tokenizer=None, bins: int = 60, top: int = 12,
                max_chars: int = 400, verify: bool = True) -> dict:
    """What a pot file holds and what it remembers — JSON-serializable.

    passages: the `top` spans of consecutive kept document positions (union over all (layer, head)) by kept
    weight (tokens x share of heads), in document order, each with its text (if `tokenizer`) and `where` label.
    strip: [0, tokens_read) in min(bins, tokens_read) bins; `kept` = share of the bin's tokens some head keeps,
    `heads` = mean share of heads keeping them.
    verify: read every tensor and check the checksum (as load_pot does); False reads only src/tok.
    """
    path = Path(path)
    header, size = _read_header(path)
    meta = _parse_meta(path, header)
    if verify:
        t = _load_tensors(path, meta)
    else:
        t = _load_some(path, meta, ("src", "tok"))
    L, H = meta["layers"], meta["kv_heads"]
    LH = max(1, L * H)
    T = int(meta["tokens_read"])
    src, tok = t["src"], t["tok"]
    mask = src >= 0
    pos, ids = src[mask], tok[mask]
    counts = torch.bincount(pos, minlength=T)[:T] if T else torch.zeros(0, dtype=torch.long)
    token_of = torch.full((T,), -1, dtype=torch.long)
    if T:
        token_of[pos] = ids
    prov = sorted(([int(s), str(w)] for s, w in meta.get("provenance", [])), key=lambda p: p[0])

    spans = []
    for s, e in _spans(counts):
        w = float(counts[s:e].sum()) / LH
        spans.append((w, s, e))
    chosen = sorted(sorted(spans, key=lambda x: (-x[0], x[1]))[:top], key=lambda x: x[1])
    passages = []
    for w, s, e in chosen:
        text = None
        if tokenizer is not None:
            text = tokenizer.decode(token_of[s:e].tolist(), skip_special_tokens=False)
            if max_chars and len(text) > max_chars:
                text = text[:max_chars].rstrip() + "…"
        passages.append({"start": s, "end": e, "tokens": e - s, "heads": round(w / (e - s), 4),
                         "weight": round(w, 2), "where": _where_at(prov, s), "text": text})

    nb = min(bins, T) if bins > 0 else 0
    edges = [i * T // nb for i in range(nb + 1)] if nb else []
    kept_strip, heads_strip, where_strip = [], [], []
    for a, b in zip(edges[:-1], edges[1:]):
        c = counts[a:b].float()
        kept_strip.append(round(float((c > 0).float().mean()), 4))
        heads_strip.append(round(float(c.mean()) / LH, 4))
        where_strip.append(_where_at(prov, a))

    remembered = int((counts > 0).sum())
    cfg = meta.get("config", {})
    return {
        "path": str(path),
        "file_bytes": size,
        "format_version": meta["format_version"],
        "infinipot_version": meta.get("infinipot_version"),
        "created": meta.get("created"),
        "model": meta.get("model"),
        "fingerprint": meta["fingerprint"],
        "dtype": meta.get("dtype"),
        "config": cfg,
        "catalyst": meta.get("catalyst"),
        "layers": L,
        "kv_heads": H,
        "head_dim": meta["head_dim"],
        "entries": meta["entries"],
        "n_pinned": meta["n_pinned"],
        "n_distilled": meta.get("n_distilled"),
        "peak_entries": meta.get("peak_entries"),
        "kv_bytes": meta.get("kv_bytes"),
        "tokens_read": T,
        "pending": meta.get("pending", 0),
        "cycles": meta.get("cycles", 0),
        "where": meta.get("where", ""),
        "sources": meta.get("sources", []),
        "provenance": prov,
        "remembered": {"tokens": remembered, "share": round(remembered / T, 4) if T else 0.0,
                       "spans": len(spans)},
        "strip": {"bins": nb, "kept": kept_strip, "heads": heads_strip, "where": where_strip},
        "passages": passages,
    }


def _human_bytes(n) -> str:
    if n is None:
        return "?"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def strip_line(shares: list[float]) -> str:
    """One block character per bin: blank for nothing kept, ▁..█ by share."""
    out = []
    for s in shares:
        out.append(" " if s <= 0 else BLOCKS[min(len(BLOCKS) - 1, max(0, int(s * len(BLOCKS) + 0.999) - 1))])
    return "".join(out)


def render_inspect(info: dict, console) -> None:
    """Print inspect_pot's dict with rich: facts, the coverage strip and the remembered passages."""
    from rich.markup import escape
    from rich.table import Table

    cfg = info.get("config") or {}
    cat = info.get("catalyst") or {}
    tab = Table(show_header=False, box=None, pad_edge=False)
    tab.add_column(style="bold cyan", no_wrap=True)
    tab.add_column()
    rows = [
        ("pot", f"{info['path']} ({_human_bytes(info.get('file_bytes'))})"),
        ("model", f"{info.get('model')}  [dim]{info.get('fingerprint')} · {info.get('dtype')}[/dim]"),
        ("made", f"{info.get('created') or '?'} by infinipot {info.get('infinipot_version')}"),
        ("method", f"{cfg.get('method')}  pot {cfg.get('size')} · keep {cfg.get('keep')} · "
                   f"NuC ratio {cfg.get('alpha')} · chunk {cfg.get('chunk')}"),
        ("catalyst", f"{cat.get('kind')}" + (f": {escape(str(cat.get('text')))}" if cat.get("text") else "")),
        ("read", f"{info['tokens_read']:,} tokens in {info.get('cycles', 0)} distillation cycles"
                 + (f" (+{info['pending']} pending)" if info.get("pending") else "")
                 + (f", up to {escape(info['where'])}" if info.get("where") else "")),
        ("holds", f"{info['entries']} entries per head ({info['n_pinned']} pinned) · {info['layers']} layers × "
                  f"{info['kv_heads']} KV heads · KV {_human_bytes(info.get('kv_bytes'))}"),
        ("remembers", f"{info['remembered']['tokens']:,} document tokens "
                      f"({info['remembered']['share']:.1%}) in {info['remembered']['spans']} spans"),
    ]
    for src in info.get("sources") or []:
        stop = src.get("stopped_at")
        more = f", stopped at token {stop:,}" if isinstance(stop, int) else ""
        rows.append(("source", f"{escape(str(src.get('path')))} [dim]({src.get('format')}, "
                               f"{src.get('tokens', '?')} tokens{more})[/dim]"))
    for k, v in rows:
        tab.add_row(k, v)
    console.print(tab)

    strip = info.get("strip") or {}
    if strip.get("bins"):
        wh = strip.get("where") or []
        console.print()
        console.print("[bold]coverage[/bold] [dim](document start → end)[/dim]")
        console.print(f"  kept  [green]{strip_line(strip['kept'])}[/green]")
        console.print(f"  heads [cyan]{strip_line(strip['heads'])}[/cyan]")
        if wh and (wh[0] or wh[-1]):
            console.print(f"  [dim]{escape(wh[0] or 'start')} … {escape(wh[-1] or 'end')}[/dim]")

    passages = info.get("passages") or []
    if passages:
        console.print()
        console.print("[bold]what the pot remembers[/bold] [dim](largest kept passages, in document order)[/dim]")
        for p in passages:
            label = f"{escape(p['where'])} · " if p.get("where") else ""
            rng = f"token {p['start']:,}" if p["tokens"] == 1 else f"tokens {p['start']:,}–{p['end'] - 1:,}"
            console.print(f"[cyan]{label}{rng}[/cyan] "
                          f"[dim]kept by {p['heads']:.0%} of heads[/dim]")
            if p.get("text") is not None:
                console.print("  " + escape(" ".join(p["text"].split())))


# ---- questions ----------------------------------------------------------------------------------------
def _norm(s: str) -> str:
    return " ".join(str(s).split()).casefold()


def question_mismatch(meta: dict, question: str) -> str | None:
    """A warning when the pot was distilled for another question (CaP-Q) than the one asked now."""
    cat = meta.get("catalyst") or {}
    if cat.get("kind") != "question":
        return None
    saved = cat.get("text") or ""
    if _norm(saved) == _norm(question or ""):
        return None
    return (f"this pot was distilled for another question ({saved.strip()!r}); it kept what mattered for that one, "
            "so the answer may miss details — re-read the document with this question, or save pots with the "
            "general catalyst")
