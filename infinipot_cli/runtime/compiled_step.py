"""The decode step compiled ahead of time: a library per layer structure running a whole decoder layer, built once
on this machine.

Eagerly, a token of the built-in model runs ~1,200 small PyTorch operations (``decode_step.py``: ~40 a layer), and
on 2 CPU cores their dispatch, not the arithmetic, is a third of the token. :func:`build` exports the step's own
arithmetic for one layer (``DecodeStep.qkv_rope`` and ``mlp``, the norms and linear layers taking their weights as
arguments) with ``torch.export`` and compiles it with AOTInductor into a C++ library (:class:`_Graph`): elementwise
work fused into a few loops, the 4-bit and dense products PyTorch's kernels, and the layer's reductions — the
norms' means of squares, the softmax, the attention's two products — PyTorch's kernels too (or kernels verified
to give their bits), called directly through ``exact_ops.py``: a fused reduction sums in another order and rounds
~1 bf16 value in 10^5 the other way, which made a fused graph's long generations part from the eager step's after
tens of tokens. So every value is the eager step's: the same tokens (docs/results/speed.md).
``emulate_precision_casts`` keeps each bf16 rounding where the eager operations round; inductor's pattern matcher
is off (it would fuse a dense product and the residual add into one ``addmm``, rounding once instead of twice). A
token is one library call per layer.

Llama, Mistral, Qwen2, Qwen3, Phi-3 and Gemma 3 layers are covered; Gemma 2 (soft-capped attention logits, a tanh)
decodes eagerly. The weights are a library's inputs, not copied into it, so it serves every layer of its structure
(shapes, quantization, norms) and every model with such layers; a model whose GGUF quantizes some layers
differently has a library per structure (Gemma 3 270M: two). They are built under the cache directory in force
(``compiled/``), named by a hash of the structure, the code version and the torch version, beside the exact
operations' library, and looked for there and then in the default cache (a new $INFINIPOT_CACHE keeps using
what ``make setup`` built); building needs a C++ compiler and ~15 s a structure, plus the attention kernels' check
(``infinipot models --compile``, which ``make setup`` runs for the built-in model). A model without its libraries,
or where loading fails, decodes eagerly. CPU only: on a GPU the eager step runs (a CUDA build awaits a GPU).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

import torch

VERSION = "9"  # of the layer library's arithmetic and input order: another version is built again
_EXAMPLE_CAPACITY = 256  # the example cache buffer's rows when exporting (the capacity stays a dynamic size)


def folder() -> Path:
    """Where libraries are built: the cache in force's `compiled` folder."""
    from .catalogue import cache_dir

    return cache_dir() / "compiled"


def folders() -> list[Path]:
    """Where built libraries are looked for: the cache in force's, then the default cache's when $INFINIPOT_CACHE
    names another folder (catalogue.cache_dirs: a new cache folder does not lose what `make setup` built)."""
    from .catalogue import cache_dirs

    return [d / "compiled" for d in cache_dirs()]


def supported(step) -> bool:
    """Layers without attention-logit soft-capping (Gemma 2's tanh): Llama, Mistral, Qwen2, Qwen3 (q/k norms),
    Phi-3, Gemma 3 (four norms). Their reductions are the norms' means, the softmax and the attention's two
    products (``exact_ops``). Gemma 2 decodes eagerly."""
    return all(L.softcap is None for L in step.layers)


def _layer(L) -> dict:
    return {"parts": L.parts, "groups": {n: getattr(L, n).groups for n in ("qkv", "o", "gate_up", "down")},
            "tensors": [[list(t.shape), str(t.dtype)] for t in L.tensors], "act": type(L.act).__name__,
            "approx": getattr(L.act, "approximate", None), "eps": L.in_norm.eps, "scaling": L.scaling,
            "gemma": L.in_norm.gemma}


def layer_keys(step) -> list[str]:
    """Per layer, the name of the library that runs it: a hash of everything its code depends on (tensor shapes and
    dtypes, heads, scalars, the layer's parts, the code and torch versions). Layers of one structure share one (a
    GGUF may quantize some layers' matrices differently: Gemma 3 270M's Q4_K_M has two structures)."""
    common = {"version": VERSION, "torch": torch.__version__, "heads": [step.hq, step.hkv, step.d],
              "rope": [list(t.shape) for t in step.rope_tables(step.embed.weight[:1], 0)[:2]]}
    return [hashlib.sha256(json.dumps({**common, "layer": _layer(L)}, sort_keys=True, default=str).encode())
            .hexdigest()[:20] for L in step.layers]


def key(step) -> str:
    """The step's libraries as one name."""
    return hashlib.sha256(" ".join(layer_keys(step)).encode()).hexdigest()[:20]


def library_paths(step, keys: list[str] | None = None, where: Path | None = None) -> dict[str, Path]:
    """The step's layer libraries by name, one per distinct layer structure (`keys`: its layer_keys), in `where`
    (default: folder(), where they are built)."""
    where = where or folder()
    return {k: where / f"decode-step-{k}.so" for k in dict.fromkeys(keys or layer_keys(step))}


def built_in(step) -> Path | None:
    """The folder (of folders()) that holds every library of `step` and the exact operations', or None."""
    from . import exact_ops

    keys = layer_keys(step)
    for where in folders():
        if all(p.is_file() for p in library_paths(step, keys, where).values()) and \
                exact_ops.library_path(where).is_file():
            return where
    return None


class _Graph(torch.nn.Module):
    """One decoder layer over a flat input list (what torch.export traces), `layer`'s settings standing for every
    layer of its structure: x (1, d) in the model's dtype, row (1,), cos, sin_rot, swap
    (:meth:`DecodeStep.layer_ropes`), keys, values (Hkv, capacity, D), mask (capacity,) fp32, then the layer's
    tensors -> x after the layer (the token's key and value written at `row` in place).

    Every norm (and Qwen3's and Gemma 3's per-head q/k norms) is h * rsqrt(mean(h * h) + eps), bit for bit
    torch.rms_norm's sequence on the CPU, with the mean ``exact_ops``' operation; the softmax and the two attention
    products are too; the rest, elementwise, fused, gives the same values (tested)."""

    def __init__(self, step, layer):
        super().__init__()
        self.step, self.layer = step, layer

    def forward(self, *flat):
        s, L = self.step, self.layer
        x, row, cos, sin_rot, swap, k_buf, v_buf, mask, *ws = flat
        w = L.split(ws)
        ops = torch.ops.infinipot
        mean = ops.infinipot_mean_last
        q = s.qkv_rope(L, L.in_norm.apply(x, w["in_norm"], mean), w, [cos, sin_rot, swap], row, k_buf, v_buf, mean)
        logits = torch.add(mask, ops.infinipot_attn_logits(q, k_buf), alpha=L.scaling)  # as attention.one_row
        probs = ops.infinipot_softmax_last(logits)  # (Hkv, G, capacity) fp32
        a = L.o.apply(ops.infinipot_attn_mix(probs.to(v_buf.dtype), v_buf).view(1, s.hq * s.d), w["o"])
        x = x + (a if L.att_out_norm is None else L.att_out_norm.apply(a, w["att_out_norm"], mean))
        return x + s.mlp(L, L.mlp_norm.apply(x, w["mlp_norm"], mean), w, mean)


def _examples(step, L, cap: int) -> list[torch.Tensor]:
    dev = step.embed.weight.device
    dt = step.embed.weight.dtype
    with torch.no_grad():
        x = step.embed(torch.tensor([1], device=dev)).clone()
        rope = [t.clone() for t in step.rope_tables(x, 10)]
    kv = lambda: torch.zeros(step.hkv, cap, step.d, dtype=dt)  # noqa: E731
    return [x, torch.tensor([10]), *step.layer_ropes(L, rope), kv(), kv(), torch.zeros(cap), *L.tensors]


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
        raise RuntimeError("this architecture's layers soft-cap their attention logits (Gemma 2): not compiled")
    keys = layer_keys(step)
    out = library_paths(step, keys)
    exact_ops.build(folder())
    shape = (step.hkv, step.hq // step.hkv, step.d)
    if exact_ops.load(folder()) and exact_ops.verified_rows(folder(), *shape) is None:
        exact_ops.verify_attention(folder(), *shape)
    size = torch.export.Dim("capacity", min=2, max=1 << 24)
    settings = {"emulate_precision_casts": True, "pattern_matcher": False,  # no mm + add fused into one addmm
                "aot_inductor.custom_ops_to_c_shims": exact_ops.C_SHIMS}
    first = dict(zip(keys, step.layers))  # a layer of each structure
    with warnings.catch_warnings():  # export's and inductor's deprecation notices are not the user's concern
        warnings.simplefilter("ignore")
        for k, L in first.items():
            if out[k].is_file():
                continue
            examples = _examples(step, L, _EXAMPLE_CAPACITY)
            with torch.no_grad():
                ep = torch.export.export(_Graph(step, L), tuple(examples), dynamic_shapes=_dynamic(len(examples), size))
            with tempfile.TemporaryDirectory(dir=out[k].parent) as tmp, inductor_config.patch(settings):
                pkg = torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tmp, "step.pt2"))
                with zipfile.ZipFile(pkg) as z:
                    names = [m for m in z.namelist() if m.endswith(".so")]
                    if len(names) != 1 or names[0][:-3] + ".json" in z.namelist():
                        raise RuntimeError("the compiled layer calls operations outside its library")
                    part = os.path.join(tmp, "step.so")
                    with z.open(names[0]) as src, open(part, "wb") as dst:
                        dst.write(src.read())
                os.replace(part, out[k])
    return out


class Compiled:
    """The loaded layer libraries: ``compiled(step, x, rows, ropes, masks, keys, values)`` -> the final hidden state
    (1, d), one library call per layer, then the final norm."""

    def __init__(self, paths: dict[str, Path], keys: list[str]):
        runners = {k: torch._C._aoti.AOTIModelContainerRunnerCpu(str(p), 1).run for k, p in paths.items()}
        self.runs = [runners[k] for k in keys]  # per layer

    @staticmethod
    def fits(keys: list[torch.Tensor]) -> bool:
        """Every layer's buffer has the same capacity (the libraries' one dynamic size)."""
        return all(k.shape[1] == keys[0].shape[1] for k in keys)

    def __call__(self, step, x, rows, ropes, masks, keys, values) -> torch.Tensor:
        for run, L, row, k, v, mask in zip(self.runs, step.layers, rows, keys, values, masks):
            x = run([x, row, *step.layer_ropes(L, ropes), k, v, mask, *L.tensors])[0]
        return step.norm.apply(x, step.norm.tensors)


def load(step) -> Compiled | None:
    """The step's layer libraries when they are built for its structures and they and the exact operations load;
    None otherwise (the eager step)."""
    if step.embed.weight.device.type != "cpu" or not supported(step):
        return None
    where = built_in(step)  # the cache in force, else the default cache
    if where is None:
        return None
    from . import exact_ops

    keys = layer_keys(step)
    if not exact_ops.load(where):
        return None
    exact_ops.enable_attention(where, step.hkv, step.hq // step.hkv, step.d)
    try:
        return Compiled(library_paths(step, keys, where), keys)
    except Exception:  # noqa: BLE001 - a library this torch cannot load: decode eagerly
        return None
