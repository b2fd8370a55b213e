"""The InfiniPot scorer — InfiniPot §3.3: one catalyst score and one novelty score per pot entry.

    cap (L|1, H|1, N)  CaP (§3.3.1, Eq. 2): the attention the catalyst's query rows give each entry, summed over
                       the rows and the query heads of a KV head's group (scoring/capture.py captures it). With a
                       question as the catalyst (CaP-Q) and `relevance`, the question rows' attention minus the
                       template rows' instead: what is specific to the question (docs/design.md).
    nov (L|1, H|1, N)  NuC (§3.3.2, Eq. 4): the token's cross-entropy when it was read (scoring/nuc.py).

With `share`, every (layer, KV head) gets the same scores — the CaP mean over the heads of the layers from
`share_from` of the depth on — so every head keeps the same entries (one row: leading dims 1, 1). Measured on
the built-in model: the deeper half's attention ranks a needle's sentence near the top where the mean over all
layers favours " the" tokens (docs/results/needle.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Scores:
    cap: torch.Tensor  # (L|1, H|1, N) float32 catalyst score
    nov: torch.Tensor  # (L|1, H|1, N) float32 novelty


@dataclass
class InfiniPotScorer:
    share: bool = False
    share_from: float = 0.0
    relevance: bool = False

    def first_layer(self, num_layers: int) -> int:
        """The first layer whose catalyst scores `score` reads (the engine captures none before it)."""
        return min(int(round(self.share_from * num_layers)), num_layers - 1) if self.share else 0

    def score(self, cap: torch.Tensor, nov: torch.Tensor, rel: torch.Tensor | None = None) -> Scores:
        """cap, nov, rel: (L, H, N) over the candidates; rel is None unless the catalyst holds a question."""
        c = rel if self.relevance and rel is not None else cap
        if self.share:
            first = self.first_layer(c.shape[0])
            return Scores(cap=c[first:].mean(dim=(0, 1), keepdim=True), nov=nov[:1, :1])
        return Scores(cap=c, nov=nov)
