"""The answer loop: greedy decoding over a preallocated KV cache, with incremental detokenisation.

transformers' ``DynamicCache`` appends by concatenation, so every generated token copies the whole cache of every
layer (over a full 2K-entry pot of the built-in model: ~90 MB fp32 per token, which dominated the time per token).
:class:`AnswerCache` allocates room for the prompt and the answer's start and writes each new entry in place; the
layers hand the model views of the filled part, so positions (arange + ``get_seq_length()``) and causal masks are
those of a ``DynamicCache`` of the same length, for every architecture the engine supports.

:func:`generate` is the loop itself: prompt prefill, then one token per step (through ``decode_step.py`` for
Llama-family models, the model's forward otherwise) with argmax over the last position's logits only, and the
text streamed by decoding just the new tokens over a short look-back window (instead of the whole answer every
step). The pot the engine reads into is never written: the answer cache is a
copy of it (or a fresh prefill, engine option ``reencode``), so the same pot answers again.
"""

from __future__ import annotations

from typing import Callable

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

from . import decode_step
from .model import with_cache


GROW = 128  # rows an answer cache grows by: one-row attention reads all of a layer's rows, so little is left empty


def answer_room(prompt_len: int, max_new_tokens: int) -> int:
    """Rows to allocate beyond the pot: the prompt and the first GROW answer tokens (longer answers grow the
    cache, one copy per GROW tokens), so a short answer does not read a long answer's empty rows every token."""
    return prompt_len + min(max_new_tokens, GROW)


class AnswerLayer(DynamicLayer):
    """One layer's keys/values in a buffer of `capacity` entries, written in place at the next index.

    ``keys``/``values`` are always views (1, H_kv, n, D) of the filled part, so everything that reads a
    ``DynamicLayer`` (sequence length, mask sizes) sees an ordinary cache of length n. The buffers (``buffers()``)
    start zeroed, so decode_step.py can attend over all `capacity` rows (one contiguous batch per layer) with the
    unfilled ones masked. Past the capacity it grows by ``GROW`` rows instead of failing.
    """

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = max(1, int(capacity))
        self._k: torch.Tensor | None = None  # (B, H_kv, capacity, D)
        self._v: torch.Tensor | None = None

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = key_states.dtype, key_states.device
        b, h = key_states.shape[:2]
        self._k = key_states.new_zeros(b, h, self.capacity, key_states.shape[-1])
        self._v = value_states.new_zeros(b, h, self.capacity, value_states.shape[-1])
        self.keys, self.values = self._k[:, :, :0], self._v[:, :, :0]
        self.is_initialized = True

    def _grow(self, need: int) -> None:
        cap = need + GROW
        k = self._k.new_zeros(*self._k.shape[:2], cap, self._k.shape[-1])
        v = self._v.new_zeros(*self._v.shape[:2], cap, self._v.shape[-1])
        n = self.keys.shape[-2]
        k[:, :, :n].copy_(self.keys)
        v[:, :, :n].copy_(self.values)
        self._k, self._v, self.capacity = k, v, cap

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        n = self.keys.shape[-2]  # the filled length (a crop of the views shortens it)
        t = key_states.shape[-2]
        if n + t > self.capacity:
            self._grow(n + t)
        self._k[:, :, n:n + t].copy_(key_states)
        self._v[:, :, n:n + t].copy_(value_states)
        self.keys, self.values = self._k[:, :, :n + t], self._v[:, :, :n + t]
        return self.keys, self.values

    def buffers(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole (B, H_kv, capacity, D) buffers; rows past the filled length are zeros."""
        return self._k, self._v

    def get_max_length(self) -> int:
        return -1  # grows when needed, like a DynamicLayer


class AnswerCache(DynamicCache):
    """A ``DynamicCache`` whose layers are :class:`AnswerLayer`s of `capacity` entries each.

    ``AnswerCache(capacity)`` starts empty (for a fresh prefill); ``AnswerCache.from_cache(cache, extra)`` copies
    another cache's entries once and leaves room for `extra` more (the prompt and the answer)."""

    def __init__(self, capacity: int, layers: list[AnswerLayer] | None = None):
        self.answer_capacity = capacity
        if layers is not None:
            super(DynamicCache, self).__init__(layers=layers)
        else:
            super(DynamicCache, self).__init__(layer_class_to_replicate=lambda: AnswerLayer(capacity))

    @classmethod
    def from_cache(cls, cache, extra: int, length: int | None = None) -> "AnswerCache":
        """A copy of `cache`'s first `length` entries (all by default) with room for `extra` more."""
        layers = []
        for src in cache.layers:
            n = src.keys.shape[-2] if getattr(src, "keys", None) is not None else 0
            n = n if length is None else min(n, length)
            layer = AnswerLayer(n + extra)
            if n:
                layer.update(src.keys[:, :, :n], src.values[:, :, :n])
            layers.append(layer)
        return cls(max((l.capacity for l in layers), default=extra), layers=layers)


def greedy_next(model, hidden: torch.Tensor) -> int:
    """argmax of the LM head over the last position only. hidden: (T, d). Final-logit soft-capping (Gemma 2) is
    monotonic, so the argmax of the raw logits is the same token; no fp32 copy of the (V,) logits is needed."""
    logits = model.lm_head(hidden[-1:])  # (1, V) in the model's dtype
    return int(logits[0].float().argmax())  # bf16 argmax is 3x slower than the conversion and an fp32 argmax


class Detokenizer:
    """Streams text for a growing list of token ids by decoding only a short window at its end.

    Each step decodes ids[prefix:] and ids[prefix:read] and emits the difference, so tokenizers that drop a
    leading space for the first token (SentencePiece) or join tokens differently still give the text of the
    whole decode. A window ending in U+FFFD (a multi-byte character cut in the middle) waits for more tokens.
    """

    def __init__(self, tokenizer, skip_special_tokens: bool = True):
        self.tok = tokenizer
        self.skip = skip_special_tokens
        self.ids: list[int] = []
        self.prefix = 0   # window start
        self.read = 0     # ids up to here are already emitted
        self.text = ""    # everything emitted so far

    def _decode(self, ids: list[int]) -> str:
        return self.tok.decode(ids, skip_special_tokens=self.skip) if ids else ""

    def push(self, token: int) -> str:
        """Add one id; returns the new text (possibly empty)."""
        self.ids.append(token)
        before = self._decode(self.ids[self.prefix:self.read])
        now = self._decode(self.ids[self.prefix:])
        if len(now) > len(before) and not now.endswith("\ufffd"):
            new = now[len(before):]
            self.prefix, self.read = self.read, len(self.ids)
            self.text += new
            return new
        return ""

    def flush(self) -> str:
        """Whatever the whole decode has beyond the text emitted (a trailing incomplete character)."""
        full = self._decode(self.ids)
        if full.startswith(self.text) and len(full) > len(self.text):
            new = full[len(self.text):]
            self.text = full
            return new
        return ""


@torch.inference_mode()
def generate(model, cache, prompt_ids: list[int], max_new_tokens: int, stop_ids=None,
             on_text: Callable[[str], None] | None = None,
             should_stop: Callable[[list[int], str], bool] | None = None, *, tokenizer=None,
             on_token: Callable[[int, str], None] | None = None) -> list[int]:
    """Greedy-decode up to `max_new_tokens` after `prompt_ids` over `cache` (written in place); returns the ids.

    A token in `stop_ids` ends the answer and is not returned. `on_text(piece)` receives the text as it forms
    (needs `tokenizer`); `on_token(id, text_so_far)` is called for every generated token; `should_stop(ids, text)`
    ends the answer after the current token when it returns True (`text`: the text streamed so far, "" without a
    tokenizer). `cache`: an :class:`AnswerCache` (any transformers Cache works, only slower).
    """
    stops = set(stop_ids or ())
    dev = next(model.parameters()).device
    detok = Detokenizer(tokenizer) if tokenizer is not None else None
    base = model.model
    gen: list[int] = []
    if max_new_tokens <= 0:
        return gen
    out = base(input_ids=torch.tensor([prompt_ids], device=dev), use_cache=True, **with_cache(base, cache))
    nxt = greedy_next(model, out.last_hidden_state[0])
    step = torch.empty(1, 1, dtype=torch.long, device=dev)
    fused = decode_step.for_model(model)
    while True:
        if nxt in stops:
            break
        gen.append(nxt)
        text = ""
        if detok is not None:
            piece = detok.push(nxt)
            if piece and on_text is not None:
                on_text(piece)
            text = detok.text
        if on_token is not None:
            on_token(nxt, text)
        if len(gen) >= max_new_tokens or (should_stop is not None and should_stop(gen, text)):
            break
        if fused is not None and fused.usable(cache):  # one token without the module stack (decode_step.py)
            nxt = greedy_next(model, fused(nxt, cache))
        else:
            step.fill_(nxt)
            out = base(input_ids=step, use_cache=True, **with_cache(base, cache))
            nxt = greedy_next(model, out.last_hidden_state[0])
    if detok is not None:
        piece = detok.flush()
        if piece and on_text is not None:
            on_text(piece)
    return gen
