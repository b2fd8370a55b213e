"""Where the question's attention has been strongest so far while reading — InfiniPot §3.3.1 (CaP) with the
question as the catalyst (CaP-Q), shown live during `infinipot ask DOC Q`.

Each distillation scores every entry the pot holds by the question's attention beyond the template's (the shared
score the selection uses, scoring/scorer.py). The focus is the stretch of WINDOW consecutive held tokens (in
document order) whose mean score is the highest any distillation gave so far: its middle token's document
position. Two numbers, whatever the document's length; it changes nothing the engine keeps.

    focus = Focus()
    focus.observe(src, shared)   # src (N,) document positions (negative: the pinned header), shared (N,) scores
    focus.pos, focus.score       # -1 and -inf until a distillation scored something

It shows where the read's own attention points; the answer's passages are chosen after the read
(answer/retrieve.py) and may lie elsewhere: as a ranking the question's attention measured below the words
(docs/results/model-retrieval.md).
"""

from __future__ import annotations

import torch

WINDOW = 16  # tokens: about a short sentence, so one token's spike is not the focus


class Focus:
    def __init__(self) -> None:
        self.pos = -1
        self.score = float("-inf")

    def observe(self, src: torch.Tensor, shared: torch.Tensor) -> bool:
        """Take one distillation's scores (src, shared: (N,)); True when the focus moved."""
        doc = src >= 0
        src, shared = src[doc], shared[doc].float()
        n = int(src.numel())
        if n == 0:
            return False
        order = src.argsort()
        pos, s = src[order], shared[order]                       # (n,) in document order
        w = min(WINDOW, n)
        c = torch.cat([s.new_zeros(1), s.cumsum(0)])             # (n + 1,)
        means = (c[w:] - c[:-w]) / w                             # (n - w + 1,) each window's mean
        i = int(means.argmax())
        best = float(means[i])
        if best <= self.score:
            return False
        self.score, self.pos = best, int(pos[i + w // 2])
        return True
