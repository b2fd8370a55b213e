"""Where, while reading, the model expected the question's own words — NuC (InfiniPot §3.3.2) read with the
question known (`ask DOC Q`).

NuC projects every hidden state of the read through the LM head. When the question is known while reading, the
same products give, at every document position t, the log-probability of each of the question's content words
(its first token, where that is a whole word): log p(w | the pot, the tokens before t). A sentence in a reader's
own words often lacks the question's words, but the model expected one of them there: at "hopping through
another server" a question's "jump". The pointwise mutual information of w at t (its log-probability there less
its mean over the document) is how much more the model expected w at t than anywhere:

    asked = AskedWords.of(tokenizer, question)        # None: no content word of the question is a whole token
    asked.observe(start, logp)                        # logp (T, A): nuc.asked_logp of positions start ..
    asked.units(src, seg, K) -> (K, A) float32        # each unit's highest PMI of each word (nats), -inf: unscored

2 A bytes a token (float16; A <= MAX_WORDS), grown as the read goes on; kept for the one question it was read
with, not saved with the pot. `retrieve.passages` ranks the later evidence passages with it (measured:
docs/results/model-retrieval.md).
"""

from __future__ import annotations

import torch

from ..archive import content_terms
from .expected import whole_words

MAX_WORDS = 8   # the question's content words followed, the first ones


class AskedWords:
    def __init__(self, words: list[str], ids: list[int], question: str = ""):
        self.words = words                       # the question's content words followed
        self.ids = torch.tensor(ids)             # (A,) each word's whole-word token id
        self.question = question                 # the question they are from
        self.logp = torch.empty(0, len(words), dtype=torch.float16)   # (N, A) -inf where unread
        self.total = torch.zeros(len(words), dtype=torch.float64)      # (A,) sum of the finite log-probs
        self.count = 0                                                  # positions summed

    @classmethod
    def of(cls, tokenizer, question: str) -> "AskedWords | None":
        """The question's content words whose first token after a space is a whole word (scoring/expected.py's
        `whole_words`), MAX_WORDS at most; None when there is none (or the tokenizer names no words)."""
        vocab = whole_words(tokenizer)
        if not vocab:
            return None
        words, ids = [], []
        for w in content_terms(question):
            got = tokenizer.encode(" " + w, add_special_tokens=False)
            if got and 0 <= got[0] < len(vocab) and vocab[got[0]] and got[0] not in ids:
                words.append(w)
                ids.append(int(got[0]))
            if len(words) == MAX_WORDS:
                break
        return cls(words, ids, question) if words else None

    def observe(self, start: int, logp: torch.Tensor) -> None:
        """The words' log-probabilities at document positions start .. start + T - 1: logp (T, A)."""
        logp = logp.float().cpu()
        T = logp.shape[0]
        if self.logp.shape[0] < start + T:
            grown = torch.full((max(start + T, 2 * self.logp.shape[0], 4096), len(self.words)), float("-inf"),
                               dtype=torch.float16)
            grown[:self.logp.shape[0]] = self.logp
            self.logp = grown
        self.logp[start:start + T] = logp.to(torch.float16)
        ok = torch.isfinite(logp).all(1)                                              # (T,)
        self.total += logp[ok].double().sum(0)
        self.count += int(ok.sum())

    def units(self, src: torch.Tensor, seg: torch.Tensor, K: int) -> torch.Tensor | None:
        """(K, A) each unit's highest PMI of each word over its positions (src (T,) document positions, seg (T,)
        the unit of each), -inf where none of its positions was read; None when nothing was read."""
        if not self.count:
            return None
        mean = (self.total / self.count).float()                                     # (A,)
        n = self.logp.shape[0]
        inside = (src >= 0) & (src < n)
        pmi = self.logp[src[inside]].float() - mean                                  # (T', A)
        A = len(self.words)
        out = torch.full((K, A), float("-inf"))
        return out.scatter_reduce(0, seg[inside][:, None].expand(-1, A), pmi, "amax")
