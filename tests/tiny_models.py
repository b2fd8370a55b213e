"""Tiny random-weight causal LMs, one per RoPE architecture, built from configs (no downloads)."""

from __future__ import annotations

import torch

from infinipot_cli.runtime.attention import register_attention

VOCAB = 256


class LetterTokenizer:
    """Just enough of a tokenizer for an engine's answer: each id decodes to a letter."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(65 + i % 26) for i in ids)


def _common(**kw):
    base = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096, head_dim=16)
    base.update(kw)
    return base


def make_config(arch: str):
    import transformers as tf

    if arch == "llama":
        return tf.LlamaConfig(**_common())
    if arch == "llama3":  # Llama 3.1 frequency-scaled RoPE
        return tf.LlamaConfig(**_common(rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                                                         "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                                         "original_max_position_embeddings": 1024}))
    if arch == "qwen2":
        return tf.Qwen2Config(**_common())
    if arch == "qwen3":
        return tf.Qwen3Config(**_common())
    if arch == "mistral":
        return tf.MistralConfig(**_common(sliding_window=None))
    if arch == "gemma2":
        return tf.Gemma2Config(**_common(sliding_window=64, query_pre_attn_scalar=16, attn_logit_softcapping=50.0,
                                         final_logit_softcapping=30.0))
    if arch == "gemma3":
        return tf.Gemma3TextConfig(**_common(sliding_window=64, query_pre_attn_scalar=16, num_hidden_layers=3,
                                             layer_types=["sliding_attention", "sliding_attention", "full_attention"]))
    if arch == "phi3":
        return tf.Phi3Config(**_common(num_key_value_heads=4, partial_rotary_factor=0.5, pad_token_id=0,
                                        bos_token_id=1, eos_token_id=2))
    raise ValueError(arch)


ARCHS = ["llama", "llama3", "qwen2", "qwen3", "mistral", "gemma2", "gemma3", "phi3"]


def make_model(arch: str, attn: str | None = None, seed: int = 0):
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    cfg = make_config(arch)
    name = attn or register_attention("sdpa")
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=name)
    return model.eval()


def make_model_for(tokenizer, arch: str = "llama", seed: int = 0):
    """A tiny random-weight model over a real tokenizer's vocabulary: the engine's mechanics (provenance,
    evidence, pot files) on real text, without the real model's cost."""
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    cfg = make_config(arch)
    cfg.vocab_size = len(tokenizer)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=register_attention("sdpa"))
    return model.eval()
