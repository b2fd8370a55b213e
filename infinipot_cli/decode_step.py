"""One decoding step of a Llama-family model without transformers' module stack.

Writing an answer runs the model on one token at a time. Through transformers each step goes through ~70 small
tensor operations and as many Python module calls per layer (kwargs, hooks, mask building, cache bookkeeping):
on 2 CPU cores that was ~10 ms of a ~28 ms token for the built-in model (docs/design.md, "Writing the answer on
the CPU"). :class:`DecodeStep` runs the same arithmetic with the layers' own weights in ~25 operations per layer:

- q, k and v come from one product (and gate and up from one) where the layers hold 4-bit grids (``q4.py``): their
  int4 packs are concatenated along the output rows once; dense weights stay separate matrices (no copy);
- RoPE uses the model's own rotary module (every ``rope_type``) once per token, not once per layer;
- the new key/value row is written in place into the :class:`~infinipot_cli.decode.AnswerCache` buffers and
  attention is two grouped products over the cache's filled rows (fp32 softmax), as the one-row path in
  ``scoring/cap.py``.

Supported: Llama, Mistral, Qwen2 (q/k/v biases), Qwen3 (q/k norms) with SiLU MLPs. Anything else — and a cache
past a sliding window, where the mask would matter — decodes through the model's forward as before. The result
is the model's forward up to bf16 rounding order (tests/test_decode_step.py compares logits and greedy answers).
"""

from __future__ import annotations

import torch

from .q4 import GROUP, Q4Linear, kernel_available

_PACK_ROWS = 64  # the CPU int4 pack lays out output rows in blocks of 64
_INT4_MM = torch.ops.aten._weight_int4pack_mm_for_cpu if kernel_available() else None
SUPPORTED = ("llama", "mistral", "qwen2", "qwen3")


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """transformers' Llama RMSNorm: fp32 statistics, rounded to the model dtype, then the weight (the same values
    bit for bit as its pow/mean/rsqrt sequence, in fewer operations)."""
    return weight * torch.rms_norm(x.float(), (x.shape[-1],), None, eps).to(x.dtype)


class _Linear:
    """x (1, K) -> (1, N) through one or more stacked nn.Linear layers (outputs concatenated).

    Layers that all hold a single 4-bit product (q4.Q4Linear) share one int4 product over their concatenated packs
    when the pack's 64-row blocks line up (every layer but the last a multiple of 64 rows); otherwise each layer runs
    its own forward (dense weights are never copied)."""

    def __init__(self, mods: list[torch.nn.Module]):
        self.mods = mods
        self.int4 = None
        if all(isinstance(m, Q4Linear) and len(getattr(m, "q4_parts", ())) == 1 for m in mods) and all(
                m.out_features % _PACK_ROWS == 0 for m in mods[:-1]):
            packed = torch.cat([m.q4_parts[0][0] for m in mods], 0)  # (N, K/2): blocks of 64 output rows
            self.int4 = (packed, torch.cat([m.q4_parts[0][1] for m in mods], 1).contiguous())  # sz: (K/32, N, 2)
            start = 0
            for m in mods:  # the layers keep row views of the joint pack: no second copy of the weights
                m.q4_parts = [(packed[start:start + m.out_features], m.q4_parts[0][1])]
                start += m.out_features
            biases = [m.bias for m in mods]
            self.bias = None if all(b is None for b in biases) else torch.cat(
                [b if b is not None else m.weight.new_zeros(m.out_features) for b, m in zip(biases, mods)])

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.int4 is not None and x.dtype == self.mods[0].weight.dtype:
            y = _INT4_MM(x, self.int4[0], GROUP, self.int4[1])
            return y if self.bias is None else y + self.bias
        if len(self.mods) == 1:
            return self.mods[0](x)
        return torch.cat([m(x) for m in self.mods], -1)


class _Layer:
    """One decoder layer's weights and shapes, gathered once."""

    def __init__(self, layer: torch.nn.Module):
        att, mlp = layer.self_attn, layer.mlp
        self.in_norm = (layer.input_layernorm.weight, layer.input_layernorm.variance_epsilon)
        self.post_norm = (layer.post_attention_layernorm.weight, layer.post_attention_layernorm.variance_epsilon)
        self.qkv = _Linear([att.q_proj, att.k_proj, att.v_proj])
        self.o = _Linear([att.o_proj])
        self.gate_up = _Linear([mlp.gate_proj, mlp.up_proj])
        self.down = _Linear([mlp.down_proj])
        qn, kn = getattr(att, "q_norm", None), getattr(att, "k_norm", None)  # Qwen3: RMSNorm over each head
        self.qk_norm = None if qn is None else ((qn.weight, qn.variance_epsilon), (kn.weight, kn.variance_epsilon))
        self.scaling = float(att.scaling)
        self.layer_idx = att.layer_idx


class DecodeStep:
    """``step(token, cache) -> hidden`` for one token over an AnswerCache; see the module docstring."""

    def __init__(self, model: torch.nn.Module):
        cfg = model.config
        base = model.model
        self.embed = base.embed_tokens
        self.rotary = base.rotary_emb
        self.norm = (base.norm.weight, base.norm.variance_epsilon)
        self.layers = [_Layer(layer) for layer in base.layers]
        self.hq = cfg.num_attention_heads
        self.hkv = cfg.num_key_value_heads
        self.d = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
        self.window = getattr(cfg, "sliding_window", None)

    @staticmethod
    def supports(model: torch.nn.Module) -> bool:
        """The model is one of the supported architectures, built the way this step assumes."""
        cfg = getattr(model, "config", None)
        base = getattr(model, "model", None)
        if cfg is None or base is None or getattr(cfg, "model_type", None) not in SUPPORTED:
            return False
        if getattr(cfg, "hidden_act", None) != "silu" or not hasattr(base, "rotary_emb"):
            return False
        layer = base.layers[0]
        need = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
                "mlp.up_proj", "mlp.down_proj", "input_layernorm", "post_attention_layernorm")
        names = dict(layer.named_modules())
        return all(n in names for n in need)

    def usable(self, cache) -> bool:
        """The cache is an AnswerCache whose next row is still inside any sliding window (no mask needed)."""
        from .decode import AnswerCache

        if not isinstance(cache, AnswerCache):
            return False
        return self.window is None or cache.get_seq_length() + 1 <= self.window

    @torch.inference_mode()
    def __call__(self, token: int, cache) -> torch.Tensor:
        """Run `token` through every layer, appending its keys/values to `cache`; returns the final-norm hidden
        state (1, d) in the model's dtype (the LM head's input)."""
        dev = self.embed.weight.device
        hq, hkv, d = self.hq, self.hkv, self.d
        pos = cache.get_seq_length()
        x = self.embed(torch.tensor([token], device=dev))  # (1, d_model)
        cos, sin = self.rotary(x[None], torch.tensor([[pos]], device=dev))  # (1, 1, D) each
        cos, sin = cos[0], sin[0]  # (1, D), broadcast over heads
        half = d // 2
        sin_rot = torch.cat((-sin[:, :half], sin[:, half:]), -1)  # rotate_half(x) * sin == swap_halves(x) * sin_rot
        tail, filled = None, 0  # the mask over the buffer's rows, shared by the layers
        for L in self.layers:
            h = _rms(x, *L.in_norm)
            qkv = L.qkv(h)[0]  # ((Hq + 2 Hkv) * D,)
            qk = qkv[:(hq + hkv) * d].view(hq + hkv, d)  # queries then keys, one row per head
            v = qkv[(hq + hkv) * d:].view(1, hkv, 1, d)
            if L.qk_norm is not None:
                qk = torch.cat([_rms(qk[:hq], *L.qk_norm[0]), _rms(qk[hq:], *L.qk_norm[1])])
            qk = qk * cos + qk.view(-1, 2, half).flip(1).view(-1, d) * sin_rot  # x cos + rotate_half(x) sin
            layer = cache.layers[L.layer_idx]
            layer.update(qk[hq:].view(1, hkv, 1, d), v)
            keys, values = layer.buffers()  # (1, Hkv, capacity, D): contiguous, rows past n + 1 are zeros
            cap, n = keys.shape[2], layer.keys.shape[-2]
            if tail is None or tail.shape[-1] != cap or filled != n:
                tail, filled = torch.zeros(cap, device=dev), n
                tail[n:] = float("-inf")  # (capacity,): the unfilled rows get no attention
            q = qk[:hq].view(hkv, hq // hkv, d)  # query head h*g+j belongs to KV head h (repeat_kv order)
            # q @ K^T over the whole contiguous buffer: no copy of K or V (a prefix view would be copied whole)
            logits = torch.bmm(q, keys[0].transpose(-1, -2))  # (Hkv, G, capacity)
            p = torch.softmax(torch.add(tail, logits, alpha=L.scaling), dim=-1).to(values.dtype)  # fp32 softmax
            att = torch.bmm(p, values[0])  # (Hkv, G, D)
            x = x + L.o(att.view(1, hq * d))
            h = _rms(x, *L.post_norm)
            gu = L.gate_up(h)
            i = gu.shape[-1] // 2
            x = x + L.down(torch.nn.functional.silu(gu[:, :i]) * gu[:, i:])
        return _rms(x, *self.norm)


def for_model(model: torch.nn.Module) -> DecodeStep | None:
    """The model's DecodeStep, built once and kept on the model; None for unsupported architectures."""
    step = getattr(model, "_infinipot_decode_step", None)
    if step is None:
        step = DecodeStep(model) if DecodeStep.supports(model) else False
        model._infinipot_decode_step = step
    return step or None
