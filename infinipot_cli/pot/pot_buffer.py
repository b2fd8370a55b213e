"""The pot's KV cache: one preallocated buffer for every layer, written in place (InfiniPot §3.2's fixed memory).

transformers' ``DynamicCache`` appends by concatenation, so every forward of a chunk copied the whole pot of every
layer, and a distillation allocated new tensors layer by layer. :class:`PotCache` allocates, on the first forward,

    k, v  (L, B, H_kv, capacity, D)   every layer's keys (post-RoPE) and values, capacity = M entries

and each :class:`PotLayer` hands the model views of its filled rows, ``k[i, :, :, :n]``, so sequence lengths, masks
and positions are those of a ``DynamicCache`` of the same length. A forward writes its rows in place; a crop only
shortens the lengths; a distillation gathers the kept rows of all layers in one operation and writes them back to
rows 0..C-1 (``MemoryPot.keep``). The buffer grows (one copy) only when a forward would pass the capacity: the
unbounded references (`full`, `snapkv`) and a final prompt longer than the catalyst it replaces.

Every layer must hold the same KV shape (every architecture the engine supports does). Built on transformers'
public ``Cache(layers=...)`` and ``CacheLayerMixin``, like answer_cache.py.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache

from ..runtime.answer_cache import FilledLayer


class PotLayer(FilledLayer):
    """Layer `index` of a :class:`PotCache`: ``keys``/``values`` are views (B, H_kv, n, D) of the shared buffer.
    Assigning ``keys``/``values`` copies into the buffer (the filled length follows the tensor assigned)."""

    is_sliding = False  # sliding windows are applied by the masks, as over a DynamicCache
    is_croppable = True

    def __init__(self, owner: "PotCache", index: int):
        self.owner, self.index, self.length = owner, index, 0
        super().__init__()

    def _get(self, which: str):
        buf = getattr(self.owner, which)
        return None if buf is None else buf[self.index, :, :, :self.length]

    def _put(self, which: str, t) -> None:
        if t is None:  # CacheLayerMixin.__init__
            return
        self.owner.write(self.index, which, t)

    keys = property(lambda self: self._get("k"), lambda self, t: self._put("k", t))
    values = property(lambda self: self._get("v"), lambda self, t: self._put("v", t))

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.owner.allocate(key_states, value_states)
        self.dtype, self.device = key_states.dtype, key_states.device
        self.is_initialized = True

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, t = self.length, key_states.shape[-2]
        self.owner.reserve(n + t)
        self.owner.k[self.index, :, :, n:n + t].copy_(key_states)
        self.owner.v[self.index, :, :, n:n + t].copy_(value_states)
        self.length = n + t
        return self.keys, self.values

    def crop(self, tokens_to_remove: int) -> None:
        """Drop entries from the end (a negative count: keep that many), as DynamicLayer.crop."""
        self.length = self.kept(tokens_to_remove)

    def reset(self) -> None:
        self.length = 0


class PotCache(Cache):
    """A transformers ``Cache`` of `num_layers` :class:`PotLayer`s over one (L, B, H_kv, capacity, D) buffer pair."""

    def __init__(self, num_layers: int, capacity: int):
        self.capacity = max(1, int(capacity))
        self.k: torch.Tensor | None = None  # (L, B, H_kv, capacity, D)
        self.v: torch.Tensor | None = None  # (L, B, H_kv, capacity, Dv)
        super().__init__(layers=[PotLayer(self, i) for i in range(num_layers)])

    @property
    def ready(self) -> bool:
        return self.k is not None

    def allocate(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """The buffers, shaped after the first layer's first keys/values (B, H_kv, T, D); once."""
        if self.k is not None:
            if key_states.shape[:2] != self.k.shape[1:3] or key_states.shape[-1] != self.k.shape[-1]:
                raise ValueError("the pot needs the same KV shape in every layer")
            return
        L, (b, h), cap = len(self.layers), key_states.shape[:2], max(self.capacity, key_states.shape[-2])
        self.k = key_states.new_empty(L, b, h, cap, key_states.shape[-1])
        self.v = value_states.new_empty(L, b, h, cap, value_states.shape[-1])
        self.capacity = cap

    def reserve(self, need: int) -> None:
        """Room for `need` entries in every layer: the buffers grow (one copy of the filled rows) when they are
        smaller, to `need` or to twice their size, whichever is larger."""
        if self.k is None or need <= self.capacity:
            if self.k is None:
                self.capacity = max(self.capacity, need)
            return
        cap = max(need, 2 * self.capacity)
        n = max((layer.length for layer in self.layers), default=0)
        for name in ("k", "v"):
            old = getattr(self, name)
            new = old.new_empty(*old.shape[:3], cap, old.shape[-1])
            new[:, :, :, :n].copy_(old[:, :, :, :n])
            setattr(self, name, new)
        self.capacity = cap

    def write(self, index: int, which: str, t: torch.Tensor) -> None:
        """Layer `index`'s keys or values become `t` (B, H_kv, n, D): copied into rows 0..n-1."""
        layer = self.layers[index]
        if self.k is None:
            self.allocate(t, t)
            layer.is_initialized = True
        n = t.shape[-2]
        self.reserve(n)
        getattr(self, which)[index, :, :, :n].copy_(t)
        layer.length = n

    def filled(self) -> int:
        """Entries every layer holds (the shortest layer's length)."""
        return min((layer.length for layer in self.layers), default=0)

    def stacked(self, n: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Views (L, B, H_kv, n, D) of every layer's first `n` entries (default: all filled)."""
        n = self.filled() if n is None else n
        return self.k[:, :, :, :n], self.v[:, :, :, :n]

    def assign(self, keys: torch.Tensor, values: torch.Tensor, layers: slice = slice(None)) -> None:
        """The layers `layers` (default: all) hold `keys`/`values` (l, B, H_kv, n, D), written to rows 0..n-1 (new
        tensors, not views of the buffer)."""
        n = keys.shape[-2]
        self.reserve(n)
        self.k[layers, :, :, :n].copy_(keys)
        self.v[layers, :, :, :n].copy_(values)
        for layer in self.layers[layers]:
            layer.length = n
