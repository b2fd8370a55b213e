"""The decode step compiled ahead of time: one shared library per model structure, built once on this machine.

Eagerly, a token of the built-in model runs ~1,200 small PyTorch operations (``decode_step.py``: ~40 a layer), and
on 2 CPU cores their dispatch, not the arithmetic, is a third of the token. :func:`build` exports
:meth:`DecodeStep.layers_forward <infinipot_cli.decode_step.DecodeStep.layers_forward>` — the step's arithmetic as
a function of tensors only: the token's embedding, its row, the RoPE tables, the masks, the cache buffers and the
weights — with ``torch.export`` and compiles it with AOTInductor into a C++ library: the norms, RoPE, masks and
activations become a few fused loops, the 4-bit products and the attention's batched products stay PyTorch's
kernels, and the whole token is one call. The weights are the library's inputs, not copied into it, so it
serves every model of the same structure (the same layer shapes and settings), and its file is small.

Rounding follows the eager step (``emulate_precision_casts``: a bf16 intermediate is rounded where the eager
operations round it). The library is kept under the cache directory (``compiled/``), named by a hash of the
structure, the code version and the torch version; building needs a C++ compiler and ~1 minute
(``infinipot models --compile``, which ``make setup`` runs for the built-in model). A model without a library, or
where loading it fails, decodes eagerly. CPU only: on a GPU the eager step runs (a CUDA build awaits a GPU).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

import torch

VERSION = "1"  # of layers_forward's arithmetic and this file's input order: another version is built again
_EXAMPLE_CAPACITY = 256  # the example cache buffer's rows when exporting (the capacity stays a dynamic size)


def folder() -> Path:
    from .models import cache_dir

    return cache_dir() / "compiled"


def _structure(step) -> dict:
    """Everything the compiled code depends on: tensor shapes and dtypes, heads, scalars, each layer's parts."""
    layers = []
    for L in step.layers:
        layers.append({
            "parts": L.parts,
            "groups": {n: getattr(L, n).groups for n in ("qkv", "o", "gate_up", "down")},
            "tensors": [[list(t.shape), str(t.dtype)] for t in L.tensors],
            "act": type(L.act).__name__, "act_approx": getattr(L.act, "approximate", None),
            "eps": L.in_norm.eps, "gemma": L.in_norm.gemma, "scaling": L.scaling, "softcap": L.softcap,
            "rope": L.rope_index, "window": L.window is not None,
        })
    return {"version": VERSION, "torch": torch.__version__, "heads": [step.hq, step.hkv, step.d],
            "ropes": [str(t) for t in step.rope_types], "norm": [list(step.norm.tensors[0].shape), step.norm.eps,
                                                                   step.norm.gemma], "layers": layers}


def key(step) -> str:
    return hashlib.sha256(json.dumps(_structure(step), sort_keys=True, default=str).encode()).hexdigest()[:20]


def library_path(step) -> Path:
    return folder() / f"decode-step-{key(step)}.so"


def _flat(step, x, rows, ropes, masks, keys, values, weights, norm) -> list[torch.Tensor]:
    """The library's inputs in order: x, rows (per layer), ropes, masks (per layer), keys, values (per layer),
    the final norm's tensors, then every layer's tensors."""
    return [x, *rows, *ropes, *masks, *keys, *values, *norm, *(t for ws in weights for t in ws)]


class _Graph(torch.nn.Module):
    """layers_forward over the flat input list (what torch.export traces)."""

    def __init__(self, step):
        super().__init__()
        self.step = step

    def forward(self, *flat):
        s = self.step
        n, r = len(s.layers), 3 * len(s.rope_types)
        x, rows = flat[0], list(flat[1:1 + n])
        i = 1 + n
        ropes = list(flat[i:i + r])
        i += r
        masks, keys, values = list(flat[i:i + n]), list(flat[i + n:i + 2 * n]), list(flat[i + 2 * n:i + 3 * n])
        i += 3 * n
        norm = list(flat[i:i + len(s.norm.tensors)])
        i += len(s.norm.tensors)
        weights = []
        for L in s.layers:
            weights.append(list(flat[i:i + len(L.tensors)]))
            i += len(L.tensors)
        return s.layers_forward(x, rows, ropes, masks, keys, values, weights, norm)


def build(step) -> Path:
    """Export and compile `step`'s arithmetic into its library (written atomically); returns its path.
    Raises on any failure (no compiler, an operation export cannot trace)."""
    import warnings

    import torch._inductor
    import torch._inductor.config as inductor_config

    with warnings.catch_warnings():  # export's and inductor's deprecation notices are not the user's concern
        warnings.simplefilter("ignore")
        return _build(step, torch._inductor, inductor_config)


def _build(step, inductor, inductor_config) -> Path:
    """build's work: example inputs (a 256-row cache), export with the capacity dynamic, compile, keep the .so."""
    dev = step.embed.weight.device
    if dev.type != "cpu":
        raise RuntimeError("the compiled decode step is built for the CPU only")
    cap = _EXAMPLE_CAPACITY
    dt = step.embed.weight.dtype
    with torch.no_grad():
        x = step.embed(torch.tensor([1], device=dev)).clone()
        ropes = [t.clone() for t in step.rope_tables(x, 10)]
    n = len(step.layers)
    hkv, d = step.hkv, step.d
    rows = [torch.tensor([10]) for _ in range(n)]
    masks = [torch.zeros(cap) for _ in range(n)]
    keys = [torch.zeros(hkv, cap, d, dtype=dt) for _ in range(n)]
    values = [torch.zeros(hkv, cap, d, dtype=dt) for _ in range(n)]
    flat = _flat(step, x, rows, ropes, masks, keys, values, [L.tensors for L in step.layers], step.norm.tensors)
    size = torch.export.Dim("capacity", min=2, max=1 << 24)
    dyn = [None] * len(flat)
    first_mask = 1 + n + len(ropes)
    for i in range(first_mask, first_mask + n):
        dyn[i] = {0: size}
    for i in range(first_mask + n, first_mask + 3 * n):
        dyn[i] = {1: size}
    out = library_path(step)
    out.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        ep = torch.export.export(_Graph(step), tuple(flat), dynamic_shapes=(tuple(dyn),))
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp, inductor_config.patch(emulate_precision_casts=True):
        pkg = inductor.aoti_compile_and_package(ep, package_path=os.path.join(tmp, "step.pt2"))
        with zipfile.ZipFile(pkg) as z:
            names = [m for m in z.namelist() if m.endswith(".so")]
            if len(names) != 1:
                raise RuntimeError(f"the compiled package holds {len(names)} libraries, not one")
            part = os.path.join(tmp, "step.so")
            with z.open(names[0]) as src, open(part, "wb") as dst:
                dst.write(src.read())
        os.replace(part, out)
    return out


class Compiled:
    """A loaded library: ``compiled(x, rows, ropes, masks, keys, values)`` -> the final hidden state (1, d)."""

    def __init__(self, step, path: Path):
        self.step = step
        self.runner = torch._C._aoti.AOTIModelContainerRunnerCpu(str(path), 1)
        self.weights = [t for L in step.layers for t in L.tensors]
        self.norm = step.norm.tensors

    @staticmethod
    def fits(keys: list[torch.Tensor]) -> bool:
        """Every layer's buffer has the same capacity (the library's one dynamic size)."""
        return all(k.shape[1] == keys[0].shape[1] for k in keys)

    def __call__(self, x, rows, ropes, masks, keys, values) -> torch.Tensor:
        return self.runner.run([x, *rows, *ropes, *masks, *keys, *values, *self.norm, *self.weights])[0]


def load(step) -> Compiled | None:
    """The step's library when it is built for this structure and loads; None otherwise (the eager step)."""
    if step.embed.weight.device.type != "cpu":
        return None
    path = library_path(step)
    if not path.is_file():
        return None
    try:
        return Compiled(step, path)
    except Exception:  # noqa: BLE001 - a library this torch cannot load: decode eagerly
        return None
