"""One decoding step of a decoder-only model without transformers' module stack.

Writing an answer runs the model on one token at a time. Through transformers each step goes through ~70 small
tensor operations and as many Python module calls per layer (kwargs, hooks, mask building, cache bookkeeping):
on 2 CPU cores that was ~10 ms of a ~28 ms token for the built-in model (docs/design.md, "Writing the answer on
the CPU"). :class:`DecodeStep` runs the same arithmetic with the layers' own weights in ~25 operations per layer:

- q, k and v come from one product (and gate and up from one) where the layers hold 4-bit grids (``q4.py``): their
  int4 packs are concatenated along the output rows once; dense weights stay separate matrices (no copy);
- RoPE uses the model's own rotary module (every ``rope_type``; per layer type for Gemma 3; partial rotary for
  Phi-3) once per token, not once per layer;
- the new key/value row is written in place into the :class:`~infinipot_cli.decode.AnswerCache` buffers and
  attention is two grouped products over the whole buffer (fp32 softmax), the rows a query must not see masked:
  the unfilled ones and, in sliding-window layers, those before the window.

Supported: Llama, Mistral, Qwen2 (q/k/v biases), Qwen3 (q/k norms), Phi-3 (fused q/k/v and gate/up, partial
rotary), Gemma 2 (logit soft-capping) and Gemma 3 (q/k norms, RoPE per layer type) — both Gemmas with (1 + w)
norms around the attention and the MLP too. Anything else decodes through the model's forward. The result is the
model's forward up to rounding order (tests/test_decode_step.py compares logits and greedy answers).
"""

from __future__ import annotations

import inspect

import torch

from .q4 import Q4Linear, int4_products

_PACK_ROWS = 64  # the CPU int4 pack lays out output rows in blocks of 64
SUPPORTED = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3_text")
GEMMA = ("gemma2", "gemma3_text")  # (1 + w) norms, also around the attention's and the MLP's outputs


class _Norm:
    """One RMSNorm's arithmetic in fewer operations, the same values bit for bit (torch.rms_norm on fp32 is the
    pow/mean/rsqrt sequence): Llama's (fp32 statistics, rounded to the model dtype, then the weight) or Gemma's
    (the fp32 result times 1 + weight, then rounded; 1 + weight computed once)."""

    def __init__(self, mod: torch.nn.Module, gemma: bool):
        eps = getattr(mod, "variance_epsilon", None)
        self.eps = float(mod.eps if eps is None else eps)
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

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.int4 is not None and x.dtype == self.mods[0].weight.dtype:
            y = int4_products(x, self.int4)
            return y if self.bias is None else y + self.bias
        if len(self.mods) == 1:
            return self.mods[0](x)
        return torch.cat([m(x) for m in self.mods], -1)


class _Layer:
    """One decoder layer's weights, norms and attention settings, gathered once."""

    def __init__(self, layer: torch.nn.Module, cfg, gemma: bool, per_type_rope: bool):
        att, mlp = layer.self_attn, layer.mlp
        self.in_norm = _Norm(layer.input_layernorm, gemma)
        if gemma:  # Gemma normalizes the attention's and the MLP's outputs too
            self.att_out_norm = _Norm(layer.post_attention_layernorm, gemma)
            self.mlp_norm = _Norm(layer.pre_feedforward_layernorm, gemma)
            self.mlp_out_norm = _Norm(layer.post_feedforward_layernorm, gemma)
        else:
            self.att_out_norm = self.mlp_out_norm = None
            self.mlp_norm = _Norm(layer.post_attention_layernorm, gemma)
        self.qkv = _Linear([att.qkv_proj] if hasattr(att, "qkv_proj") else [att.q_proj, att.k_proj, att.v_proj])
        self.o = _Linear([att.o_proj])
        self.gate_up = _Linear([mlp.gate_up_proj] if hasattr(mlp, "gate_up_proj") else [mlp.gate_proj, mlp.up_proj])
        self.down = _Linear([mlp.down_proj])
        self.act = mlp.act_fn if hasattr(mlp, "act_fn") else mlp.activation_fn
        qn, kn = getattr(att, "q_norm", None), getattr(att, "k_norm", None)  # Qwen3, Gemma 3: RMSNorm over each head
        self.qk_norm = None if qn is None else (_Norm(qn, gemma), _Norm(kn, gemma))
        self.scaling = float(att.scaling)
        self.softcap = getattr(att, "attn_logit_softcapping", None)  # Gemma 2
        # the keys a query sees, as the model's masks: a per-layer window (Gemma, Qwen2), the config's for every
        # layer (Mistral, Phi-3) or none
        self.window = att.sliding_window if hasattr(att, "sliding_window") else getattr(cfg, "sliding_window", None)
        self.rope_type = getattr(att, "layer_type", None) if per_type_rope else None  # Gemma 3: RoPE per layer type
        self.layer_idx = att.layer_idx


class DecodeStep:
    """``step(token, cache) -> hidden`` for one token over an AnswerCache; see the module docstring."""

    def __init__(self, model: torch.nn.Module):
        cfg = model.config
        base = model.model
        gemma = cfg.model_type in GEMMA
        self.embed = base.embed_tokens  # Gemma's scales its output itself
        self.rotary = base.rotary_emb
        per_type = "layer_type" in inspect.signature(self.rotary.forward).parameters
        self.norm = _Norm(base.norm, gemma)
        self.layers = [_Layer(layer, cfg, gemma, per_type) for layer in base.layers]
        self.rope_types = sorted({L.rope_type for L in self.layers}, key=str)
        att = base.layers[0].self_attn
        self.hq = cfg.num_attention_heads
        self.hkv = cfg.num_key_value_heads
        self.d = int(att.head_dim)

    @staticmethod
    def supports(model: torch.nn.Module) -> bool:
        """The model is one of the supported architectures, built the way this step assumes."""
        cfg = getattr(model, "config", None)
        base = getattr(model, "model", None)
        if cfg is None or base is None or getattr(cfg, "model_type", None) not in SUPPORTED:
            return False
        if not hasattr(base, "rotary_emb") or not hasattr(base, "layers") or not len(base.layers):
            return False
        names = dict(base.layers[0].named_modules())
        need = ["self_attn.o_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm"]
        need += ["self_attn.qkv_proj"] if "self_attn.qkv_proj" in names else [
            "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"]
        need += ["mlp.gate_up_proj"] if "mlp.gate_up_proj" in names else ["mlp.gate_proj", "mlp.up_proj"]
        if cfg.model_type in GEMMA:
            need += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
        mlp = names.get("mlp")
        return all(n in names for n in need) and (hasattr(mlp, "act_fn") or hasattr(mlp, "activation_fn"))

    def usable(self, cache) -> bool:
        """The cache is an AnswerCache (its buffers are what the step attends over)."""
        from .decode import AnswerCache

        return isinstance(cache, AnswerCache)

    def _rope(self, x: torch.Tensor, pos: int) -> dict:
        """RoPE tables for position `pos`, once per token for each layer type: {type: (cos, sin_rot)}, (1, R) each
        (R = the rotated dims: all of a head's, or the first ones with partial rotary, Phi-3)."""
        at = torch.tensor([[pos]], device=x.device)
        out = {}
        for t in self.rope_types:
            cos, sin = self.rotary(x[None], at) if t is None else self.rotary(x[None], at, t)  # (1, 1, R) each
            cos, sin = cos[0], sin[0]
            half = cos.shape[-1] // 2
            out[t] = (cos, torch.cat((-sin[:, :half], sin[:, half:]), -1))  # rotate_half(x) sin == swap(x) sin_rot
        return out

    @torch.inference_mode()
    def __call__(self, token: int, cache) -> torch.Tensor:
        """Run `token` through every layer, appending its keys/values to `cache`; returns the final-norm hidden
        state (1, d) in the model's dtype (the LM head's input)."""
        dev = self.embed.weight.device
        hq, hkv, d = self.hq, self.hkv, self.d
        x = self.embed(torch.tensor([token], device=dev))  # (1, d_model)
        rope = self._rope(x, cache.get_seq_length())
        tails, filled = {}, -1  # the masks over the buffer's rows per window, shared by the layers
        for L in self.layers:
            h = L.in_norm(x)
            qkv = L.qkv(h)[0]  # ((Hq + 2 Hkv) * D,)
            qk = qkv[:(hq + hkv) * d].view(hq + hkv, d)  # queries then keys, one row per head
            v = qkv[(hq + hkv) * d:].view(1, hkv, 1, d)
            if L.qk_norm is not None:
                qk = torch.cat([L.qk_norm[0](qk[:hq]), L.qk_norm[1](qk[hq:])])
            cos, sin_rot = rope[L.rope_type]
            r = cos.shape[-1]
            rot = qk if r == d else qk[:, :r]
            rot = rot * cos + rot.reshape(-1, 2, r // 2).flip(1).view(-1, r) * sin_rot  # x cos + rotate_half(x) sin
            qk = rot if r == d else torch.cat([rot, qk[:, r:]], -1)
            layer = cache.layers[L.layer_idx]
            layer.update(qk[hq:].view(1, hkv, 1, d), v)
            keys, values = layer.buffers()  # (1, Hkv, capacity, D): contiguous, rows past n + 1 are zeros
            cap, n = keys.shape[2], layer.keys.shape[-2]
            if filled != n or tails[None].shape[-1] != cap:
                full = torch.zeros(cap, device=dev)
                full[n:] = float("-inf")  # (capacity,): the unfilled rows get no attention
                tails, filled = {None: full}, n
            tail = tails.get(L.window)
            if tail is None:  # a sliding window: the query (position n - 1) sees keys n - W .. n - 1
                tail = tails[L.window] = tails[None].clone()
                tail[:max(0, n - L.window)] = float("-inf")
            q = qk[:hq].view(hkv, hq // hkv, d)  # query head h*g+j belongs to KV head h (repeat_kv order)
            # q @ K^T over the whole contiguous buffer: no copy of K or V (a prefix view would be copied whole)
            logits = torch.bmm(q, keys[0].transpose(-1, -2))  # (Hkv, G, capacity)
            if L.softcap is None:
                s = torch.add(tail, logits, alpha=L.scaling)  # fp32
            else:
                s = torch.tanh(logits.float() * L.scaling / L.softcap) * L.softcap + tail
            p = torch.softmax(s, dim=-1).to(values.dtype)  # fp32 softmax
            a = L.o(torch.bmm(p, values[0]).view(1, hq * d))  # (Hkv, G, D) -> (1, d_model)
            x = x + (a if L.att_out_norm is None else L.att_out_norm(a))
            gu = L.gate_up(L.mlp_norm(x))
            i = gu.shape[-1] // 2
            m = L.down(L.act(gu[:, :i]) * gu[:, i:])
            x = x + (m if L.mlp_out_norm is None else L.mlp_out_norm(m))
        return self.norm(x)


def for_model(model: torch.nn.Module) -> DecodeStep | None:
    """The model's DecodeStep, built once and kept on the model; None for unsupported architectures."""
    step = getattr(model, "_infinipot_decode_step", None)
    if step is None:
        step = DecodeStep(model) if DecodeStep.supports(model) else False
        model._infinipot_decode_step = step
    return step or None
