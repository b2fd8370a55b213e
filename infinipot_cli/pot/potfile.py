"""Pot files: save a distilled memory pot to disk and load it back (pot_report.py, `infinipot inspect`, shows what one remembers).

A pot file is a safetensors file (never pickle). Tensors:

    layers.{i}.keys / layers.{i}.values   (1, H_kv, S, D) — the KV cache (post-RoPE, CR-RoPE'd): bf16 when the model
                                          is fp32 (half the file; ``kv_dtype`` in the metadata), else the model dtype
    src, tok                              (L, H_kv, S) int64   — document position / token id of every entry
    nov                                   (L, H_kv, S) float32 — NuC novelty
    acc                                   (L, H_kv, S) float32 — accumulated attention, only for a policy that ranks
                                          by it (h2o); older pots hold it for every method (ignored there)
    prev_hidden                           (d,) last hidden state (absent before anything was read)
    catalyst                              (n,) int64 catalyst prompt ids
    pending                               (n,) int64 document ids fed but not yet forwarded
    expected.ids                          (W, 32) int32 — the words the read expected, per 16 positions
                                          (scoring/expected.py; absent in pots saved before)
    archive.ids, archive.segs             (T,) int32 / (K, 2) int64 — evicted sentences (archive.py; absent
                                          when nothing was evicted, and in pots written before it existed)

The JSON metadata lives in the safetensors header, ``__metadata__ = {"infinipot": json.dumps(meta)}``; see
:func:`save_pot` for its keys. ``tensors_sha256`` (a hash over every tensor's name, dtype, shape and bytes)
catches damaged or tampered data; ``fingerprint`` (config + vocabulary) and ``weights_probe`` (a few sampled
weights) make sure a pot is only ever loaded into the model that made it.

Writes are atomic: the file is written in a scratch folder beside the target (scratch.py: locked while the save
runs), fsync'd, then ``os.replace``d over it; a failed or interrupted save leaves any previous pot untouched, and
the scratch folder of a save killed outright is removed by the next command that starts a save into that folder
(``Job.check``, the pot cache's ``plan``) and by the next save itself.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

from .. import __version__
from ..runtime.compat import text_config
from .engine import Engine
from ..errors import InfinipotError, InputError, UsageError
from ..runtime.loading import fingerprint
from ..scratch import Scratch, remove_stale

FORMAT_VERSION = 1
META_KEY = "infinipot"
CATALYST_KINDS = ("general", "question", "text")
_MAX_HEADER = 100 * 1024 * 1024
_PROBE_PER_PARAM = 16

# Keys save_pot computes itself; a caller's `meta` may not set them.
RESERVED = {"format_version", "infinipot_version", "fingerprint", "weights_probe", "dtype", "config",
            "tokens_read", "cycles", "entries", "n_pinned", "n_distilled", "peak_entries", "layers", "kv_heads",
            "head_dim", "cache_layers", "kv_bytes", "kv_dtype", "fed", "pending", "where", "provenance", "tensors_sha256",
            "meta_sha256", "archive"}

# How the KV cache is stored: fp32 KV as bf16 (half the file; measured: the same answers from the loaded pot,
# docs/results/needle.md); other dtypes as they are. Loading casts back to the model's dtype, so fp32 pots written
# before this still load.
STORE_DTYPE = {torch.float32: torch.bfloat16}


# ---- helpers ------------------------------------------------------------------------------------------
def _head_dim(model) -> int:
    cfg = text_config(model)
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


# ---- saving -------------------------------------------------------------------------------------------
def _collect(engine: Engine, meta: dict, compact: bool = True) -> tuple[dict[str, torch.Tensor], dict]:
    """The tensors and the metadata describing `engine` (its `state()` plus the file's own facts); `compact`:
    fp32 KV stored as bf16 (STORE_DTYPE)."""
    tensors, facts = engine.state()
    keys = tensors.get("layers.0.keys")
    dtype = keys.dtype if keys is not None else next(engine.model.parameters()).dtype
    store = (STORE_DTYPE if compact else {}).get(dtype, dtype)
    for name in [n for n in tensors if n.startswith("layers.")]:
        tensors[name] = tensors[name].to(store).contiguous()

    bad = RESERVED & set(meta)
    if bad:
        raise ValueError(f"save_pot: meta may not set {sorted(bad)}")
    meta = dict(meta)
    cat = meta.pop("catalyst", None) or {}
    kind = cat.get("kind") or "general"
    text = cat.get("text")
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
        "kv_dtype": _dtype_name(store),
        "head_dim": int(keys.shape[-1]) if keys is not None else _head_dim(engine.model),
        "catalyst": {"kind": kind, "text": text, "tokens": len(engine.catalyst)},
        **facts,
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


def is_pot_file(path: str | os.PathLike) -> bool:
    """Whether `path` holds an infinipot pot: a safetensors header with infinipot metadata (data not checked,
    so a damaged or truncated pot still counts as one: replacing it loses nothing a user could load)."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else 0
            if n < 2 or n > _MAX_HEADER:
                return False
            header = json.loads(f.read(n).decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return False
    md = header.get("__metadata__") if isinstance(header, dict) else None
    return isinstance(md, dict) and META_KEY in md


def _same_file(a: Path, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def check_save_target(path: str | os.PathLike, sources: tuple | list = (), force: bool = False) -> Path:
    """Where a pot for `path` will be written, checked before any work is done; raises UsageError if it cannot be.

    A symlink is written through: the pot replaces the link's target and the link is kept. The target must be
    a regular file or not exist yet (never a folder, a device such as /dev/null or /dev/full, a pipe or a
    socket), in an existing folder we may write to. A user's file is never destroyed: the target may not be
    one of the `sources` being read (not even with `force`), and an existing file that is not a pot is
    replaced only with `force` (--force).
    """
    given = Path(path)
    if str(path) == "" or str(path) == "-":
        raise UsageError("--save-pot needs a file name (a pot cannot be written to stdout)")
    if _stream_path(given):
        raise UsageError(f"cannot write the pot to {given}: it is a device or a process's stream, never a pot "
                         "file; give a regular file name")
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    folder = target.parent if str(target.parent) else Path(".")
    try:
        st = target.stat()
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise UsageError(f"cannot write the pot to {given}: {e.strerror or e}") from None
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"cannot write the pot to {given}: it is a folder")
        if not stat.S_ISREG(st.st_mode):
            kind = ("a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                    else "a pipe" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                    else "not a regular file")
            raise UsageError(f"cannot write the pot to {given}: it is {kind}; give a regular file name")
        for src in sources:
            if src != "-" and _same_file(target, src):
                raise UsageError(f"--save-pot {given} is the document being read ({src}); the pot would replace "
                                 "it: choose another file name, e.g. " + f"{given}.pot")
        if not force and not is_pot_file(target):
            raise UsageError(f"{given} exists and is not an infinipot pot: refusing to replace it with one "
                             "(choose another file name, or add --force to overwrite it)")
    if not folder.is_dir():
        raise UsageError(f"cannot write the pot to {given}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write the pot to {given}: folder {folder} is not writable")
    return target


def _stream_path(path: Path) -> bool:
    """Whether `path`, or a link on the way to what it names, is a process's stream (/dev/stdout, /dev/fd/N,
    /proc/PID/fd/N): it may end at a regular file (stdout redirected to one) that is no place for a pot."""
    here = Path(os.path.abspath(path))
    for _ in range(40):
        s = str(here)
        if s in ("/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty") or s.startswith(("/dev/fd/", "/proc/")):
            return True
        if not here.is_symlink():
            return False
        try:
            here = Path(os.path.abspath(os.path.join(here.parent, os.readlink(here))))
        except OSError:
            return False
    return False


def partial_target(path: str | os.PathLike) -> Path:
    """Where an interrupted read's partial pot goes: `path` itself if nothing is there yet, else beside it
    (PATH.partial, PATH.partial-2, ...): a checkpoint never replaces a finished pot or any other file."""
    given = Path(path)
    target = Path(os.path.realpath(given)) if given.is_symlink() else given
    if not os.path.lexists(target):
        return given
    n = 1
    while True:
        cand = Path(f"{given}.partial" + (f"-{n}" if n > 1 else ""))
        if not os.path.lexists(cand):
            return cand
        n += 1


# ---- the save's scratch folder ------------------------------------------------------------------------------
# A save writes in a locked scratch folder beside the pot (scratch.py); a save killed outright leaves that folder,
# which the next start of a save into the folder removes.
remove_stale_saves = remove_stale  # the name tests/test_save_litter.py knows


def _write_error(path: Path, e: BaseException) -> InfinipotError:
    """One clear line for a failed write (safetensors reports OS errors as 'SafetensorError ... os error N')."""
    text = str(e)
    if (isinstance(e, OSError) and e.errno == errno.ENOSPC) or "os error 28" in text or "No space left" in text:
        return InfinipotError(f"could not write the pot to {path}: no space left on device")
    if isinstance(e, OSError) and e.errno == errno.EDQUOT:
        return InfinipotError(f"could not write the pot to {path}: disk quota exceeded")
    reason = e.strerror if isinstance(e, OSError) and e.strerror else (text.splitlines()[0] if text else type(e).__name__)
    return InfinipotError(f"could not write the pot to {path}: {reason}")


def save_pot(path: str | os.PathLike, engine: Engine, meta: dict | None = None, compact: bool = True,
             sources: tuple | list = (), force: bool = False) -> int:
    """Write `engine`'s pot to `path` atomically; returns the bytes written.

    `meta` adds to the metadata: the CLI passes "sources" (list of {path, format, size, sha256, tokens, units,
    stopped_at}), "model" (display name), "created", and "catalyst" = {"kind": general|question|text, "text": ...}.
    A symlink is written through (check_save_target); a short write (a full disk) is caught by reading the
    written header back before the file replaces `path`. `compact`: store an fp32 KV as bf16 (False: exact).
    The target is checked again here (`sources`, `force`: check_save_target): it may have changed while reading.
    """
    path = check_save_target(path, sources, force)
    folder = path.parent if str(path.parent) else Path(".")
    tensors, info = _collect(engine, meta or {}, compact)
    header = {META_KEY: json.dumps(info, ensure_ascii=False)}
    mode = (path.stat().st_mode & 0o777) if path.exists() else (0o666 & ~_umask())
    remove_stale(folder)
    scratch = None
    try:
        scratch = Scratch(folder, path.name)
        tmp = str(scratch.dir / path.name)
        save_file(tensors, tmp, metadata=header)  # safetensors writes its own temp file beside `tmp`, in scratch
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        read_header(Path(tmp))  # complete? (a full disk can truncate the file without an error)
        os.chmod(tmp, mode)
        size = os.path.getsize(tmp)
        os.replace(tmp, path)
        scratch.remove()
    except BaseException as e:  # KeyboardInterrupt included: never leave a temp file, never touch `path`
        if scratch is not None:
            scratch.remove()
        if isinstance(e, InputError):  # the header read back says the file is short
            raise InfinipotError(f"could not write the pot to {path}: the file came out incomplete "
                                 "(no space left on device?)") from e
        if isinstance(e, Exception) and not isinstance(e, InfinipotError):
            raise _write_error(path, e) from e
        raise
    _fsync_dir(folder)
    return size


# ---- reading ------------------------------------------------------------------------------------------
def read_header(path: Path) -> tuple[dict, int]:
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


def parse_meta(path: Path, header: dict) -> dict:
    """The pot's metadata from its safetensors header (read_header), checked: format version, required keys,
    checksum."""
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
    header, _ = read_header(path)
    return parse_meta(path, header)


def load_tensors(path: Path, meta: dict) -> dict[str, torch.Tensor]:
    """All tensors (CPU), checked against the stored checksum and the metadata's shapes."""
    try:
        tensors = load_file(str(path), device="cpu")
    except Exception as e:  # noqa: BLE001 - safetensors raises its own error types
        raise InputError(f"{path} is corrupt: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from e
    if tensors_digest(tensors) != meta["tensors_sha256"]:
        raise InputError(f"{path} is corrupt: its data does not match its checksum (damaged or modified)")
    _check_structure(path, tensors, meta)
    return tensors


def load_some(path: Path, meta: dict, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
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

    for name in ("src", "tok", "nov", "catalyst", "pending"):  # "acc": only a policy that accumulates attention
        if name not in t:
            bad(f"tensor {name!r} is missing")
    L, H, S, D = meta["layers"], meta["kv_heads"], meta["entries"], meta["head_dim"]
    shape = (L, H, S)
    for name, dt in (("src", torch.long), ("tok", torch.long), ("nov", torch.float32), ("acc", torch.float32)):
        if name not in t:
            continue
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
            Archive.from_tensors(t["archive.ids"], t["archive.segs"], max_segment=1)  # its shape only
        except ValueError as e:
            bad(str(e))
        segs = t["archive.segs"]
        if segs.numel() and int((segs[:, 0] + segs[:, 1]).max()) > meta["tokens_read"]:
            bad("archive positions outside the document")
    if "expected.ids" in t:  # the words the read expected (scoring/expected.py): (W, KEEP) token ids, -1 none
        from .scoring.expected import KEEP, WINDOW

        x = t["expected.ids"]
        if x.dim() != 2 or x.shape[1] != KEEP or x.dtype != torch.int32 or x.shape[0] > -(-meta["tokens_read"] // WINDOW):
            bad(f"tensor 'expected.ids' is {tuple(x.shape)} {_dtype_name(x.dtype)}, expected (windows, {KEEP}) int32")
    if S:
        src = t["src"]
        if int(src.max()) >= meta["tokens_read"] or int(src.min()) < -max(1, meta["n_pinned"]):
            bad("entry positions outside the document")
    if not 0 <= meta["n_pinned"] <= S:
        bad("more pinned entries than entries")


# ---- loading ------------------------------------------------------------------------------------------
def check_made_by(path: str | os.PathLike, meta: dict, fp: str, ours: str) -> None:
    """InputError unless the pot (its metadata `meta`) was made by the model whose fingerprint is `fp`."""
    if meta["fingerprint"] != fp:
        made_by = meta.get("model") or "another model"
        raise InputError(f"{path} was made by another model: {made_by} (fingerprint {meta['fingerprint']}), not by "
                         f"{ours} ({fp}); load it with -m {made_by}")


def check_pot(path: str | os.PathLike) -> tuple[dict, dict[str, torch.Tensor]]:
    """(metadata, tensors) of a pot file whose data matches its checksum and structure — no model needed, so
    a damaged pot is reported before the model loads. Pass the result to load_pot(checked=...)."""
    path = Path(path)
    meta = read_meta(path)
    return meta, load_tensors(path, meta)


def load_pot(path: str | os.PathLike, model, tokenizer, expect_model_name: str | None = None,
             on_event=None, checked: tuple[dict, dict] | None = None) -> tuple[Engine, dict]:
    """Validate `path` and rebuild the Engine it was saved from, ready to answer or to read on.

    `expect_model_name`: the name of the loaded model, for the error message when the pot was made by another.
    `checked`: what check_pot(path) returned (the file is not read again).
    """
    path = Path(path)
    meta, tensors = checked if checked is not None else (read_meta(path), None)
    made_by = meta.get("model") or "another model"
    ours = expect_model_name or "the loaded model"
    check_made_by(path, meta, fingerprint(model, tokenizer), ours)
    probe = meta.get("weights_probe")
    if probe and not _probe_matches(probe, weights_probe(model)):
        raise InputError(f"{path} was made by another model: {made_by} (same architecture and tokenizer, different "
                         f"weights than {ours}); load it with -m {made_by}")
    if tensors is None:
        tensors = load_tensors(path, meta)

    cfg_m = text_config(model)
    L = cfg_m.num_hidden_layers
    H = getattr(cfg_m, "num_key_value_heads", None) or cfg_m.num_attention_heads
    if (meta["layers"], meta["kv_heads"], meta["head_dim"]) != (L, H, _head_dim(model)):
        raise InputError(f"{path} does not fit {ours}: {meta['layers']} layers x {meta['kv_heads']} KV heads x "
                         f"{meta['head_dim']} dims, the model has {L} x {H} x {_head_dim(model)}")
    ph = tensors.get("prev_hidden")
    if ph is not None and ph.shape[0] != cfg_m.hidden_size:
        raise InputError(f"{path} does not fit {ours}: hidden size {ph.shape[0]}, the model has {cfg_m.hidden_size}")

    cat = meta.get("catalyst") if isinstance(meta.get("catalyst"), dict) else {}
    focus = None
    if cat.get("kind") in ("question", "text"):  # which catalyst rows are the question (scoring/capture.py)
        from .prompts import Prompts

        ids, f = Prompts(tokenizer).catalyst(cat["kind"], cat.get("text"))
        focus = f if ids == tensors["catalyst"].tolist() else None
    if not isinstance(meta["config"], dict):
        raise InputError(f"{path} is corrupt: its pot settings are not a table")
    try:
        engine = Engine.from_state(model, tokenizer, tensors, meta, catalyst_focus=focus)
    except (UsageError, ValueError, TypeError) as e:
        raise InputError(f"{path} is corrupt: its pot settings are invalid ({e})") from e
    engine.listen(on_event)
    return engine, meta


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
