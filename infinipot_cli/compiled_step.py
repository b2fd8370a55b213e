"""The decode step compiled ahead of time: three stage libraries per model structure, built once on this machine.

Eagerly, a token of the built-in model runs ~1,200 small PyTorch operations (``decode_step.py``: ~40 a layer), and
on 2 CPU cores their dispatch, not the arithmetic, is a third of the token. :func:`build` exports the step's own
arithmetic (``DecodeStep.qkv_rope`` and ``mlp``, the norms and linear layers taking their weights as arguments)
with ``torch.export`` and compiles it with AOTInductor into C++ libraries, one per stage of a layer (:class:`_Graph`:
``attend``, ``mix``, ``mlp``): elementwise work fused into a few loops, the 4-bit products and the attention's
batched products PyTorch's kernels. Between the stages run, eagerly, the layer's three reductions — the two
RMSNorms' means of squares and the softmax — with PyTorch's kernels: a fused reduction sums in another order and
rounds ~1 bf16 value in 10^5 the other way, which made a single fused graph's long generations part from the
eager step's after tens of tokens. With the reductions outside, every value is the eager step's: the same tokens
(docs/results/speed.md). ``emulate_precision_casts`` keeps each bf16 rounding where the eager operations round.

Layers with one norm before the attention and one before the MLP (Llama, Mistral, Qwen2, Phi-3) are covered;
Gemma's extra norms and Qwen3's q/k norms would need more stages and decode eagerly. The weights are the
libraries' inputs, not copied into them, so they serve every model of the same structure. They are kept under the
cache directory (``compiled/``), named by a hash of the structure, the code version and the torch version;
building needs a C++ compiler and ~30 s (``infinipot models --compile``, which ``make setup`` runs for the
built-in model). A model without libraries, or where loading fails, decodes eagerly. CPU only: on a GPU the eager
step runs (a CUDA build awaits a GPU).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

import torch

VERSION = "5"  # of the stages' arithmetic and input order: another version is built again
_EXAMPLE_CAPACITY = 256  # the example cache buffer's rows when exporting (the capacity stays a dynamic size)
GRAPHS = ("attend", "mix", "mlp")


def folder() -> Path:
    from .models import cache_dir

    return cache_dir() / "compiled"


def supported(step) -> bool:
    """Layers with one RMSNorm before the attention and one before the MLP and no q/k norms or soft-capping (Llama,
    Mistral, Qwen2, Phi-3): their reductions are the two norms' means and the softmax, which run eagerly between
    the graphs. Others (Gemma, Qwen3) decode eagerly."""
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
    """One stage of a layer over a flat input list (what torch.export traces), layer 0's settings standing for
    every layer's:

    - ``attend``: x (1, d) bf16, ms (1, 1) fp32 (the first norm's mean of squares), row (1,), cos, sin_rot, swap,
      keys, values (Hkv, capacity, D), mask (capacity,), the layer's tensors -> the scaled, masked attention logits
      (Hkv, G, capacity) fp32 (the token's key and value written in place);
    - ``mix``: x, probs (Hkv, G, capacity) fp32, values, the layer's tensors -> x + attention output, and its
      fp32 squares (1, d) for the next norm;
    - ``mlp``: x, ms (the second norm's mean of squares), the layer's tensors -> x + MLP output, and its fp32
      squares.

    rms_norm(h) is h * rsqrt(mean(h * h) + eps), bit for bit (torch.rms_norm on the CPU is that sequence): the
    mean, a reduction, runs eagerly; the rest, elementwise, in the graph gives the same values (tested)."""

    def __init__(self, step, which: str):
        super().__init__()
        self.step, self.which = step, which

    def forward(self, *flat):
        s, L = self.step, self.step.layers[0]
        if self.which == "attend":
            x, ms, row, cos, sin_rot, swap, k_buf, v_buf, mask, *ws = flat
            w = L.split(ws)
            q = s.qkv_rope(L, _normed(x, ms, w["in_norm"][0], L.in_norm.eps), w, [cos, sin_rot, swap], row, k_buf,
                           v_buf)
            return torch.add(mask, torch.bmm(q, k_buf.transpose(-1, -2)), alpha=L.scaling)  # as attention.one_row
        if self.which == "mix":
            x, probs, v_buf, *ws = flat
            w = L.split(ws)
            a = L.o.apply(torch.bmm(probs.to(v_buf.dtype), v_buf).view(1, s.hq * s.d), w["o"])
            x = x + a
            h = x.float()
            return x, h * h
        x, ms, *ws = flat
        w = L.split(ws)
        x = x + s.mlp(L, _normed(x, ms, w["mlp_norm"][0], L.mlp_norm.eps), w)
        h = x.float()
        return x, h * h


def _normed(x: torch.Tensor, ms: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """decode_step._Norm.apply (Llama's) given the mean of squares ms of x.float(): the same values."""
    return weight * (x.float() * torch.rsqrt(ms + eps)).to(x.dtype)


def _examples(step, cap: int) -> dict[str, list[torch.Tensor]]:
    dev = step.embed.weight.device
    dt = step.embed.weight.dtype
    L = step.layers[0]
    with torch.no_grad():
        x = step.embed(torch.tensor([1], device=dev)).clone()
        rope = [t.clone() for t in step.rope_tables(x, 10)[:3]]
    kv = lambda: torch.zeros(step.hkv, cap, step.d, dtype=dt)  # noqa: E731
    ms = torch.ones(1, 1)
    probs = torch.zeros(step.hkv, step.hq // step.hkv, cap)
    return {"attend": [x, ms, torch.tensor([10]), *rope, kv(), kv(), torch.zeros(cap), *L.tensors],
            "mix": [x, probs, kv(), *L.tensors],
            "mlp": [x, ms, *L.tensors]}


def _dynamic(which: str, inputs: int, size) -> tuple:
    """Which of a stage's `inputs` have the capacity dimension, and where."""
    dyn: list = [None] * inputs
    if which == "attend":
        dyn[6], dyn[7], dyn[8] = {1: size}, {1: size}, {0: size}
    elif which == "mix":
        dyn[1], dyn[2] = {2: size}, {1: size}
    return (tuple(dyn),)


def build(step) -> dict[str, Path]:
    """Export and compile `step`'s stages into their libraries (each written atomically); returns their paths.
    Raises on any failure (no compiler, an operation export cannot trace, an architecture it does not cover)."""
    import warnings

    import torch._inductor
    import torch._inductor.config as inductor_config

    if step.embed.weight.device.type != "cpu":
        raise RuntimeError("the compiled decode step is built for the CPU only")
    if not supported(step):
        raise RuntimeError("this architecture's layers have more norms than the compiled stages cover")
    out = library_paths(step)
    next(iter(out.values())).parent.mkdir(parents=True, exist_ok=True)
    examples = _examples(step, _EXAMPLE_CAPACITY)
    size = torch.export.Dim("capacity", min=2, max=1 << 24)
    with warnings.catch_warnings():  # export's and inductor's deprecation notices are not the user's concern
        warnings.simplefilter("ignore")
        for which in GRAPHS:
            with torch.no_grad():
                ep = torch.export.export(_Graph(step, which), tuple(examples[which]),
                                         dynamic_shapes=_dynamic(which, len(examples[which]), size))
            with tempfile.TemporaryDirectory(dir=out[which].parent) as tmp, \
                    inductor_config.patch(emulate_precision_casts=True):
                pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tmp, "step.pt2"))
                with zipfile.ZipFile(pkg) as z:
                    names = [m for m in z.namelist() if m.endswith(".so")]
                    if len(names) != 1 or names[0][:-3] + ".json" in z.namelist():
                        raise RuntimeError("the compiled stage calls operations outside its library")
                    part = os.path.join(tmp, "step.so")
                    with z.open(names[0]) as src, open(part, "wb") as dst:
                        dst.write(src.read())
                os.replace(part, out[which])
    return out


class Compiled:
    """Loaded stages: ``compiled(step, x, rows, ropes, masks, keys, values)`` -> the final hidden state (1, d).
    Between them, eagerly: each norm's mean of squares and the softmax — PyTorch's kernels, as in the
    eager step, so every rounding is the eager step's."""

    def __init__(self, step, paths: dict[str, Path]):
        runner = torch._C._aoti.AOTIModelContainerRunnerCpu
        self.attend, self.mix, self.mlp = (runner(str(paths[g]), 1).run for g in GRAPHS)

    @staticmethod
    def fits(keys: list[torch.Tensor]) -> bool:
        """Every layer's buffer has the same capacity (the libraries' one dynamic size)."""
        return all(k.shape[1] == keys[0].shape[1] for k in keys)

    def __call__(self, step, x, rows, ropes, masks, keys, values) -> torch.Tensor:
        h = x.float()
        sq = h * h
        for L, row, k, v, mask in zip(step.layers, rows, keys, values, masks):
            s = self.attend([x, sq.mean(-1, keepdim=True), row, *step.layer_ropes(L, ropes), k, v, mask,
                             *L.tensors])[0]
            x, sq = self.mix([x, torch.softmax(s, dim=-1), v, *L.tensors])
            x, sq = self.mlp([x, sq.mean(-1, keepdim=True), *L.tensors])
        return step.norm.apply(x, step.norm.tensors)


def load(step) -> Compiled | None:
    """The step's stages when they are built for this structure and load; None otherwise (the eager step)."""
    if step.embed.weight.device.type != "cpu" or not supported(step):
        return None
    paths = library_paths(step)
    if not all(p.is_file() for p in paths.values()):
        return None
    try:
        return Compiled(step, paths)
    except Exception:  # noqa: BLE001 - a library this torch cannot load: decode eagerly
        return None
