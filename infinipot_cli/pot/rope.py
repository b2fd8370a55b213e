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

from ..runtime.compat import text_config


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
        return self.type_cos_sin(self.layer_type(layer), shift, like)

    @torch.no_grad()
    def type_cos_sin(self, lt, shift: torch.Tensor, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin (N, K, R) in float32 for integer shifts (N, K) of the keys of layers of type `lt`."""
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
    def to_front(self, keys: torch.Tensor, old_pos: torch.Tensor, layers: slice, memo: dict | None = None
                 ) -> torch.Tensor:
        """CR-RoPE for the layers `layers` at once: keys (l, B, H, K, D) at positions old_pos (l|1, H|1, K) ->
        the same keys at positions 0..K-1 (a new tensor). One rotation per layer type among them, the shifts of
        every layer and head as one batch. A zero shift rotates by the identity (cos 1, sin 0: the same values), so
        nothing asks whether any key moves: no host read. `memo`: a dict kept over the calls of one distillation,
        where shifts shared by every layer and head (old_pos (1, 1, K)) keep their rotation per layer type,
        computed once."""
        K = keys.shape[-2]
        shared = old_pos.shape[0] == 1 and old_pos.shape[1] == 1
        memo = memo if memo is not None and shared else {}
        if "shift" not in memo:
            memo["shift"] = (torch.arange(K, device=old_pos.device) - old_pos).to(keys.device)  # (l|1, H|1, K)
        shift = memo["shift"]
        types = [self.layer_type(i) for i in range(self.num_layers)[layers]]
        out = None
        for lt in dict.fromkeys(types):
            at = [i for i, t in enumerate(types) if t == lt]
            whole = len(at) == len(types)
            part = keys if whole else keys[at]
            sh = shift if whole or shift.shape[0] == 1 else shift[at]
            rotation = memo.get(("rotation", lt))
            if rotation is None:
                cos, sin = self.type_cos_sin(lt, sh.reshape(-1, K), keys)  # (l'*H' | 1, K, R)
                rotation = tuple(t.view(sh.shape[0], 1, sh.shape[1], K, -1) for t in (cos, sin))  # (l'|1, 1, H|1, K, R)
                memo[("rotation", lt)] = rotation
            rotated = self.apply(part, rotation)
            if whole:
                return rotated
            out = keys.clone() if out is None else out
            out[at] = rotated
        return out

    @torch.no_grad()
    def shift(self, layer: int, old_pos: torch.Tensor, new_pos: torch.Tensor, like: torch.Tensor):
        """The rotation (cos, sin) (H, K, R) moving keys from old_pos to new_pos (H, K); None when none moves."""
        shift = (new_pos - old_pos).to(like.device)
        return self.cos_sin(layer, shift, like) if bool(shift.any()) else None

    @staticmethod
    def apply(keys: torch.Tensor, rotation) -> torch.Tensor:
        """keys (1, H, K, D) rotated by `rotation` from `shift` (in fp32, stored back in the keys' dtype); keys
        (l, B, H, K, D) by cos/sin (l|1, 1, H|1, K, R) from `to_front`."""
        if rotation is None:
            return keys
        if keys.dim() == 5:
            return apply_rotation(keys.float(), *rotation).to(keys.dtype)
        return apply_rotation(keys[0].float(), *rotation).to(keys.dtype)[None]

    def rerotate(self, layer: int, keys: torch.Tensor, old_pos: torch.Tensor, new_pos: torch.Tensor) -> torch.Tensor:
        """keys (1, H, K, D) at positions old_pos (H, K) -> the same keys at positions new_pos (H, K)."""
        return self.apply(keys, self.shift(layer, old_pos, new_pos, keys))
