"""One decoding step of a decoder-only model without transformers' module stack.

Writing an answer runs the model on one token at a time. Through transformers each step goes through ~70 small
tensor operations and as many Python module calls per layer (kwargs, hooks, mask building, cache bookkeeping):
on 2 CPU cores that was ~10 ms of a ~28 ms token for the built-in model (docs/design.md, "Writing the answer on
the CPU"). :class:`DecodeStep` runs the same arithmetic with the layers' own weights in ~30 operations per layer:

- q, k and v come from one product (and gate and up from one) where the layers hold 4-bit grids (``q4.py``): their
  int4 packs are concatenated along the output rows once; dense weights stay separate matrices (no copy);
- RoPE uses the model's own rotary module (every ``rope_type``; per layer type for Gemma 3; partial rotary for
  Phi-3) once per 64 positions (per token for RoPE types that rescale with the longest position), not once per layer;
- the new key/value row is written in place into the :class:`~infinipot_cli.runtime.answer_cache.AnswerCache` buffers and
  attention (``attention.one_row``) is two grouped products over the whole buffer (fp32 softmax), the rows a query
  must not see masked: the unfilled ones and, in sliding-window layers, those before the window.

What each architecture has is a row of :data:`ARCHS` (projection names, q/k norms, norm style, logit soft-capping,
sliding windows, RoPE per layer type; biases are the projections' own, added wherever a layer has one), not probed from module attributes; a model whose type is not
in the table, or whose layers lack what its row names, decodes through the model's forward. The result is the
model's forward up to rounding order (tests/test_decode_step.py compares logits and greedy answers).
:func:`enable` turns the step off (and on again) for one model: the forward's answers, for comparisons.

The layers' arithmetic (:meth:`DecodeStep.layers_forward`, :meth:`~DecodeStep.qkv_rope`, :meth:`~DecodeStep.mlp`)
is a function of tensors only, so ``compiled_step.py`` compiles that same code ahead of time into a library per layer
structure; a model whose libraries are built runs its tokens through them (``DecodeStep.compiled``), otherwise
eagerly — the same tokens either way. On CUDA the eager step is captured once per answer cache and replayed as one
graph per token (``graphed_step.py``, ``DecodeStep.graphed``). ``$INFINIPOT_DECODE`` (``switch.py``) chooses among
them each time an answer starts (:func:`for_model`): ``hf`` no step at all (the forward), ``eager`` the step without
its libraries or graphs, ``compiled`` (the default) the fastest one there is.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import compiled_step, graphed_step, switch
from .answer_cache import AnswerCache
from .attention import one_row
from .compat import text_config
from .q4 import Q4Linear, int4_products

_PACK_ROWS = 64  # the CPU int4 pack lays out output rows in blocks of 64
ROPE_BLOCK = 64  # positions whose RoPE tables are computed together
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
        self.tensors = [1.0 + mod.weight.detach().float() if gemma else mod.weight.detach()]

    def apply(self, x: torch.Tensor, ts: list[torch.Tensor], mean=None) -> torch.Tensor:
        """The norm of x over its last dim with the weights `ts`. `mean(h)`, when given, is the mean over the last
        dim, kept, that the compiled step computes with PyTorch's kernel (compiled_step.py): the same values."""
        if mean is None:
            n = torch.rms_norm(x.float(), (x.shape[-1],), None, self.eps)
        else:
            h = x.float()
            n = h * torch.rsqrt(mean(h * h) + self.eps)
        return (n * ts[0]).to(x.dtype) if self.gemma else ts[0] * n.to(x.dtype)


class _Linear:
    """x (1, K) -> (1, N) through one or more stacked nn.Linear layers (outputs concatenated).

    Layers that all hold the same number of 4-bit products (q4.Q4Linear: one for a 16-level grid, two for 32 or 256
    levels) share those products over their concatenated packs when the pack's 64-row blocks line up (every layer
    but the last a multiple of 64 rows); otherwise each layer is its own group: its own 4-bit products, or its dense
    weight (never copied). ``tensors`` lists every tensor the arithmetic reads, in the order ``apply`` takes them:
    per group its products' (pack, scales) pairs or its weight, then its bias if it has one."""

    def __init__(self, mods: list[torch.nn.Module]):
        self.groups: list[tuple[int, bool]] = []  # per group: (4-bit products, 0 for a dense weight; has a bias)
        self.tensors: list[torch.Tensor] = []
        parts = {len(getattr(m, "q4_parts", ())) for m in mods}
        if all(isinstance(m, Q4Linear) for m in mods) and len(parts) == 1 and all(
                m.out_features % _PACK_ROWS == 0 for m in mods[:-1]):
            joint = []
            for i in range(parts.pop()):
                packed = torch.cat([m.q4_parts[i][0] for m in mods], 0)  # (N, K/2): blocks of 64 output rows
                joint.append((packed, torch.cat([m.q4_parts[i][1] for m in mods], 1).contiguous()))  # (K/32, N, 2)
            start = 0
            for m in mods:  # the layers keep row views of the joint packs: no second copy of the weights
                m.q4_parts = [(packed[start:start + m.out_features], part[1])
                              for (packed, _), part in zip(joint, m.q4_parts)]
                start += m.out_features
            biases = [m.bias for m in mods]
            bias = None if all(b is None for b in biases) else torch.cat(
                [b if b is not None else m.weight.new_zeros(m.out_features) for b, m in zip(biases, mods)])
            self._group(len(joint), [t for pair in joint for t in pair], bias)
            return
        for m in mods:
            if isinstance(m, Q4Linear):
                self._group(len(m.q4_parts), [t for pair in m.q4_parts for t in pair], m.bias)
            else:
                self._group(0, [m.weight], m.bias)

    def _group(self, products: int, ts: list[torch.Tensor], bias: torch.Tensor | None) -> None:
        self.groups.append((products, bias is not None))
        self.tensors += [t.detach() for t in ts] + ([bias.detach()] if bias is not None else [])

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.apply(x, self.tensors)

    def apply(self, x: torch.Tensor, ts: list[torch.Tensor]) -> torch.Tensor:
        outs, i = [], 0
        for products, has_bias in self.groups:
            if products:
                y = int4_products(x, [(ts[i + 2 * j], ts[i + 2 * j + 1]) for j in range(products)])
                i += 2 * products
            else:
                y = torch.nn.functional.linear(x, ts[i])
                i += 1
            if has_bias:
                y = y + ts[i]
                i += 1
            outs.append(y)
        return outs[0] if len(outs) == 1 else torch.cat(outs, -1)


class _Layer:
    """One decoder layer's weights, norms and attention settings, gathered once from its architecture's row.
    ``tensors``: every tensor its arithmetic reads, its parts' lists one after another (``parts`` order)."""

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
        self.q_norm, self.k_norm = (_Norm(att.q_norm, eps, gemma), _Norm(att.k_norm, eps, gemma)) if arch.qk_norm \
            else (None, None)
        self.scaling = float(att.scaling)
        self.softcap = float(cfg.attn_logit_softcapping) if arch.softcap and cfg.attn_logit_softcapping else None
        types = getattr(cfg, "layer_types", None)
        typ = types[i] if types else None
        sliding = arch.window == "all" or (arch.window == "typed" and typ == "sliding_attention")
        self.window = getattr(cfg, "sliding_window", None) if sliding else None  # the keys a query sees
        self.rope_type = typ if arch.rope_per_type else None
        self.layer_idx = i
        names = ["in_norm", "att_out_norm", "mlp_norm", "mlp_out_norm", "qkv", "o", "gate_up", "down", "q_norm",
                 "k_norm"]
        self.parts = [(n, len(getattr(self, n).tensors)) for n in names if getattr(self, n) is not None]
        self.tensors = [t for n, _ in self.parts for t in getattr(self, n).tensors]
        self.named = self.split(self.tensors)  # the eager step's weights by part

    def split(self, ts: list[torch.Tensor]) -> dict[str, list[torch.Tensor]]:
        """This layer's flat tensor list (``tensors`` or the compiled step's inputs) by part."""
        out, i = {}, 0
        for name, k in self.parts:
            out[name] = ts[i:i + k]
            i += k
        return out


def _has(mod: torch.nn.Module, names: list[str]) -> bool:
    return all(hasattr(mod, n) for n in names)


class DecodeStep:
    """``step(token, cache) -> hidden`` for one token over an AnswerCache; see the module docstring.

    Its pieces (:meth:`qkv_rope`, :meth:`mlp`, the norms' and linear layers' ``apply``) are functions of tensors,
    the weights among them, so ``compiled_step.py`` compiles the same code into layer libraries; a model whose
    libraries are built (``compiled``) runs its tokens through them, otherwise :meth:`layers_forward` runs."""

    def __init__(self, model: torch.nn.Module):
        cfg = text_config(model)
        arch = ARCHS[cfg.model_type]
        base = model.model
        self.embed = base.embed_tokens  # Gemma's scales its output itself
        self.rotary = base.rotary_emb
        self.norm = _Norm(base.norm, float(cfg.rms_norm_eps), arch.gemma_norms)
        self.layers = [_Layer(layer, i, cfg, arch) for i, layer in enumerate(base.layers)]
        self.rope_types = sorted({L.rope_type for L in self.layers}, key=str)
        for L in self.layers:
            L.rope_index = self.rope_types.index(L.rope_type)
        self.hq = cfg.num_attention_heads
        self.hkv = cfg.num_key_value_heads
        self.d = int(base.layers[0].self_attn.head_dim)
        self._swap: dict[int, torch.Tensor] = {}  # rotated dims R -> the index order of rotate_half's halves
        kind = str(getattr(self.rotary, "rope_type", "default"))
        # tables per block of positions, unless a RoPE type rescales with the longest position (Gemma 3: a dict)
        self._rope_blocks = "dynamic" not in kind and "longrope" not in kind
        self._rope_key: tuple | None = None
        self._rope_block: list[torch.Tensor] = []
        self.compiled = None  # compiled_step.Compiled, when this model's libraries are built and loaded
        self.compiled_tried = False  # for_model looked for them (only when INFINIPOT_DECODE lets them run)
        self.graphed = graphed_step.GraphedStep() if graphed_step.wanted(self.embed.weight.device) else None
        self.fast = True  # the compiled libraries and CUDA graphs may run (for_model: INFINIPOT_DECODE=compiled)

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

    def layer_ropes(self, L: _Layer, ropes: list[torch.Tensor]) -> list[torch.Tensor]:
        """Layer L's type's three RoPE tables out of :meth:`rope_tables`."""
        return ropes[3 * L.rope_index:3 * L.rope_index + 3]

    def usable(self, cache) -> bool:
        """The cache is an AnswerCache (its buffers are what the step attends over)."""
        return isinstance(cache, AnswerCache)

    def rope_tables(self, x: torch.Tensor, pos: int) -> list[torch.Tensor]:
        """RoPE tables for position `pos`, once per token for each layer type (``rope_types`` order), three
        tensors per type: cos and sin_rot (1, R) (R = the rotated dims: all of a head's, or the first ones with
        partial rotary, Phi-3) and swap (R,), with rotate_half(x) * sin == x[:, swap] * sin_rot.

        The rotary module runs once per block of ROPE_BLOCK positions (its values are elementwise in the position,
        the same bits one position at a time — tested); RoPE types that rescale with the longest position seen
        (dynamic, longrope) run it per position."""
        if not self._rope_blocks:
            return self._rope_at(x, torch.tensor([[pos]], device=x.device))
        start = pos - pos % ROPE_BLOCK
        key = (start, x.device, x.dtype)
        if self._rope_key != key:
            self._rope_block = self._rope_at(x, torch.arange(start, start + ROPE_BLOCK, device=x.device)[None])
            self._rope_key = key
        i = pos - start
        return [t if k % 3 == 2 else t[i:i + 1] for k, t in enumerate(self._rope_block)]

    def _rope_at(self, x: torch.Tensor, at: torch.Tensor) -> list[torch.Tensor]:
        """rope_tables' three tensors per type for the positions `at` (1, T): cos, sin_rot (T, R), swap (R,)."""
        out = []
        for t in self.rope_types:
            cos, sin = self.rotary(x[None], at) if t is None else self.rotary(x[None], at, t)  # (1, T, R) each
            cos, sin = cos[0], sin[0]
            r = cos.shape[-1]
            half = r // 2
            swap = self._swap.get(r)
            if swap is None:
                swap = self._swap[r] = torch.cat([torch.arange(half, r), torch.arange(half)]).to(x.device)
            out += [cos, torch.cat((-sin[:, :half], sin[:, half:]), -1), swap]
        return out

    def masks(self, caps: list[int], filled: list[int], device) -> list[torch.Tensor]:
        """Per layer, the additive fp32 mask (capacity,) over its buffer rows: -inf on the unfilled rows and, in
        sliding-window layers, before the window (the query at position n - 1 sees keys n - W .. n - 1). Layers
        with the same buffer, length and window share one tensor."""
        made, out = {}, []
        for L, cap, n in zip(self.layers, caps, filled):
            key = (cap, n, L.window)
            m = made.get(key)
            if m is None:
                m = made[key] = torch.zeros(cap, device=device)
                m[n:] = float("-inf")
                if L.window is not None:
                    m[:max(0, n - L.window)] = float("-inf")
            out.append(m)
        return out

    def layers_forward(self, x: torch.Tensor, rows: list[torch.Tensor], ropes: list[torch.Tensor],
                       masks: list[torch.Tensor], keys: list[torch.Tensor], values: list[torch.Tensor]) -> torch.Tensor:
        """Every layer for one token, eagerly.

        x (1, d_model) the token's embedding; rows: per layer (1,) int64, the buffer row it is written to; ropes: the
        RoPE tables (:meth:`rope_tables`); masks: per layer (capacity,) (:meth:`masks`); keys/values: per layer the
        (Hkv, capacity, D) buffers, the token's key and value written at its row in place. Returns the final-norm
        hidden state (1, d_model)."""
        hq, d = self.hq, self.d
        for L, row, k_buf, v_buf, mask in zip(self.layers, rows, keys, values, masks):
            w = L.named
            q = self.qkv_rope(L, L.in_norm.apply(x, w["in_norm"]), w, self.layer_ropes(L, ropes), row, k_buf, v_buf)
            a = L.o.apply(one_row(q, k_buf, v_buf, mask, L.scaling, L.softcap).view(1, hq * d), w["o"])  # (1, d)
            x = x + (a if L.att_out_norm is None else L.att_out_norm.apply(a, w["att_out_norm"]))
            x = x + self.mlp(L, L.mlp_norm.apply(x, w["mlp_norm"]), w)
        return self.norm.apply(x, self.norm.tensors)

    def qkv_rope(self, L: _Layer, n: torch.Tensor, w: dict, rope: list[torch.Tensor], row: torch.Tensor,
                 k_buf: torch.Tensor, v_buf: torch.Tensor, mean=None) -> torch.Tensor:
        """From the normed input n (1, d_model): q, k, v, q/k norms (`mean`: as in ``_Norm.apply``), RoPE with the
        layer's tables (cos, sin_rot, swap: :meth:`layer_ropes`); the key and value written at `row` of the buffers
        in place. Returns the query (Hkv, G, D)."""
        hq, hkv, d = self.hq, self.hkv, self.d
        nqk = (hq + hkv) * d
        qkv = L.qkv.apply(n, w["qkv"])[0]  # ((Hq + 2 Hkv) * D,)
        qk = qkv[:nqk].view(hq + hkv, d)  # queries then keys, one row per head
        if L.q_norm is not None:
            qk = torch.cat([L.q_norm.apply(qk[:hq], w["q_norm"], mean), L.k_norm.apply(qk[hq:], w["k_norm"], mean)])
        cos, sin_rot, swap = rope
        r = cos.shape[-1]
        if r == d:
            qk = qk * cos + qk.index_select(1, swap) * sin_rot  # x cos + rotate_half(x) sin
        else:  # partial rotary: the first R dims of each head
            rot = qk[:, :r]
            qk = torch.cat([rot * cos + rot.index_select(1, swap) * sin_rot, qk[:, r:]], -1)
        k_buf.index_copy_(1, row, qk[hq:].view(hkv, 1, d))
        v_buf.index_copy_(1, row, qkv[nqk:].view(hkv, 1, d))
        return qk[:hq].view(hkv, hq // hkv, d)  # query head h*g+j belongs to KV head h (repeat_kv order)

    @staticmethod
    def mlp(L: _Layer, n: torch.Tensor, w: dict, mean=None) -> torch.Tensor:
        """The MLP of the normed input n (1, d_model), its output norm included (Gemma; `mean` as in
        ``_Norm.apply``)."""
        gu = L.gate_up.apply(n, w["gate_up"])
        i = gu.shape[-1] // 2
        m = L.down.apply(L.act(gu[:, :i]) * gu[:, i:], w["down"])
        return m if L.mlp_out_norm is None else L.mlp_out_norm.apply(m, w["mlp_out_norm"], mean)

    @torch.inference_mode()
    def __call__(self, token: int, cache: AnswerCache) -> torch.Tensor:
        """Run `token` through every layer, appending its keys/values to `cache`; returns the final-norm hidden
        state (1, d) in the model's dtype (the LM head's input)."""
        dev = self.embed.weight.device
        pos = cache.get_seq_length()
        rows = [cache.layers[L.layer_idx].next_row() for L in self.layers]  # (keys, values, row) per layer
        keys, values = [k for k, _, _ in rows], [v for _, v, _ in rows]
        at = [n for _, _, n in rows]
        if self.fast and self.graphed is not None:  # CUDA: the same step replayed as one graph (graphed_step.py)
            out = self.graphed.run(self, token, keys, values, at)
            if out is not None:
                return out
        x = self.embed(torch.tensor([token], device=dev))  # (1, d_model)
        ropes = self.rope_tables(x, pos)
        masks = self.masks([k.shape[1] for k in keys], [n + 1 for n in at], dev)
        made: dict[int, torch.Tensor] = {}  # layers at the same row share its index tensor
        rows_t = [made.setdefault(n, torch.tensor([n], device=dev)) for n in at]
        if self.fast and self.compiled is not None and self.compiled.fits(keys):
            return self.compiled(self, x, rows_t, ropes, masks, keys, values)
        return self.layers_forward(x, rows_t, ropes, masks, keys, values)


def for_model(model: torch.nn.Module, mode: str | None = None) -> DecodeStep | None:
    """The model's DecodeStep, built once and kept on the model, set for `mode` (default: $INFINIPOT_DECODE,
    switch.py): None under ``hf``, for unsupported architectures and while :func:`enable` has turned it off; under
    ``eager`` its compiled libraries and CUDA graphs stay unused; under ``compiled`` the libraries are loaded (once)
    when they are built."""
    mode = mode or switch.decode_mode()
    if mode == "hf":
        return None
    step = getattr(model, _ATTR, None)
    if step is None:
        step = DecodeStep(model) if DecodeStep.supports(model) else False
        setattr(model, _ATTR, step)
    if not step:
        return None
    step.fast = mode == "compiled"
    if step.fast and not step.compiled_tried:
        step.compiled_tried = True
        step.compiled = compiled_step.load(step)
    return step


def enable(model: torch.nn.Module, on: bool = True) -> None:
    """Answer through the decode step (on, the default: built again on next use) or through the model's forward
    (off) — the reference the step is compared with."""
    setattr(model, _ATTR, None if on else False)
