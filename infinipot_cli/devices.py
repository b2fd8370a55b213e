"""Accelerator helpers for honest timing and memory figures: CUDA runs asynchronously, so a host timer read
without a synchronisation measures kernel launches, not work. Every helper is a no-op on the CPU."""

from __future__ import annotations

import torch


def _cuda(device) -> bool:
    if device is None:
        return False
    kind = device.type if isinstance(device, torch.device) else torch.device(device).type
    return kind == "cuda" and torch.cuda.is_available()


def sync(device) -> None:
    """Wait for the device's queued work (CUDA), so that a timer read next covers it; nothing on the CPU."""
    if _cuda(device):
        torch.cuda.synchronize(device)


def reset_peak(device) -> None:
    """Start a fresh GPU peak-memory count (CUDA only)."""
    if _cuda(device):
        torch.cuda.reset_peak_memory_stats(device)


def peak_mb(device) -> float | None:
    """Peak GPU memory allocated by tensors since `reset_peak` (MiB); None off CUDA."""
    if not _cuda(device):
        return None
    return round(torch.cuda.max_memory_allocated(device) / 2**20, 1)


def gpu_name(device) -> str | None:
    """The GPU's name (e.g. "NVIDIA H100 80GB HBM3"); None off CUDA."""
    return torch.cuda.get_device_name(device) if _cuda(device) else None


def free_bytes(device) -> int | None:
    """Free memory on the GPU right now (bytes, `torch.cuda.mem_get_info`) plus what torch's allocator holds
    cached and could reuse; None off CUDA."""
    if not _cuda(device):
        return None
    free, _total = torch.cuda.mem_get_info(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return int(free + max(0, cached))
