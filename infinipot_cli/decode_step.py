"""One decoding step of a decoder-only model without transformers' module stack.

Writing an answer runs the model on one token at a time. Through transformers each step goes through ~70 small
tensor operations and as many Python module calls per layer (kwargs, hooks, mask building, cache bookkeeping):
on 2 CPU cores that was ~10 ms of a ~28 ms token for the built-in model (docs/design.md, "Writing the answer on
the CPU"). :class:`DecodeStep` runs the same arithmetic with the layers' own weights in ~30 operations per layer:

- q, k and v come from one product (and gate and up from one) where the layers hold 4-bit grids (``q4.py``): their
  int4 packs are concatenated along the output rows once; dense weights stay separate matrices (no copy);
- RoPE uses the model's own rotary module (every ``rope_type``; per layer type for Gemma 3; partial rotary for
  Phi-3) once per token, not once per layer;
- the new key/value row is written in place into the :class:`~infinipot_cli.answer_cache.AnswerCache` buffers and
  attention (``attention.one_row``) is two grouped products over the whole buffer (fp32 softmax), the rows a query
  must not see masked: the unfilled ones and, in sliding-window layers, those before the window.

What each architecture has is a row of :data:`ARCHS` (projection names, q/k norms, norm style, logit soft-capping,
sliding windows, RoPE per layer type; biases are the projections' own, added wherever a layer has one), not probed from module attributes; a model whose type is not
in the table, or whose layers lack what its row names, decodes through the model's forward. The result is the
model's forward up to rounding order (tests/test_decode_step.py compares logits and greedy answers).
:func:`enable` turns the step off (and on again) for one model: the forward's answers, for comparisons.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .answer_cache import AnswerCache
from .attention import one_row
from .compat import text_config
from .q4 import Q4Linear, int4_products

_PACK_ROWS = 64  # the CPU int4 pack lays out output rows in blocks of 64
_ATTR = "_infinipot_decode_step"  # where a model keeps its step (False: decoded through the forward)


@dataclass(frozen=True)
class Arch:
    """What one architecture's decoder layers have (names as in transformers' modeling files)."""

    qkv: tuple[str, ...] = ("q_proj", "k_proj", "v_proj")  # self_attn's projections; one name: fused (Phi-3)
    gate_up: tuple[str, ...] = ("gate_proj", "up_proj")     # mlp's; one name: fused, gate rows first
    act: str = "act_fn"            # the mlp's activation attribute
    qk_norm: bool = False          # an RMSNorm over each query and key head, q_norm / k_norm (Qwen3, Gemma 3)
    gemma_norms: bool = False      # (1 + w) RMSNorms, also after the attention and around the MLP (Gemma 2, 3)
    softcap: bool = False          # attention logits soft-capped by config.attn_logit_softcapping (Gemma 2)
    window: str = "none"           # sliding window: "none", "all" layers (config.sliding_window) or "typed"
                                   # (the layers config.layer_types calls sliding_attention)
    rope_per_type: bool = False    # the rotary module takes the layer type (Gemma 3)


ARCHS: dict[str, Arch] = {
    "llama": Arch(),
    "mistral": Arch(window="all"),
    "qwen2": Arch(window="typed"),  # with q/k/v biases
    "qwen3": Arch(qk_norm=True, window="typed"),
    "phi3": Arch(qkv=("qkv_proj",), gate_up=("gate_up_proj",), act="activation_fn", window="all"),
    "gemma2": Arch(gemma_norms=True, softcap=True, window="typed"),
    "gemma3_text": Arch(qk_norm=True, gemma_norms=True, window="typed", rope_per_type=True),
}


class _Norm:
    """One RMSNorm's arithmetic in fewer operations, the same values bit for bit (torch.rms_norm on fp32 is one
    fused kernel computing the pow/mean/rsqrt sequence; on bf16 it would be that sequence, op by op): Llama's (fp32
    statistics, rounded to the model dtype, then the weight) or Gemma's (the fp32 result times 1 + weight, then
    rounded; 1 + weight computed once)."""

    def __init__(self, mod: torch.nn.Module, eps: float, gemma: bool):
        self.eps = eps
        self.gemma = gemma
        self.w = 1.0 + mod.weight.detach().float() if gemma else mod.weight

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n = torch.rms_norm(x.float(), (x.shape[-1],), None, self.eps)
        return (n * self.w).to(x.dtype) if self.gemma else self.w * n.to(x.dtype)


class _Linear:
    """x (1, K) -> (1, N) through one or more stacked nn.Linear layers (outputs concatenated).

    Layers that all hold the same number of 4-bit products (q4.Q4Linear: one for a 16-level grid, two for 32 or 256
    levels) share those products over their concatenated packs when the pack's 64-row blocks line up (every layer
    but the last a multiple of 64 rows); otherwise each layer runs its own forward (dense weights are never
    copied)."""

    def __init__(self, mods: list[torch.nn.Module]):
        self.mods = mods
        self.int4 = None
        parts = {len(getattr(m, "q4_parts", ())) for m in mods}
        if all(isinstance(m, Q4Linear) for m in mods) and len(parts) == 1 and all(
                m.out_features % _PACK_ROWS == 0 for m in mods[:-1]):
            self.int4 = []
            for i in range(parts.pop()):
                packed = torch.cat([m.q4_parts[i][0] for m in mods], 0)  # (N, K/2): blocks of 64 output rows
                self.int4.append((packed, torch.cat([m.q4_parts[i][1] for m in mods], 1).contiguous()))  # (K/32, N, 2)
            start = 0
            for m in mods:  # the layers keep row views of the joint packs: no second copy of the weights
                m.q4_parts = [(packed[start:start + m.out_features], part[1])
                              for (packed, _), part in zip(self.int4, m.q4_parts)]
                start += m.out_features
            biases = [m.bias for m in mods]
            self.bias = None if all(b is None for b in biases) else torch.cat(
                [b if b is not None else m.weight.new_zeros(m.out_features) for b, m in zip(biases, mods)])
        self.dtype = mods[0].weight.dtype
        self.one = mods[0] if len(mods) == 1 else None

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.int4 is not None and x.dtype == self.dtype:
            y = int4_products(x, self.int4)
            return y if self.bias is None else y + self.bias
        if self.one is not None:
            return self.one(x)
        return torch.cat([m(x) for m in self.mods], -1)


class _Layer:
    """One decoder layer's weights, norms and attention settings, gathered once from its architecture's row."""

    def __init__(self, layer: torch.nn.Module, i: int, cfg, arch: Arch):
        att, mlp = layer.self_attn, layer.mlp
        eps, gemma = float(cfg.rms_norm_eps), arch.gemma_norms
        self.in_norm = _Norm(layer.input_layernorm, eps, gemma)
        if gemma:  # Gemma normalizes the attention's and the MLP's outputs too
            self.att_out_norm = _Norm(layer.post_attention_layernorm, eps, gemma)
            self.mlp_norm = _Norm(layer.pre_feedforward_layernorm, eps, gemma)
            self.mlp_out_norm = _Norm(layer.post_feedforward_layernorm, eps, gemma)
        else:
            self.att_out_norm = self.mlp_out_norm = None
            self.mlp_norm = _Norm(layer.post_attention_layernorm, eps, gemma)
        self.qkv = _Linear([getattr(att, n) for n in arch.qkv])
        self.o = _Linear([att.o_proj])
        self.gate_up = _Linear([getattr(mlp, n) for n in arch.gate_up])
        self.down = _Linear([mlp.down_proj])
        self.act = getattr(mlp, arch.act)
        self.qk_norm = (_Norm(att.q_norm, eps, gemma), _Norm(att.k_norm, eps, gemma)) if arch.qk_norm else None
        self.scaling = float(att.scaling)
        self.softcap = float(cfg.attn_logit_softcapping) if arch.softcap and cfg.attn_logit_softcapping else None
        types = getattr(cfg, "layer_types", None)
        typ = types[i] if types else None
        sliding = arch.window == "all" or (arch.window == "typed" and typ == "sliding_attention")
        self.window = getattr(cfg, "sliding_window", None) if sliding else None  # the keys a query sees
        self.rope_type = typ if arch.rope_per_type else None
        self.layer_idx = i


def _has(mod: torch.nn.Module, names: list[str]) -> bool:
    return all(hasattr(mod, n) for n in names)


class DecodeStep:
    """``step(token, cache) -> hidden`` for one token over an AnswerCache; see the module docstring."""

    def __init__(self, model: torch.nn.Module):
        cfg = text_config(model)
        arch = ARCHS[cfg.model_type]
        base = model.model
        self.embed = base.embed_tokens  # Gemma's scales its output itself
        self.rotary = base.rotary_emb
        self.norm = _Norm(base.norm, float(cfg.rms_norm_eps), arch.gemma_norms)
        self.layers = [_Layer(layer, i, cfg, arch) for i, layer in enumerate(base.layers)]
        self.rope_types = sorted({L.rope_type for L in self.layers}, key=str)
        self.hq = cfg.num_attention_heads
        self.hkv = cfg.num_key_value_heads
        self.d = int(base.layers[0].self_attn.head_dim)
        self._swap: dict[int, torch.Tensor] = {}  # rotated dims R -> the index order of rotate_half's halves

    @staticmethod
    def supports(model: torch.nn.Module) -> bool:
        """The model's type has a row in ARCHS and its layers hold what the row names."""
        cfg = getattr(model, "config", None)
        base = getattr(model, "model", None)
        arch = ARCHS.get(getattr(text_config(cfg), "model_type", None)) if cfg is not None else None
        if arch is None or base is None or not _has(base, ["rotary_emb", "embed_tokens", "norm", "layers"]):
            return False
        if not len(base.layers) or getattr(text_config(cfg), "rms_norm_eps", None) is None:
            return False
        norms = ["input_layernorm", "post_attention_layernorm"]
        norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"] if arch.gemma_norms else []
        for layer in base.layers:
            att, mlp = getattr(layer, "self_attn", None), getattr(layer, "mlp", None)
            if att is None or mlp is None or not _has(layer, norms) or not _has(mlp, [*arch.gate_up, "down_proj", arch.act]):
                return False
            if not _has(att, [*arch.qkv, "o_proj", "scaling", "head_dim"] + (["q_norm", "k_norm"] if arch.qk_norm else [])):
                return False
        return True

    def usable(self, cache) -> bool:
        """The cache is an AnswerCache (its buffers are what the step attends over)."""
        return isinstance(cache, AnswerCache)

    def _rope(self, x: torch.Tensor, pos: int) -> dict:
        """RoPE tables for position `pos`, once per token for each layer type: {type: (cos, sin_rot, swap)}, cos and
        sin_rot (1, R) (R = the rotated dims: all of a head's, or the first ones with partial rotary, Phi-3);
        rotate_half(x) * sin == x[:, swap] * sin_rot."""
        at = torch.tensor([[pos]], device=x.device)
        out = {}
        for t in self.rope_types:
            cos, sin = self.rotary(x[None], at) if t is None else self.rotary(x[None], at, t)  # (1, 1, R) each
            cos, sin = cos[0], sin[0]
            r = cos.shape[-1]
            half = r // 2
            swap = self._swap.get(r)
            if swap is None:
                swap = self._swap[r] = torch.cat([torch.arange(half, r), torch.arange(half)]).to(x.device)
            out[t] = (cos, torch.cat((-sin[:, :half], sin[:, half:]), -1), swap)
        return out

    @torch.inference_mode()
    def __call__(self, token: int, cache: AnswerCache) -> torch.Tensor:
        """Run `token` through every layer, appending its keys/values to `cache`; returns the final-norm hidden
        state (1, d) in the model's dtype (the LM head's input)."""
        dev = self.embed.weight.device
        hq, hkv, d = self.hq, self.hkv, self.d
        nqk = (hq + hkv) * d
        x = self.embed(torch.tensor([token], device=dev))  # (1, d_model)
        rope = self._rope(x, cache.get_seq_length())
        tails, filled = {}, -1  # the masks over the buffer's rows per window, shared by the layers
        for L in self.layers:
            qkv = L.qkv(L.in_norm(x))[0]  # ((Hq + 2 Hkv) * D,)
            qk = qkv[:nqk].view(hq + hkv, d)  # queries then keys, one row per head
            if L.qk_norm is not None:
                qk = torch.cat([L.qk_norm[0](qk[:hq]), L.qk_norm[1](qk[hq:])])
            cos, sin_rot, swap = rope[L.rope_type]
            r = cos.shape[-1]
            if r == d:
                qk = qk * cos + qk.index_select(1, swap) * sin_rot  # x cos + rotate_half(x) sin
            else:  # partial rotary: the first R dims of each head
                rot = qk[:, :r]
                qk = torch.cat([rot * cos + rot.index_select(1, swap) * sin_rot, qk[:, r:]], -1)
            # (Hkv, capacity, D) each, contiguous: rows past n are zeros
            keys, values, n = cache.layers[L.layer_idx].append_row(qk[hq:].view(hkv, 1, d),
                                                                   qkv[nqk:].view(hkv, 1, d))
            cap = keys.shape[1]
            if filled != n or tails[None].shape[-1] != cap:
                full = torch.zeros(cap, device=dev)
                full[n:] = float("-inf")  # (capacity,): the unfilled rows get no attention
                tails, filled = {None: full}, n
            tail = tails.get(L.window)
            if tail is None:  # a sliding window: the query (position n - 1) sees keys n - W .. n - 1
                tail = tails[L.window] = tails[None].clone()
                tail[:max(0, n - L.window)] = float("-inf")
            q = qk[:hq].view(hkv, hq // hkv, d)  # query head h*g+j belongs to KV head h (repeat_kv order)
            a = L.o(one_row(q, keys, values, tail, L.scaling, L.softcap).view(1, hq * d))  # (1, d_model)
            x = x + (a if L.att_out_norm is None else L.att_out_norm(a))
            gu = L.gate_up(L.mlp_norm(x))
            i = gu.shape[-1] // 2
            m = L.down(L.act(gu[:, :i]) * gu[:, i:])
            x = x + (m if L.mlp_out_norm is None else L.mlp_out_norm(m))
        return self.norm(x)


def for_model(model: torch.nn.Module) -> DecodeStep | None:
    """The model's DecodeStep, built once and kept on the model; None for unsupported architectures and while
    :func:`enable` has turned it off."""
    step = getattr(model, _ATTR, None)
    if step is None:
        step = DecodeStep(model) if DecodeStep.supports(model) else False
        setattr(model, _ATTR, step)
    return step or None


def enable(model: torch.nn.Module, on: bool = True) -> None:
    """Answer through the decode step (on, the default: built again on next use) or through the model's forward
    (off) — the reference the step is compared with."""
    setattr(model, _ATTR, None if on else False)
