"""4-bit weights for writing answers on the CPU: a GGUF's quantized matrices kept quantized, not in bf16.

Generating a token reads every weight once, so on the CPU its speed is set by memory traffic: the built-in
model's matrices cost ~300 MB a token in bf16, while the GGUF it comes from stores them as Q4_1 (4 bits + a scale
and minimum per 32 weights) and its embedding / tied LM head as Q8_0 (8 bits + a scale per 32). Those
dequantized values are exact grids per group of 32, recovered losslessly from the converted weights
(``find_grid``, ``find_grid8``) and kept beside the dense weights; a linear layer then multiplies one or a few
rows (decoding) with PyTorch's int4 weight kernel (a Q8 grid as the sum of two 4-bit products) and everything
larger (reading a chunk) with the dense bf16 weights as before. Matrices that are no such grid (models not
quantized this way) are left alone.

The grids are found once per converted model and cached beside it (``q4.safetensors``).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

GROUP = 32          # Q4_1 block size, along the input dimension
MAX_ROWS = 8        # input rows up to which the int4 kernel is used (it is slower than dense GEMM for chunks)
SIDECAR = "q4.safetensors"
VERSION = "2"       # of the sidecar's contents; another version is rebuilt
_TOL = 0.01         # a weight off its group's grid by more than 1 % of a step is not a Q4 grid


def kernel_available() -> bool:
    """PyTorch's CPU int4 weight-only matmul (used by torchao) is present in this build."""
    return hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu") and hasattr(
        torch.ops.aten, "_convert_weight_to_int4pack_for_cpu")


def find_grid(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None:
    """(q, scale, minimum) with w == q * scale + minimum per group of 32 along the input dim, or None.

    w: (N, K) float32. q: (N, K) uint8 in 0..15; scale, minimum: (N, K/32) float32. Q4_1 quantization maps
    each block's minimum to 0 and its maximum to 15, so both extremes lie on the grid and fix it."""
    if w.dim() != 2 or w.shape[1] % GROUP or w.dtype != torch.float32:
        return None
    n, k = w.shape
    g = w.view(n, k // GROUP, GROUP)
    lo, hi = g.amin(-1), g.amax(-1)  # (N, K/32)
    step = (hi - lo) / 15
    safe = torch.where(step > 0, step, torch.ones_like(step))
    q = ((g - lo[..., None]) / safe[..., None]).round_().clamp_(0, 15)  # (N, K/32, 32)
    err = (q * step[..., None] + lo[..., None] - g).abs().amax(-1)      # (N, K/32)
    if bool((err > _TOL * safe + 1e-7 * lo.abs()).any()):
        return None
    return q.to(torch.uint8).view(n, k), step, lo


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
        x2 = x.reshape(rows, -1)
        y = None
        for packed, sz in self.q4_parts:
            part = torch.ops.aten._weight_int4pack_mm_for_cpu(x2, packed, GROUP, sz)
            y = part if y is None else y + part
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
