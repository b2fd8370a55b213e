"""The words the model expected while reading: a question-free sketch of the document for a later question.

NuC (InfiniPot §3.3.2) projects every hidden state of the read through the LM head to score how novel the next
token is. The same logits rank the words that could have stood there: at "try to [recover] data from damaged
files" the model expects "recover", "restore", "repair" … Those are contextual substitutes from the reader's own
distribution: lexical substitution by a language model, or document expansion (TILDE, Zhuang & Zuccon 2021)
from the model that reads. A question in a reader's own words often shares no word with the sentence that
answers it, but names a word the model expected there; `retrieve.passages` counts such a word at EXPECTED_WEIGHT of
its idf (docs/results/model-retrieval.md).

Kept per window of WINDOW document positions: the KEEP whole-word tokens (a space, then 3+ letters) with the
most probability summed over the window's positions, from each position's TOP most probable tokens:

    ids (W, KEEP) int32   -1 where a window has fewer; W = ceil(tokens read / WINDOW)

KEEP x 4 / WINDOW bytes a token (8 with the defaults), grown as the read goes on, saved with the pot
(`tensors` / `from_tensors`). A unit of the document is given the words of the windows it overlaps:

    words(src, seg, K) -> [set[str]]   each unit's expected words (the unit's own among them)
"""

from __future__ import annotations

import torch

from ..archive import STOPWORDS

WINDOW = 16   # document positions a window of expected words covers
KEEP = 32     # whole-word tokens kept per window, by summed probability
TOP = 20      # most probable tokens taken at each position


SPACE = ("\u0120", "\u2581")  # how a byte-level BPE ("Ġ") and a SentencePiece ("▁") vocabulary write a leading space


def whole_words(tokenizer) -> list[str] | None:
    """Each token's word where it is a whole word of 3+ letters after a space (" recover" -> "recover"), else "";
    None for a tokenizer that cannot name its tokens. Computed once per tokenizer."""
    key = "_infinipot_whole_words"
    got = getattr(tokenizer, key, None)
    if got is None:
        name = getattr(tokenizer, "convert_ids_to_tokens", None)
        if name is None:
            return None
        got = []
        for t in name(list(range(len(tokenizer)))):
            w = t[1:] if isinstance(t, str) and t[:1] in SPACE else ""
            w = w.lower() if len(w) >= 3 and w.isalpha() and w.isascii() else ""
            got.append("" if w in STOPWORDS else w)
        setattr(tokenizer, key, got)
    return got


class ExpectedWords:
    def __init__(self, vocab: list[str]):
        self.vocab = vocab                                   # token id -> its word, "" for none (whole_words)
        self.whole = torch.tensor([bool(w) for w in vocab])  # (V,) bool
        self.rows: list[torch.Tensor] = []                   # window w's (KEEP,) int32 ids
        self._part: tuple[int, list[torch.Tensor], list[torch.Tensor]] | None = None  # an open window's
        self._words: list[set[str]] | None = None            # each window's words, once asked

    @classmethod
    def of(cls, tokenizer) -> "ExpectedWords | None":
        """A sketch for a read with `tokenizer`; None when its tokens name no words."""
        vocab = whole_words(tokenizer)
        return cls(vocab) if vocab and any(vocab) else None

    def observe(self, start: int, ids: torch.Tensor, logp: torch.Tensor) -> None:
        """The predictions for document positions start .. start + T - 1: ids (T, TOP) token ids (-1: none) and
        logp (T, TOP) their log-probabilities, the most probable first."""
        ids, logp = ids.cpu(), logp.float().cpu()
        known = (ids >= 0) & (ids < self.whole.numel())  # a model's head may have rows past its tokenizer's ids
        keep = known & self.whole[torch.where(known, ids, 0)]
        T = ids.shape[0]
        t = 0
        while t < T:
            w = (start + t) // WINDOW
            end = min(T, (w + 1) * WINDOW - start)
            if self._part is not None and self._part[0] != w:
                self._close()
            if self._part is None:
                self._part = (w, [], [])
            k = keep[t:end]
            self._part[1].append(ids[t:end][k])
            self._part[2].append(logp[t:end][k].exp())
            if start + end == (w + 1) * WINDOW:  # the window is whole
                self._close()
            t = end

    def _close(self) -> None:
        """The open window's KEEP most probable whole words, summed over its positions."""
        w, ids, probs = self._part
        self._part = None
        ids, probs = torch.cat(ids), torch.cat(probs)
        row = torch.full((KEEP,), -1, dtype=torch.int32)
        if ids.numel():
            uniq, inv = torch.unique(ids, return_inverse=True)
            mass = torch.zeros(uniq.numel()).scatter_add_(0, inv, probs)
            best = mass.topk(min(KEEP, uniq.numel())).indices
            row[:best.numel()] = uniq[best].to(torch.int32)
        while len(self.rows) < w:
            self.rows.append(torch.full((KEEP,), -1, dtype=torch.int32))
        if len(self.rows) == w:
            self.rows.append(row)
        else:  # a window continued after a resumed read: its ids added to those it had, KEEP at most
            old = self.rows[w][self.rows[w] >= 0]
            both = torch.cat([old, row[row >= 0]])
            seen = dict.fromkeys(both.tolist())
            merged = torch.tensor(list(seen)[:KEEP], dtype=torch.int32)
            self.rows[w] = torch.cat([merged, torch.full((KEEP - merged.numel(),), -1, dtype=torch.int32)])
        self._words = None

    def tensor(self) -> torch.Tensor:
        """(W, KEEP) int32: every window's ids so far (an open window's included)."""
        if self._part is not None:
            self._close()
        return torch.stack(self.rows) if self.rows else torch.zeros(0, KEEP, dtype=torch.int32)

    def tensors(self) -> dict[str, torch.Tensor]:
        return {"expected.ids": self.tensor().contiguous()}

    def restore(self, tensors: dict[str, torch.Tensor]) -> None:
        """The windows a saved pot kept (`tensors`)."""
        got = tensors.get("expected.ids")
        if got is not None:
            self.rows = [r.to(torch.int32) for r in got]
            self._part = self._words = None

    def words(self, src: torch.Tensor, seg: torch.Tensor, K: int) -> list[set[str]] | None:
        """Each of the K units' expected words (src (T,) document positions, seg (T,) the unit of each), the words
        of the windows its positions fall in; None when the read expected nothing (a policy without NuC, a pot
        saved before)."""
        table = self.tensor()                                                   # (W, KEEP)
        if not table.numel() or not bool((table >= 0).any()):
            return None
        if self._words is None or len(self._words) != table.shape[0]:
            self._words = [{self.vocab[i] for i in row if 0 <= i < len(self.vocab)} - {""}
                           for row in table.tolist()]
        win = (src // WINDOW).clamp(0, table.shape[0] - 1)                      # (T,)
        pairs = torch.unique(torch.stack([seg, win]), dim=1)                    # (2, P) unit, window
        out: list[set[str]] = [set() for _ in range(K)]
        for u, w in pairs.t().tolist():
            out[u] |= self._words[w]
        return out
