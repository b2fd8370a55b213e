"""4-bit weights for writing answers on the CPU: a GGUF's quantized matrices kept quantized, not in bf16.

Generating a token reads every weight once, so on the CPU its speed is set by memory traffic: the built-in
model's matrices cost ~300 MB a token in bf16, while the GGUF it comes from stores them as Q4_1 (4 bits + a scale
and minimum per 32 weights) and its embedding / tied LM head as Q8_0 (8 bits + a scale per 32). Those
dequantized values are exact grids per group of 32, recovered losslessly from the converted weights
(``find_grid``, ``find_grid8``) and kept beside the dense weights; a linear layer then multiplies one or a few
rows (decoding) with PyTorch's int4 weight kernel (a 16-level grid — Q4_0, Q4_1, Q4_K — as one 4-bit product; a
32-level one — Q5_0, Q5_1, Q5_K — and a Q8 grid as the sum of two) and everything larger (reading a chunk) with the
dense bf16 weights as before. Matrices that are no such grid (Q6_K's 16-weight scales, models not quantized this
way) are left alone.

The grids are found once per converted model and cached beside it (``q4.safetensors``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from .catalogue import Q4_SIDECAR as SIDECAR  # declared torch-free, for `infinipot models`

GROUP = 32          # Q4_1 block size, along the input dimension
MAX_ROWS = 8        # input rows up to which the int4 kernel is used (it is slower than dense GEMM for chunks)
VERSION = "3"       # of the sidecar's contents; another version is rebuilt
_TOL = 0.01         # a weight off its group's grid by more than 1 % of a step is not a Q4 grid


def kernel_available() -> bool:
    """PyTorch's CPU int4 weight-only matmul (used by torchao) is present in this build."""
    return hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu") and hasattr(
        torch.ops.aten, "_convert_weight_to_int4pack_for_cpu")


def find_grid(w: torch.Tensor, levels: int = 16) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """(q, step, base) with w == q * step + base per group of 32 along the input dim, q in 0..levels-1, or None.

    w: (N, K) float32. q: (N, K) uint8; step, base: (N, K/32) float32, base the group's minimum. The step is the
    first of these that puts every weight of the group on the grid: the range over levels - 1 (Q4_1, Q5_1: the
    extremes are the first and last levels), the smallest gap between the group's values, or that gap halved or
    thirded (Q4_0, Q4_K, Q5_0, Q5_K: the extremes can sit anywhere and levels can be skipped). Rows are searched
    in blocks of ~16M weights, so a large embedding needs a few copies of a block, not of itself."""
    if w.dim() != 2 or w.shape[1] % GROUP or w.dtype != torch.float32:
        return None
    rows = max(1, (1 << 24) // w.shape[1])
    parts = []
    for r in range(0, w.shape[0], rows):
        part = _grid_rows(w[r:r + rows], levels)
        if part is None:
            return None
        parts.append(part)
    return tuple(torch.cat(x) for x in zip(*parts))


def _grid_rows(w: torch.Tensor, levels: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """find_grid over one block of rows."""
    n, k = w.shape
    g = w.reshape(n, k // GROUP, GROUP)
    lo, hi = g.amin(-1), g.amax(-1)  # (N, K/32)
    srt = g.sort(-1).values
    gaps = srt[..., 1:] - srt[..., :-1]
    del srt
    gap = torch.where(gaps > 0, gaps, torch.full_like(gaps, float("inf"))).amin(-1)  # inf: a constant group
    gap = torch.where(torch.isfinite(gap), gap, torch.zeros_like(gap))
    q = step = None
    found = torch.zeros_like(lo, dtype=torch.bool)
    for cand in ((hi - lo) / (levels - 1), gap, gap / 2, gap / 3):
        safe = torch.where(cand > 0, cand, torch.ones_like(cand))
        qc = ((g - lo[..., None]) / safe[..., None]).round_()  # (N, K/32, 32)
        err = (qc * cand[..., None] + lo[..., None] - g).abs().amax(-1)  # (N, K/32)
        ok = (err <= _TOL * safe + 1e-7 * lo.abs()) & (qc.amax(-1) <= levels - 1)
        take = ok & ~found
        q = qc if q is None else torch.where(take[..., None], qc, q)
        step = cand if step is None else torch.where(take, cand, step)
        found |= ok
        if bool(found.all()):
            return q.clamp_(0, levels - 1).to(torch.uint8).view(n, k), step, lo
    return None


def find_grid8(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(q, scale) with w == q * scale per group of 32 along the input dim, q in -127..127, or None (Q8_0: each
    block's largest magnitude maps to +-127). w: (N, K) float32; q: (N, K) int8; scale: (N, K/32) float32."""
    if w.dim() != 2 or w.shape[1] % GROUP or w.dtype != torch.float32:
        return None
    n, k = w.shape
    g = w.view(n, k // GROUP, GROUP)
    step = g.abs().amax(-1) / 127  # (N, K/32)
    safe = torch.where(step > 0, step, torch.ones_like(step))
    q = (g / safe[..., None]).round_().clamp_(-127, 127)
    if bool(((q * step[..., None] - g).abs().amax(-1) > _TOL * safe).any()):
        return None
    return q.to(torch.int8).view(n, k), step


def _int4_parts(grid: dict[str, torch.Tensor]) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """The int4 products (nibbles (N, K) 0..15, scale, zero: (N, K/32)) whose sum is the stored grid's matrix,
    in the kernel's convention w = (nibble - 8) * scale + zero. A Q4 grid is one product; a Q8 grid two: with
    u = q + 128 = 16 * hi + lo, q * s = (hi - 8) * 16s + (lo - 8) * s + 8s."""
    if "q" in grid:
        step, lo = grid["scale"], grid["min"]
        return [(_unpack_nibbles(grid["q"]), step, lo + 8 * step)]
    if "q5" in grid:  # 32 levels, u = 16 * hi + lo: (hi + 8 - 8) * 16s + (lo - 8) * s + (base + 8s) = u * s + base
        u, step, base = grid["q5"].to(torch.int32), grid["scale"], grid["min"]
        return [((u >> 4) + 8, 16 * step, torch.zeros_like(step)), (u & 15, step, base + 8 * step)]
    u = grid["q8"].to(torch.int32) + 128  # (N, K) in 1..255
    s = grid["scale8"]
    return [(u >> 4, 16 * s, torch.zeros_like(s)), (u & 15, s, 8 * s)]


def _pack_nibbles(q: torch.Tensor) -> torch.Tensor:
    """(N, K) uint8 0..15 -> (N, K/2) uint8, two per byte (portable storage; the kernel's layout is built at load)."""
    return q[:, 0::2] | (q[:, 1::2] << 4)


def _unpack_nibbles(b: torch.Tensor) -> torch.Tensor:
    q = torch.empty(b.shape[0], b.shape[1] * 2, dtype=torch.uint8)
    q[:, 0::2] = b & 15
    q[:, 1::2] = b >> 4
    return q


def build_sidecar(folder: Path) -> Path:
    """Find the Q4 grids among the folder's weights and write them to ``q4.safetensors`` (atomically).
    A folder without any gets a sidecar without tensors, so the search is not repeated."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    folder = Path(folder)
    out: dict[str, torch.Tensor] = {}
    for f in sorted(folder.glob("*.safetensors")):
        if f.name == SIDECAR:
            continue
        with safe_open(str(f), framework="pt") as st:
            for name in st.keys():
                if not name.endswith(".weight") or "norm" in name:
                    continue
                w = st.get_tensor(name)
                if w.dim() != 2 or w.dtype != torch.float32:
                    continue
                base = name[: -len(".weight")]
                grid = find_grid(w)
                if grid is not None:
                    q, step, lo = grid
                    out[f"{base}.q"] = _pack_nibbles(q).contiguous()
                    out[f"{base}.scale"] = step.contiguous()
                    out[f"{base}.min"] = lo.contiguous()
                    continue
                grid5 = find_grid(w, 32)  # Q5_0 / Q5_1 / Q5_K: two 4-bit products
                if grid5 is not None:
                    q, step, lo = grid5
                    out[f"{base}.q5"], out[f"{base}.scale"], out[f"{base}.min"] = q, step.contiguous(), lo.contiguous()
                    continue
                grid8 = find_grid8(w)  # the Q8_0 embedding, which a tied LM head shares
                if grid8 is not None:
                    out[f"{base}.q8"], out[f"{base}.scale8"] = grid8[0].contiguous(), grid8[1].contiguous()
    fd, tmp = tempfile.mkstemp(prefix=".q4-", suffix=".safetensors", dir=folder)
    os.close(fd)
    try:
        save_file(out, tmp, metadata={"format": "infinipot-q4", "version": VERSION, "group": str(GROUP)})
        os.replace(tmp, folder / SIDECAR)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return folder / SIDECAR


def _version(side: Path) -> str | None:
    from safetensors import safe_open

    try:
        with safe_open(str(side), framework="pt") as st:
            return (st.metadata() or {}).get("version")
    except Exception:  # noqa: BLE001 - a damaged sidecar is rebuilt
        return None


def int4_products(x: torch.Tensor, parts: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
    """x (M, K) times the sum of the 4-bit products `parts` [(pack (N, K/2), scales and zeros (K/32, N, 2))],
    added in order -> (M, N) in x's dtype. Q4Linear and decode_step's joint products share it."""
    y = None
    for packed, sz in parts:
        part = torch.ops.aten._weight_int4pack_mm_for_cpu(x, packed, GROUP, sz)
        y = part if y is None else y + part
    return y


class Q4Linear(torch.nn.Linear):
    """An nn.Linear that also holds its weight as 4-bit products: inputs of at most MAX_ROWS rows go through the
    int4 kernel (one product for a Q4 grid, two for a Q8 grid), larger ones through the dense weight. The
    parameters are the original layer's, so names, dtype and the pot's weights probe stay."""

    def attach(self, parts: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]]) -> None:
        """parts: (nibbles (N, K) 0..15, scale (N, K/32), zero (N, K/32)) as from `_int4_parts`."""
        dt = self.weight.dtype
        self.q4_parts = [
            (torch.ops.aten._convert_weight_to_int4pack_for_cpu(nib.to(torch.int32).contiguous(), 1),  # (N, K/2)
             torch.stack([scale.t(), zero.t()], -1).to(dt).contiguous())                           # (K/32, N, 2)
            for nib, scale, zero in parts]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        if rows > MAX_ROWS or x.dtype != self.weight.dtype:
            return super().forward(x)
        y = int4_products(x.reshape(rows, -1), self.q4_parts)
        if self.bias is not None:
            y = y + self.bias
        return y.view(*x.shape[:-1], self.out_features)


def attach(model: torch.nn.Module, folder: Path) -> int:
    """Give the model's grid linear layers their 4-bit form (bf16 models on the CPU only: the kernel's fp32
    path is slow). Builds the folder's sidecar on first use. Returns the number of layers switched."""
    from safetensors.torch import load_file

    p = next(model.parameters())
    if p.device.type != "cpu" or p.dtype != torch.bfloat16 or not kernel_available():
        return 0
    side = Path(folder) / SIDECAR
    try:
        if not side.is_file() or _version(side) != VERSION:
            build_sidecar(Path(folder))
        stored = load_file(str(side))
    except OSError:  # a read-only cache: decode with the dense weights
        return 0
    grids: dict[str, dict[str, torch.Tensor]] = {}
    for key, t in stored.items():
        base, _, field = key.rpartition(".")
        grids.setdefault(base, {})[field] = t
    names: dict[int, list[str]] = {}  # a tied LM head's weight is the embedding's: found under either name
    for pname, prm in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(prm), []).append(pname.removesuffix(".weight"))
    n = 0
    for name, mod in model.named_modules():
        if type(mod) is not torch.nn.Linear:
            continue
        grid = next((grids[b] for b in names.get(id(mod.weight), []) if b in grids), None)
        if grid is None:
            continue
        parts = _int4_parts(grid)
        if tuple(parts[0][0].shape) != tuple(mod.weight.shape):
            continue
        mod.__class__ = Q4Linear  # same object, same parameters; only forward changes
        mod.attach(parts)
        n += 1
    return n
