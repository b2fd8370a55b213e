"""Synthetic models for `bench speed --synthetic NAME`: a real architecture's configuration with random weights
and the built-in tokenizer, so speed and memory at 7-9B scale can be measured offline (weights do not change
the FLOPs, the KV shapes or the kernels, only the answers, which a speed run ignores).

The weights are allocated directly on the target device in the target dtype (never in host RAM first): an
8B model in bf16 needs ~16 GB on the GPU. The built-in tokenizer's ids (49,152) are below every vocab here.
"""

from __future__ import annotations

import time

import torch

from ..errors import UsageError

# model_type -> configuration fields; the names are what `--synthetic` accepts.
SYNTHETIC: dict[str, tuple[str, dict]] = {
    # Llama-3.1-8B(-Instruct)
    "llama-8b": ("llama", dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
        intermediate_size=14336, vocab_size=128256, max_position_embeddings=131072, rms_norm_eps=1e-5,
        tie_word_embeddings=False,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})),
    # Qwen2.5-7B-Instruct
    "qwen2-7b": ("qwen2", dict(
        hidden_size=3584, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4, head_dim=128,
        intermediate_size=18944, vocab_size=152064, max_position_embeddings=32768, rms_norm_eps=1e-6,
        tie_word_embeddings=False, use_sliding_window=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
    # Gemma-2-9B(-it): alternating sliding-window (4096) and global layers, logit soft-capping 50 / 30
    "gemma2-9b": ("gemma2", dict(
        hidden_size=3584, num_hidden_layers=42, num_attention_heads=16, num_key_value_heads=8, head_dim=256,
        intermediate_size=14336, vocab_size=256000, max_position_embeddings=8192, sliding_window=4096,
        query_pre_attn_scalar=256, attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # the built-in model's shape (SmolLM2-135M-Instruct): its speed on a device its weights were not carried to
    "smollm2-135m": ("llama", dict(
        hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3, head_dim=64,
        intermediate_size=1536, vocab_size=49152, max_position_embeddings=8192, rms_norm_eps=1e-5,
        tie_word_embeddings=True, rope_parameters={"rope_type": "default", "rope_theta": 100000.0})),
    # a few-MB Llama for tests and smoke runs on the CPU
    "tiny-llama": ("llama", dict(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        intermediate_size=128, vocab_size=49152, max_position_embeddings=8192, tie_word_embeddings=True,
        rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 1024})),
}


def check_name(name: str) -> str:
    if name not in SYNTHETIC:
        raise UsageError(f"--synthetic: unknown configuration {name!r}; choose from {', '.join(SYNTHETIC)}")
    return name


def build_config(name: str):
    """The transformers configuration of synthetic model `name`."""
    from transformers import AutoConfig

    model_type, fields = SYNTHETIC[check_name(name)]
    return AutoConfig.for_model(model_type, **fields)


def param_count(name: str) -> int:
    """Parameters of `name` without building it (meta device)."""
    from transformers import AutoModelForCausalLM

    with torch.device("meta"):
        m = AutoModelForCausalLM.from_config(build_config(name))
    return sum(p.numel() for p in m.parameters())


def _available(dev: torch.device) -> int | None:
    from ..runtime.devices import free_bytes
    from .speed import available_bytes

    return free_bytes(dev) if dev.type == "cuda" else available_bytes() if dev.type == "cpu" else None


def load_synthetic(name: str, device: str | None = None, dtype: str | None = None, seed: int = 0, progress=None):
    """A LoadedModel (loading.py) for `name`: random weights created on the device in the dtype, the built-in
    tokenizer, the infinipot attention wrapper selected as for a real model."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ..runtime.loading import LoadedModel, builtin_model_path, pick_attention, pick_device, pick_dtype
    from ..runtime.attention import register_attention

    t0 = time.perf_counter()
    cfg = build_config(name)
    dev = pick_device(device)
    dt = pick_dtype(dtype, dev)
    base_attn = pick_attention(dev)
    attn_name = register_attention(base_attn)
    tok = AutoTokenizer.from_pretrained(str(builtin_model_path(progress)))
    if len(tok) > cfg.vocab_size:
        raise UsageError(f"--synthetic {name}: the built-in tokenizer's {len(tok)} ids exceed its vocab ({cfg.vocab_size})")
    need = param_count(name) * torch.empty(0, dtype=dt).element_size()
    avail = _available(dev)
    if avail is not None and need > 0.9 * avail:
        raise UsageError(f"--synthetic {name}: its weights need ~{need / 2**30:.1f} GiB in "
                         f"{str(dt).removeprefix('torch.')} on {dev}, {avail / 2**30:.1f} GiB available")
    if progress:
        progress(f"building synthetic {name} ({cfg.model_type}, random weights) on {dev} in "
                 f"{str(dt).removeprefix('torch.')}…")
    torch.manual_seed(seed)
    prev = torch.get_default_dtype()
    try:
        torch.set_default_dtype(dt)  # parameters are created in the target dtype, on the target device
        with torch.device(dev):
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn_name)
    finally:
        torch.set_default_dtype(prev)
    model.eval()
    return LoadedModel(model=model, tokenizer=tok, name=f"synthetic:{name}", path="", device=dev, dtype=dt,
                       attn_implementation=base_attn, load_s=time.perf_counter() - t0)
