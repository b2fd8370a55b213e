"""Context-Reset RoPE (CR-RoPE) — InfiniPot §3.5.

The pot stores keys after RoPE. After each distillation the kept keys of every (layer, KV head) move to
contiguous positions 0..C-1, so positions never exceed the pot size M and a model with an 8K window can
read a book of any length. Rotations compose: R(new) = R(new - old) . R(old), so a kept key is re-rotated
in place by the (non-positive) shift `new - old`, using the model's own rotary module — which covers the
RoPE variants of Llama 3 (frequency scaling), Qwen2/3, Mistral, Phi-3 (partial rotary, longrope while
positions stay in the original window), Gemma 2 and Gemma 3 (per-layer-type rope bases).
"""

from __future__ import annotations

import inspect

import torch

from .compat import text_config


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotation(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate x (..., D) by cos/sin (..., R), R <= D (partial rotary rotates the first R dims)."""
    r = cos.shape[-1]
    if r == x.shape[-1]:
        return x * cos + _rotate_half(x) * sin
    xr, xp = x[..., :r], x[..., r:]
    return torch.cat([xr * cos + _rotate_half(xr) * sin, xp], dim=-1)


class Rerotator:
    """Computes the RoPE rotation of arbitrary (possibly negative) position shifts for each layer."""

    def __init__(self, model: torch.nn.Module):
        base = model.model if hasattr(model, "model") else model
        if not hasattr(base, "rotary_emb"):
            raise ValueError("model has no rotary embedding module")
        self.rotary = base.rotary_emb
        cfg = text_config(model)
        self.layer_types = getattr(cfg, "layer_types", None)
        self.takes_layer_type = "layer_type" in inspect.signature(self.rotary.forward).parameters
        self.num_layers = cfg.num_hidden_layers

    def layer_type(self, layer: int):
        """Layers of one type share a rotation (Gemma 2/3: sliding and full attention have their own bases)."""
        if self.takes_layer_type and self.layer_types is not None:
            return self.layer_types[layer]
        return None

    def _scaling(self, layer_type) -> float:
        if layer_type is not None:
            return float(getattr(self.rotary, f"{layer_type}_attention_scaling", 1.0))
        return float(getattr(self.rotary, "attention_scaling", 1.0))

    @torch.no_grad()
    def cos_sin(self, layer: int, shift: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin (H, K, R) in float32 for integer shifts (H, K) of layer `layer`'s keys."""
        lt = self.layer_type(layer)
        dummy = like.new_zeros(1, dtype=torch.float32)
        if lt is not None:
            cos, sin = self.rotary(dummy, shift, lt)
        else:
            cos, sin = self.rotary(dummy, shift)
        s = self._scaling(lt)  # cos/sin come pre-multiplied by the attention scaling (YaRN etc.): undo it
        if s != 1.0:
            cos, sin = cos / s, sin / s
        return cos.float(), sin.float()

    @torch.no_grad()
    def shift(self, layer: int, old_pos: torch.Tensor, new_pos: torch.Tensor, like: torch.Tensor):
        """The rotation (cos, sin) (H, K, R) moving keys from old_pos to new_pos (H, K); None when none moves."""
        shift = (new_pos - old_pos).to(like.device)
        return self.cos_sin(layer, shift, like) if bool(shift.any()) else None

    @staticmethod
    def apply(keys: torch.Tensor, rotation) -> torch.Tensor:
        """keys (1, H, K, D) rotated by `rotation` from `shift` (in fp32, stored back in the keys' dtype)."""
        if rotation is None:
            return keys
        return apply_rotation(keys[0].float(), *rotation).to(keys.dtype)[None]

    def rerotate(self, layer: int, keys: torch.Tensor, old_pos: torch.Tensor, new_pos: torch.Tensor) -> torch.Tensor:
        """keys (1, H, K, D) at positions old_pos (H, K) -> the same keys at positions new_pos (H, K)."""
        return self.apply(keys, self.shift(layer, old_pos, new_pos, keys))
