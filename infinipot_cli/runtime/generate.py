"""The answer loop: greedy decoding over a preallocated KV cache (``answer_cache.py``), with incremental
detokenisation.

:func:`generate` is the loop itself: prompt prefill, then one token per step (through ``decode_step.py`` for
Llama-family models, the model's forward otherwise) with argmax over the last position's logits only, and the
text streamed by decoding just the new tokens over a short look-back window (instead of the whole answer every
step). The pot the engine reads into is never written: the answer cache is a
copy of it (or a fresh prefill, engine option ``reencode``), so the same pot answers again.
"""

from __future__ import annotations

from typing import Callable

import torch

from . import decode_step
from .answer_cache import GROW, AnswerCache, answer_room  # noqa: F401 - the loop's cache, re-exported
from .compat import with_cache


def argmax(v: torch.Tensor) -> int:
    """torch.argmax of a (V,) vector — the first index of its largest value (of its first NaN, if any) — as the
    first row, of rows of up to 1,024 values, whose largest value is the largest, then the first index in that row:
    the row maxima are one vectorised pass, where argmax over 49K values is a scalar loop (~8 µs against ~43)."""
    n = v.numel()
    for b in (1024, 512, 256, 128):
        if n % b == 0 and n >= 8 * b:
            rows = v.view(-1, b)
            r = int(rows.amax(1).argmax())
            return r * b + int(rows[r].argmax())
    return int(v.argmax())


def greedy_next(model, hidden: torch.Tensor) -> int:
    """argmax of the LM head over the last position only. hidden: (T, d). Final-logit soft-capping (Gemma 2) is
    monotonic, so the argmax of the raw logits is the same token; no fp32 copy of the (V,) logits is needed."""
    logits = model.lm_head(hidden[-1:])  # (1, V) in the model's dtype
    return argmax(logits[0].float())  # bf16 argmax is 3x slower than the conversion and an fp32 argmax


def guided_next(model, hidden: torch.Tensor, gen: list[int], logits_fn) -> int:
    """greedy_next after `logits_fn(gen, logits)` rewrote the (V,) fp32 logits (repetition.py's guard)."""
    if logits_fn is None:
        return greedy_next(model, hidden)
    logits = model.lm_head(hidden[-1:])[0].float()  # (V,)
    return argmax(logits_fn(gen, logits))


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
             on_token: Callable[[int, str], None] | None = None,
             logits_fn: Callable[[list[int], torch.Tensor], torch.Tensor] | None = None) -> list[int]:
    """Greedy-decode up to `max_new_tokens` after `prompt_ids` over `cache` (written in place); returns the ids.

    A token in `stop_ids` ends the answer and is not returned. `on_text(piece)` receives the text as it forms
    (needs `tokenizer`); `on_token(id, text_so_far)` is called for every generated token; `should_stop(ids, text)`
    ends the answer after the current token when it returns True (`text`: the text streamed so far, "" without a
    tokenizer). `cache`: an :class:`AnswerCache` (any transformers Cache works, only slower). `logits_fn(ids,
    logits)` may rewrite the next token's (V,) fp32 logits before the argmax (repetition.py).
    """
    stops = set(stop_ids or ())
    dev = next(model.parameters()).device
    detok = Detokenizer(tokenizer) if tokenizer is not None else None
    base = model.model
    gen: list[int] = []
    if max_new_tokens <= 0:
        return gen
    out = base(input_ids=torch.tensor([prompt_ids], device=dev), use_cache=True, **with_cache(base, cache))
    nxt = guided_next(model, out.last_hidden_state[0], gen, logits_fn)
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
            nxt = guided_next(model, fused(nxt, cache), gen, logits_fn)
        else:
            step.fill_(nxt)
            out = base(input_ids=step, use_cache=True, **with_cache(base, cache))
            nxt = guided_next(model, out.last_hidden_state[0], gen, logits_fn)
    if detok is not None:
        piece = detok.flush()
        if piece and on_text is not None:
            on_text(piece)
    return gen
