"""The memory pot — InfiniPot §3.1/§3.2: a KV cache with a hard cap of M entries per (layer, KV head).

Its KV lives in a :class:`~infinipot_cli.pot.pot_buffer.PotCache`: one preallocated (L, 1, H_kv, M, D) buffer for keys
(post-RoPE) and one for values, written in place by every forward, each layer seen by the model as a cache of the
filled rows (1, H_kv, S, D). Beside it, for every entry of every (layer, head), where it came from:

    src (L, H_kv, S) int64   document token index (pinned prefix entries: -1 - i)
    tok (L, H_kv, S) int64   token id
    nov (L, H_kv, S) float32 NuC novelty when it was read (aged by the policy)
    acc (L, H_kv, S) float32 accumulated attention (H2O baseline only)

Entry i of every head sits at RoPE position i (CR-RoPE keeps positions contiguous), so every head always
holds the same count and the model continues at position S on its own.

Sliding-window layers (Gemma 2/3: Gemma 3 270M has 5 layers of window 512 for every global one). The
cache keeps every layer whole; the model's own mask applies the window by *pot position*, and CR-RoPE
makes pot position = RoPE position. So with M entries, a global layer attends all M, while a window-W
layer attends, from a query at position q, the entries at positions q-W+1..q: the last W entries of the
pot (after a distillation, the last W of the C kept ones, wherever they were in the document), as if
the kept text were contiguous. Its CaP rows (scoring/capture.py) use the same sliding mask rows, so its
scores are zero for older entries; entries beyond the window are scored by the global layers.
Checked against eager attention over a distilled pot in tests/test_models.py.
"""

from __future__ import annotations

import torch

from ..runtime.compat import text_config
from ..runtime.devices import on_host
from ..interrupts import deferred_interrupt
from .pot_buffer import PotCache
from .rope import Rerotator

UNBOUNDED_START = 4096  # first capacity of an unbounded pot's buffer (`full`, `snapkv`); it doubles when full


def shared_row(idx: torch.Tensor) -> torch.Tensor | None:
    """idx (L, H, K)'s one row (K,) when every (layer, head) holds the same indices, else None. Known without
    reading the values when idx is one row expanded (what the shared policies return); compared on the CPU, where
    reading is free."""
    L, H, _ = idx.shape
    if (L == 1 or idx.stride(0) == 0) and (H == 1 or idx.stride(1) == 0):
        return idx[0, 0]
    if on_host(idx) and bool((idx == idx[:1, :1]).all()):
        return idx[0, 0]
    return None


class MemoryPot:
    def __init__(self, model: torch.nn.Module, size: int | None, accumulate: bool = False):
        cfg = text_config(model)
        self.size = size  # M; None = unbounded (the `full` / `snapkv` references)
        self.num_layers = cfg.num_hidden_layers
        self.num_kv_heads = getattr(cfg, "num_key_value_heads", None) or cfg.num_attention_heads
        # all full layers: sliding windows are applied by the mask, not by eviction
        self.cache = PotCache(self.num_layers, size if size else UNBOUNDED_START)
        self.rerotator = Rerotator(model)
        self.n_pinned = 0
        self.n_distilled = 0  # entries that survived the last distillation (pinned included)
        self.peak_entries = 0
        self.device = next(model.parameters()).device
        shape = (self.num_layers, self.num_kv_heads, 0)  # metadata lives beside the KV: no host round trips
        self.src = torch.zeros(shape, dtype=torch.long, device=self.device)
        self.tok = torch.zeros(shape, dtype=torch.long, device=self.device)
        self.nov = torch.zeros(shape, dtype=torch.float32, device=self.device)
        # every query row's attention summed per entry: only for a policy that ranks by it (H2O), else None
        self.acc = torch.zeros(shape, dtype=torch.float32, device=self.device) if accumulate else None

    # ---- sizes -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self.src.shape[-1]

    def cache_len(self) -> int:
        return self.cache.get_seq_length() if self.cache.ready else 0

    def reserve(self, entries: int) -> None:
        """Room for `entries` in the KV buffers before a forward writes them (they grow only past the capacity)."""
        self.cache.reserve(entries)

    def note_peak(self) -> None:
        self.peak_entries = max(self.peak_entries, self.cache_len())

    def kv_bytes(self) -> int:
        """Bytes of the KV entries held (the buffers allocate the capacity, M entries, once)."""
        total = 0
        for layer in self.cache.layers:
            if layer.keys is not None and layer.keys.numel():
                total += layer.keys.numel() * layer.keys.element_size() + layer.values.numel() * layer.values.element_size()
        return total

    def bytes_per_entry(self) -> int:
        """KV bytes one token costs across all layers and heads."""
        n = len(self)
        return self.kv_bytes() // n if n else 0

    # ---- growth ------------------------------------------------------------------------------------
    def append_meta(self, src: torch.Tensor, tok: torch.Tensor, nov: torch.Tensor) -> None:
        """Record T new entries (already written to the cache by a forward): src/tok/nov are (T,)."""
        lh = (self.num_layers, self.num_kv_heads, -1)
        dev = self.device
        new = (torch.cat([self.src, src.to(dev, torch.long).view(1, 1, -1).expand(lh)], -1),
               torch.cat([self.tok, tok.to(dev, torch.long).view(1, 1, -1).expand(lh)], -1),
               torch.cat([self.nov, nov.to(dev, torch.float32).view(1, 1, -1).expand(lh)], -1),
               None if self.acc is None else torch.cat([self.acc, torch.zeros(lh[0], lh[1], src.shape[0], device=dev)], -1))
        with deferred_interrupt():  # all or none
            self.src, self.tok, self.nov, self.acc = new

    def crop(self, length: int) -> None:
        """Drop cache entries past `length` in every layer (the catalyst / final prompt after it was used, or
        what an interrupted forward wrote to some layers only): only the lengths change."""
        for layer in self.cache.layers:
            layer.crop(-length)

    def layer_lengths(self) -> list[int]:
        """Entries held by each cache layer (0 for a layer not written yet); all equal len(self) when consistent."""
        return [layer.length for layer in self.cache.layers]

    def document_entries(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(src, tok) (N,) on the CPU: the document entries held (pinned header excluded), in pot order when every
        head holds the same entries (the default shared selection), else the union of positions in document
        order (one token id each)."""
        npin = self.n_pinned
        src, tok = self.src[..., npin:], self.tok[..., npin:]  # (L, H, N)
        if src.shape[-1] == 0 or bool((src == src[:1, :1]).all()):
            s, t = src[0, 0], tok[0, 0]
        else:
            s, inv = src.flatten().unique(return_inverse=True)
            t = torch.zeros_like(s).scatter_(0, inv, tok.flatten())
        keep = s >= 0
        return s[keep].cpu(), t[keep].cpu()

    # ---- one answer's changes ----------------------------------------------------------------------
    def snapshot(self) -> tuple:
        """A copy of the pot (KV and per-entry metadata) to restore after an answer changed it. One pot's memory."""
        kv = tuple(t.clone() for t in self.cache.stacked(len(self))) if self.cache.ready else None
        return kv, (self.src, self.tok, self.nov, None if self.acc is None else self.acc.clone()), self.n_distilled

    def restore(self, snap: tuple) -> None:
        kv, meta, n_distilled = snap
        with deferred_interrupt():
            (self.src, self.tok, self.nov, self.acc), self.n_distilled = meta, n_distilled
            if kv is not None:
                self.cache.assign(*kv)
            else:
                self.crop(0)

    # ---- distillation ------------------------------------------------------------------------------
    @torch.no_grad()
    def keep(self, idx: torch.Tensor, rerotate: bool = True) -> None:
        """Keep entries idx (L, H_kv, K) — sorted ascending per head — and apply CR-RoPE.

        Kept keys are re-rotated from their old positions (their old indices) to 0..K-1 (`rerotate=False`: left
        where they were, for the `plain` speed reference only). Every layer at once: one gather of the kept rows
        from the (L, 1, H_kv, S, D) buffers (one index when every (layer, head) keeps the same entries:
        `shared_row`), one rotation per layer type (rope.Rerotator.to_front), written back to rows 0..K-1; on the
        CPU a layer at a time (the same values, a layer's temporaries instead of all layers'). Every new tensor is
        computed first and then all are written at once, so an interrupt leaves the pot as it was or distilled,
        never half of each. Nothing here reads a value on the host: the queue never waits (docs/design.md).
        """
        L, H, K = idx.shape
        assert L == self.num_layers and H == self.num_kv_heads
        idx = idx.to(self.device)
        row = shared_row(idx)
        S = len(self)
        keys_all, values_all = self.cache.stacked(S)  # (L, 1, H, S, D) views
        step = 1 if on_host(idx) else L
        kv, memo = [], {}  # memo: a shared row's rotation, computed once for all the slices
        for a in range(0, L, step):
            layers = slice(a, min(L, a + step))
            k_in, v_in = keys_all[layers], values_all[layers]
            if row is not None:
                keys, values = k_in.index_select(3, row), v_in.index_select(3, row)  # (l, 1, H, K, D)
                old = row.view(1, 1, K)
            else:
                ix = idx[layers][:, None, :, :, None]  # (l, 1, H, K, 1)
                keys = k_in.gather(3, ix.expand(*ix.shape[:4], k_in.shape[-1]))
                values = v_in.gather(3, ix.expand(*ix.shape[:4], v_in.shape[-1]))
                old = idx[layers]
            if rerotate:
                keys = self.rerotator.to_front(keys, old, layers, memo)
            kv.append((layers, keys, values))
        meta = (self.src.gather(-1, idx), self.tok.gather(-1, idx), self.nov.gather(-1, idx),
                None if self.acc is None else self.acc.gather(-1, idx))
        with deferred_interrupt():
            for layers, keys, values in kv:
                self.cache.assign(keys, values, layers)
            self.src, self.tok, self.nov, self.acc = meta
            self.n_distilled = K
