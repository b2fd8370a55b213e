"""Decoding that does not loop: a logits step for the answer loop (decode.generate's `logits_fn`).

Greedy decoding of a small model falls into loops that are shorter than the stop rule's (stopping.py: a
repeated run of 10 words in a summary): "the FDL, the FDL, and the FDL", "the policy on policy-related topics,
including the policy on policy-related topics". Two standard controls, applied to the next token's logits:

- **no repeated n-gram** (Paulus et al. 2017; transformers' ``no_repeat_ngram_size``): a token that would
  complete an n-gram of tokens already generated gets -inf. N-grams made only of digits, punctuation and
  spaces are exempt (a pass key "72727", a table of numbers, ". . ." are not loops of content).
- **repetition penalty** (Keskar et al. 2019, CTRL): the logit of every token already generated that has a
  letter in it is divided by `penalty` (multiplied when negative), so the model prefers new words; 1.0 = off.

A guard only ever changes a choice when the greedy token would repeat: an answer with no repeated n-gram (and
penalty 1.0) is the greedy answer token for token. `guard_for(mode, tokenizer)` gives the settings per answer
kind: a summary bans repeated 3-grams and penalises repeats mildly; a question bans repeated 4-grams only (short
factual answers are left alone).
"""

from __future__ import annotations

import torch

# mode -> (n of the banned n-grams, repetition penalty)
SETTINGS = {"summary": (3, 1.1), "question": (4, 1.0)}


class RepetitionGuard:
    """`guard(gen_ids, logits) -> logits`: the ban and the penalty over the ids generated so far.

    logits: (V,) float32 for the next token; returned modified (in place). `tokenizer` tells which ids have a
    letter (exempt n-grams and the penalty's targets); without one every id counts as a word.
    """

    def __init__(self, ngram: int = 3, penalty: float = 1.0, tokenizer=None):
        if ngram < 0 or penalty < 1.0:
            raise ValueError("ngram must be >= 0 and penalty >= 1.0")
        self.ngram = ngram
        self.penalty = penalty
        self.tok = tokenizer
        self._wordy: dict[int, bool] = {}
        self.banned = 0  # choices this guard changed (a banned greedy token), for diagnostics and tests

    def is_word(self, token: int) -> bool:
        """Whether `token`'s text has a letter (cached per id)."""
        w = self._wordy.get(token)
        if w is None:
            if self.tok is None:
                w = True
            else:
                text = self.tok.decode([token], skip_special_tokens=True)
                w = any(ch.isalpha() for ch in text)
            self._wordy[token] = w
        return w

    def banned_next(self, gen: list[int]) -> set[int]:
        """Tokens that would complete an n-gram of `gen` already seen (the exempt n-grams excluded)."""
        n = self.ngram
        if n <= 0 or len(gen) < n:
            return set()
        if n == 1:
            return {t for t in gen if self.is_word(t)}
        prefix = tuple(gen[len(gen) - n + 1:])
        out = set()
        for i in range(len(gen) - n + 1):
            if tuple(gen[i:i + n - 1]) == prefix:
                t = gen[i + n - 1]
                if self.is_word(t) or any(self.is_word(p) for p in prefix):
                    out.add(t)
        return out

    def __call__(self, gen: list[int], logits: torch.Tensor) -> torch.Tensor:
        if not gen:
            return logits
        if self.penalty != 1.0:
            ids = torch.tensor(sorted({t for t in gen if self.is_word(t)}), dtype=torch.long, device=logits.device)
            if ids.numel():
                v = logits[ids]
                logits[ids] = torch.where(v > 0, v / self.penalty, v * self.penalty)
        banned = self.banned_next(gen)
        if banned:
            before = int(logits.argmax())
            logits[torch.tensor(sorted(banned), dtype=torch.long, device=logits.device)] = float("-inf")
            self.banned += before in banned
        return logits


def guard_for(mode: str, tokenizer=None) -> RepetitionGuard:
    """The guard an answer of `mode` ("question" | "summary", or the job kinds "ask" | "summarize") decodes with."""
    mode = {"ask": "question", "summarize": "summary"}.get(mode, mode)
    n, penalty = SETTINGS[mode]
    return RepetitionGuard(n, penalty, tokenizer)
