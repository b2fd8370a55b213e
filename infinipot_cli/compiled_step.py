"""The decode step compiled ahead of time: one library per model structure running a whole decoder layer, built once
on this machine.

Eagerly, a token of the built-in model runs ~1,200 small PyTorch operations (``decode_step.py``: ~40 a layer), and
on 2 CPU cores their dispatch, not the arithmetic, is a third of the token. :func:`build` exports the step's own
arithmetic for one layer (``DecodeStep.qkv_rope`` and ``mlp``, the norms and linear layers taking their weights as
arguments) with ``torch.export`` and compiles it with AOTInductor into a C++ library (:class:`_Graph`): elementwise
work fused into a few loops, the 4-bit products and the attention's batched products PyTorch's kernels, and the
layer's three reductions — the two RMSNorms' means of squares and the softmax — PyTorch's kernels too, called
directly through ``exact_ops.py`` (a fused reduction sums in another order and rounds ~1 bf16 value in 10^5 the
other way, which made a fused graph's long generations part from the eager step's after tens of tokens). So every
value is the eager step's: the same tokens (docs/results/speed.md). ``emulate_precision_casts`` keeps each bf16
rounding where the eager operations round. A token is one library call per layer.

Layers with one norm before the attention and one before the MLP (Llama, Mistral, Qwen2, Phi-3) are covered;
Gemma's extra norms and Qwen3's q/k norms decode eagerly. The weights are the library's inputs, not copied into it,
so it serves every layer and every model of the same structure. It is kept under the cache directory
(``compiled/``), named by a hash of the structure, the code version and the torch version, beside the exact
operations' library; building needs a C++ compiler and ~15 s (``infinipot models --compile``, which ``make setup``
runs for the built-in model). A model without the libraries, or where loading fails, decodes eagerly. CPU only: on
a GPU the eager step runs (a CUDA build awaits a GPU).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

import torch

VERSION = "8"  # of the layer library's arithmetic and input order: another version is built again
_EXAMPLE_CAPACITY = 256  # the example cache buffer's rows when exporting (the capacity stays a dynamic size)
GRAPHS = ("layer",)


def folder() -> Path:
    from .models import cache_dir

    return cache_dir() / "compiled"


def supported(step) -> bool:
    """Layers with one RMSNorm before the attention and one before the MLP and no q/k norms or soft-capping (Llama,
    Mistral, Qwen2, Phi-3): their reductions are the two norms' means and the softmax (``exact_ops``). Others
    (Gemma, Qwen3) decode eagerly."""
    return all(L.q_norm is None and L.att_out_norm is None and L.softcap is None and not L.in_norm.gemma
               for L in step.layers) and len({json.dumps(_layer(L), default=str) for L in step.layers}) == 1


def _layer(L) -> dict:
    return {"parts": L.parts, "groups": {n: getattr(L, n).groups for n in ("qkv", "o", "gate_up", "down")},
            "tensors": [[list(t.shape), str(t.dtype)] for t in L.tensors], "act": type(L.act).__name__,
            "approx": getattr(L.act, "approximate", None), "eps": L.in_norm.eps, "scaling": L.scaling}


def _structure(step) -> dict:
    """Everything the compiled code depends on: tensor shapes and dtypes, heads, scalars, the layers' parts."""
    return {"version": VERSION, "torch": torch.__version__, "heads": [step.hq, step.hkv, step.d],
            "rope": [list(t.shape) for t in step.rope_tables(step.embed.weight[:1], 0)[:2]],
            "layer": _layer(step.layers[0])}


def key(step) -> str:
    return hashlib.sha256(json.dumps(_structure(step), sort_keys=True, default=str).encode()).hexdigest()[:20]


def library_paths(step) -> dict[str, Path]:
    k = key(step)
    return {g: folder() / f"decode-step-{k}-{g}.so" for g in GRAPHS}


class _Graph(torch.nn.Module):
    """One decoder layer over a flat input list (what torch.export traces), layer 0's settings standing for every
    layer's: x (1, d) in the model's dtype, row (1,), cos, sin_rot, swap (:meth:`DecodeStep.layer_ropes`), keys,
    values (Hkv, capacity, D), mask (capacity,) fp32, then the layer's tensors -> x after the layer (the token's key
    and value written at `row` in place).

    rms_norm(h) is h * rsqrt(mean(h * h) + eps), bit for bit (torch.rms_norm on the CPU is that sequence): the
    mean and the softmax are ``exact_ops``' operations (PyTorch's kernels); the rest, elementwise, fused, gives the
    same values (tested)."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def forward(self, *flat):
        s, L = self.step, self.step.layers[0]
        x, row, cos, sin_rot, swap, k_buf, v_buf, mask, *ws = flat
        w = L.split(ws)
        q = s.qkv_rope(L, _normed(x, w["in_norm"][0], L.in_norm.eps), w, [cos, sin_rot, swap], row, k_buf, v_buf)
        ops = torch.ops.infinipot
        logits = torch.add(mask, ops.infinipot_attn_logits(q, k_buf), alpha=L.scaling)  # as attention.one_row
        probs = ops.infinipot_softmax_last(logits)  # (Hkv, G, capacity) fp32
        x = x + L.o.apply(ops.infinipot_attn_mix(probs.to(v_buf.dtype), v_buf).view(1, s.hq * s.d), w["o"])
        return x + s.mlp(L, _normed(x, w["mlp_norm"][0], L.mlp_norm.eps), w)


def _normed(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """decode_step._Norm.apply (Llama's): the same values, the mean of squares by PyTorch's kernel."""
    h = x.float()
    return weight * (h * torch.rsqrt(torch.ops.infinipot.infinipot_mean_last(h * h) + eps)).to(x.dtype)


def _examples(step, cap: int) -> list[torch.Tensor]:
    dev = step.embed.weight.device
    dt = step.embed.weight.dtype
    with torch.no_grad():
        x = step.embed(torch.tensor([1], device=dev)).clone()
        rope = [t.clone() for t in step.rope_tables(x, 10)[:3]]
    kv = lambda: torch.zeros(step.hkv, cap, step.d, dtype=dt)  # noqa: E731
    return [x, torch.tensor([10]), *rope, kv(), kv(), torch.zeros(cap), *step.layers[0].tensors]


def _dynamic(inputs: int, size) -> tuple:
    """The capacity dimension of the keys, values and mask (inputs 5, 6, 7)."""
    dyn: list = [None] * inputs
    dyn[5], dyn[6], dyn[7] = {1: size}, {1: size}, {0: size}
    return (tuple(dyn),)


def build(step) -> dict[str, Path]:
    """Build what is missing — the exact operations' library, its attention kernels' verification at the current
    thread count, `step`'s layer library (each written atomically); returns the layer library's path by name.
    Raises on any failure (no compiler, an operation export cannot trace, an architecture it does not cover)."""
    import warnings

    import torch._inductor
    import torch._inductor.config as inductor_config

    from . import exact_ops

    if step.embed.weight.device.type != "cpu":
        raise RuntimeError("the compiled decode step is built for the CPU only")
    if not supported(step):
        raise RuntimeError("this architecture's layers have more norms than the compiled layer covers")
    out = library_paths(step)
    exact_ops.build(folder())
    shape = (step.hkv, step.hq // step.hkv, step.d)
    if exact_ops.load(folder()) and exact_ops.verified_rows(folder(), *shape) is None:
        exact_ops.verify_attention(folder(), *shape)
    if all(p.is_file() for p in out.values()):
        return out
    examples = _examples(step, _EXAMPLE_CAPACITY)
    size = torch.export.Dim("capacity", min=2, max=1 << 24)
    settings = {"emulate_precision_casts": True, "pattern_matcher": False,  # no mm + add fused into one addmm
                "aot_inductor.custom_ops_to_c_shims": exact_ops.C_SHIMS}
    with warnings.catch_warnings():  # export's and inductor's deprecation notices are not the user's concern
        warnings.simplefilter("ignore")
        for which in GRAPHS:
            with torch.no_grad():
                ep = torch.export.export(_Graph(step), tuple(examples),
                                         dynamic_shapes=_dynamic(len(examples), size))
            with tempfile.TemporaryDirectory(dir=out[which].parent) as tmp, inductor_config.patch(settings):
                pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tmp, "step.pt2"))
                with zipfile.ZipFile(pkg) as z:
                    names = [m for m in z.namelist() if m.endswith(".so")]
                    if len(names) != 1 or names[0][:-3] + ".json" in z.namelist():
                        raise RuntimeError("the compiled layer calls operations outside its library")
                    part = os.path.join(tmp, "step.so")
                    with z.open(names[0]) as src, open(part, "wb") as dst:
                        dst.write(src.read())
                os.replace(part, out[which])
    return out


class Compiled:
    """The loaded layer library: ``compiled(step, x, rows, ropes, masks, keys, values)`` -> the final hidden state
    (1, d), one library call per layer, then the final norm."""

    def __init__(self, step, paths: dict[str, Path]):
        self.layer = torch._C._aoti.AOTIModelContainerRunnerCpu(str(paths["layer"]), 1).run

    @staticmethod
    def fits(keys: list[torch.Tensor]) -> bool:
        """Every layer's buffer has the same capacity (the library's one dynamic size)."""
        return all(k.shape[1] == keys[0].shape[1] for k in keys)

    def __call__(self, step, x, rows, ropes, masks, keys, values) -> torch.Tensor:
        run = self.layer
        for L, row, k, v, mask in zip(step.layers, rows, keys, values, masks):
            x = run([x, row, *step.layer_ropes(L, ropes), k, v, mask, *L.tensors])[0]
        return step.norm.apply(x, step.norm.tensors)


def load(step) -> Compiled | None:
    """The step's layer library when it is built for this structure and it and the exact operations load; None
    otherwise (the eager step)."""
    if step.embed.weight.device.type != "cpu" or not supported(step):
        return None
    paths = library_paths(step)
    if not all(p.is_file() for p in paths.values()):
        return None
    from . import exact_ops

    if not exact_ops.load(folder()):
        return None
    exact_ops.enable_attention(folder(), step.hkv, step.hq // step.hkv, step.d)
    try:
        return Compiled(step, paths)
    except Exception:  # noqa: BLE001 - a library this torch cannot load: decode eagerly
        return None
