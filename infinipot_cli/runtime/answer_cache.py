"""The KV cache an answer is written into: preallocated buffers written in place, a transformers ``Cache``.

transformers' ``DynamicCache`` appends by concatenation, so every generated token copies the whole cache of every
layer (over a full 2K-entry pot of the built-in model: ~90 MB fp32 per token). :class:`AnswerCache` allocates room
for the prompt and the answer's start and writes each new entry in place; its layers hand the model views of the
filled part, so positions (arange + ``get_seq_length()``) and causal masks are those of a ``DynamicCache`` of the
same length, for every architecture the engine supports. It is built on transformers' public ``Cache(layers=...)``
and ``CacheLayerMixin``, not on ``DynamicCache``'s internals.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

GROW = 128  # rows an answer cache grows by: one-row attention reads all of a layer's rows, so little is left empty


def answer_room(prompt_len: int, max_new_tokens: int) -> int:
    """Rows to allocate beyond the pot: the prompt and the first GROW answer tokens (longer answers grow the
    cache, one copy per GROW tokens), so a short answer does not read a long answer's empty rows every token."""
    return prompt_len + min(max_new_tokens, GROW)


def _lazy_view(attr: str) -> property:
    """An AnswerLayer's `keys` or `values`: the view of the filled rows, made again first when rows were added
    since (a value set here replaces it, the other view made first so it is not made again over this one)."""

    def get(self):
        if self._stale:
            self._views()
        return getattr(self, attr)

    def put(self, t):
        if self._stale:
            self._views()
        setattr(self, attr, t)

    return property(get, put)


class FilledLayer(CacheLayerMixin):
    """A cache layer whose entries are its first `length` rows of a preallocated buffer: what transformers asks of
    a layer's size, and the rows a crop keeps (AnswerLayer here, the pot's PotLayer in pot_buffer.py)."""

    length = 0

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.length + query_length, 0

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return -1  # grows when needed, like a DynamicLayer

    def kept(self, tokens_to_remove: int) -> int:
        """The rows DynamicLayer.crop(tokens_to_remove) keeps (a negative count: keep that many)."""
        keep = self.length - tokens_to_remove if tokens_to_remove >= 0 else -tokens_to_remove
        return max(0, min(self.length, keep))


class AnswerLayer(FilledLayer):
    """One layer's keys/values in a buffer of `capacity` entries, written in place at the next index.

    ``keys``/``values`` are always views (1, H_kv, n, D) of the filled part, so everything that reads a cache layer
    (sequence length, mask sizes) sees an ordinary cache of length n. The buffers (``buffers()``) start zeroed, so
    the decode step can attend over all `capacity` rows (one contiguous batch per layer) with the unfilled ones
    masked. Past the capacity it grows by ``GROW`` rows instead of failing.
    """

    is_sliding = False  # sliding windows are applied by the masks, as over a DynamicCache
    is_croppable = True

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = max(1, int(capacity))
        self.length = 0  # filled rows
        self._k: torch.Tensor | None = None  # (B, H_kv, capacity, D)
        self._v: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        b, h = key_states.shape[:2]
        self._k = key_states.new_zeros(b, h, self.capacity, key_states.shape[-1])
        self._v = value_states.new_zeros(b, h, self.capacity, value_states.shape[-1])
        self._views()
        self.is_initialized = True

    _stale = False  # the views are made again on their next read (the decode step does not read them)
    keys = _lazy_view("_keys")
    values = _lazy_view("_values")

    def _views(self) -> None:
        self._stale = False
        self._keys, self._values = self._k[:, :, :self.length], self._v[:, :, :self.length]

    def _grow(self, need: int) -> None:
        cap = need + GROW
        k = self._k.new_zeros(*self._k.shape[:2], cap, self._k.shape[-1])
        v = self._v.new_zeros(*self._v.shape[:2], cap, self._v.shape[-1])
        n = self.length
        k[:, :, :n].copy_(self._k[:, :, :n])
        v[:, :, :n].copy_(self._v[:, :, :n])
        self._k, self._v, self.capacity = k, v, cap

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n, t = self.length, key_states.shape[-2]
        if n + t > self.capacity:
            self._grow(n + t)
        self._k[:, :, n:n + t].copy_(key_states)
        self._v[:, :, n:n + t].copy_(value_states)
        self.length = n + t
        self._views()
        return self.keys, self.values

    def next_row(self) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The decode step's room for one more entry of an initialized layer: grows the buffers if they are full,
        counts the row as filled and returns the whole buffers (H_kv, capacity, D) of batch 0 and the row's index,
        which the step writes in place."""
        n = self.length
        if n + 1 > self.capacity:
            self._grow(n + 1)
        self.length = n + 1
        self._stale = True  # the views follow on their next read: two fewer tensors a layer a token
        return self._k[0], self._v[0], n

    def buffers(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole (B, H_kv, capacity, D) buffers; rows past the filled length are zeros."""
        return self._k, self._v

    def crop(self, tokens_to_remove: int) -> None:
        """Drop entries from the end (a negative count: keep that many); the dropped rows are zeroed."""
        keep = self.kept(tokens_to_remove)
        if self.is_initialized:
            self._k[:, :, keep:self.length].zero_()
            self._v[:, :, keep:self.length].zero_()
            self.length = keep
            self._views()

    def reset(self) -> None:
        self.crop(self.length)


class AnswerCache(Cache):
    """A transformers ``Cache`` whose layers are :class:`AnswerLayer`s of `capacity` entries each.

    ``AnswerCache(capacity)`` starts empty (for a fresh prefill); ``AnswerCache.from_cache(cache, extra)`` copies
    another cache's entries once and leaves room for `extra` more (the prompt and the answer)."""

    def __init__(self, capacity: int, layers: list[AnswerLayer] | None = None):
        self.answer_capacity = capacity
        if layers is not None:
            super().__init__(layers=layers)
        else:
            super().__init__(layer_class_to_replicate=lambda: AnswerLayer(capacity))

    @classmethod
    def from_cache(cls, cache, extra: int, length: int | None = None) -> "AnswerCache":
        """A copy of `cache`'s first `length` entries (all by default) with room for `extra` more."""
        layers = []
        for src in cache.layers:
            n = src.keys.shape[-2] if getattr(src, "keys", None) is not None and src.keys.dim() == 4 else 0
            n = n if length is None else min(n, length)
            layer = AnswerLayer(n + extra)
            if n:
                layer.update(src.keys[:, :, :n], src.values[:, :, :n])
            layers.append(layer)
        return cls(max((l.capacity for l in layers), default=extra), layers=layers)
