"""4-bit weights for writing answers on the CPU: GGUF Q4_1 matrices kept in 4 bits instead of bf16.

Generating a token reads every weight once, so on the CPU its speed is set by memory traffic: the built-in
model's matrices cost ~270 MB a token in bf16, while the GGUF it comes from stores them as Q4_1 (4 bits + a
scale and minimum per 32 weights). Those dequantized values are an exact 16-level grid per group of 32, so the
grid is recovered losslessly from the converted weights (``find_grid``) and kept beside the dense weights; a
linear layer then multiplies one or a few rows (decoding) with PyTorch's int4 weight kernel and everything
larger (reading a chunk) with the dense bf16 weights as before. Matrices that are not such a grid (any model
not quantized to Q4_1, the Q8_0 embedding) are left alone.

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
                if not name.endswith(".weight") or "embed" in name or "norm" in name:
                    continue
                w = st.get_tensor(name)
                grid = find_grid(w.float()) if w.dim() == 2 and w.dtype == torch.float32 else None
                if grid is None:
                    continue
                q, step, lo = grid
                base = name[: -len(".weight")]
                out[f"{base}.q"] = _pack_nibbles(q).contiguous()
                out[f"{base}.scale"] = step.contiguous()
                out[f"{base}.min"] = lo.contiguous()
    fd, tmp = tempfile.mkstemp(prefix=".q4-", suffix=".safetensors", dir=folder)
    os.close(fd)
    try:
        save_file(out, tmp, metadata={"format": "infinipot-q4", "group": str(GROUP)})
        os.replace(tmp, folder / SIDECAR)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return folder / SIDECAR


class Q4Linear(torch.nn.Linear):
    """An nn.Linear that also holds its weight as a 4-bit grid: inputs of at most MAX_ROWS rows go through the
    int4 kernel (w = (q - 8) * scale + zero per group, zero = minimum + 8 * scale), larger ones through the
    dense weight. The parameters are the original layer's, so names, dtype and the pot's weights probe stay."""

    def attach(self, q: torch.Tensor, step: torch.Tensor, lo: torch.Tensor) -> None:
        """q: (N, K) uint8; step, lo: (N, K/32) float32."""
        dt = self.weight.dtype
        self.register_buffer("q4_packed", torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.to(torch.int32), 1),
                             persistent=False)  # (N, K/2) uint8, the kernel's layout
        sz = torch.stack([step.t(), (lo + 8 * step).t()], -1)  # (K/32, N, 2): scale, zero
        self.register_buffer("q4_scales", sz.to(dt).contiguous(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.numel() // x.shape[-1]
        if rows > MAX_ROWS or x.dtype != self.q4_scales.dtype:
            return super().forward(x)
        y = torch.ops.aten._weight_int4pack_mm_for_cpu(x.reshape(rows, -1), self.q4_packed, GROUP, self.q4_scales)
        if self.bias is not None:
            y = y + self.bias
        return y.view(*x.shape[:-1], self.out_features)


def attach(model: torch.nn.Module, folder: Path) -> int:
    """Give the model's Q4-grid linear layers their 4-bit form (bf16 models on the CPU only: the kernel's
    fp32 path is slow). Builds the folder's sidecar on first use. Returns the number of layers switched."""
    from safetensors.torch import load_file

    p = next(model.parameters())
    if p.device.type != "cpu" or p.dtype != torch.bfloat16 or not kernel_available():
        return 0
    side = Path(folder) / SIDECAR
    try:
        if not side.is_file():
            build_sidecar(Path(folder))
        grids = load_file(str(side))
    except OSError:  # a read-only cache: decode with the dense weights
        return 0
    n = 0
    for name, mod in model.named_modules():
        if type(mod) is not torch.nn.Linear or f"{name}.q" not in grids:
            continue
        q = _unpack_nibbles(grids[f"{name}.q"])
        if tuple(q.shape) != tuple(mod.weight.shape):
            continue
        mod.__class__ = Q4Linear  # same object, same parameters; only forward changes
        mod.attach(q, grids[f"{name}.scale"], grids[f"{name}.min"])
        n += 1
    return n
