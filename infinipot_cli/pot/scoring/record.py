"""What CaP-Q said of every document token while reading — InfiniPot §3.3.1 with a question as the catalyst.

Each distillation scores every entry the pot holds with the question's attention beyond the template's
(`relevance`, scoring/capture.py); a token is scored by every distillation that finds it in the pot, and
evicted after the last. The record keeps, for each document token, the highest score any of them gave it:

    best   (T,) float32    the shared score (the scorer's mean over the deeper layers and the heads), -inf where
                           no distillation scored the token (a document that never filled the pot)
    layers (L, T) float32  with `per_layer`: each layer's head-mean relevance, the same maximum (probes only)

4 bytes a token (4 L bytes with `per_layer`), grown as the read goes on. It describes one read with one
question (`question`): a question asked after the read has no record (`best` stays empty). `ask DOC Q` keeps
one (Session.start with the question as the catalyst), and its best passage is the answer's last evidence passage
(answer/answering.py `with_read`); `units` pools it over the evidence's units:

    units(src, seg, K, n) -> (K,) float   each unit's mean record over its tokens, shifted above 0 (0: unscored)
"""

from __future__ import annotations

import torch


class RelevanceRecord:
    def __init__(self, per_layer: bool = False, question: str | None = None):
        self.per_layer = per_layer
        self.question = question                  # the question the read was scored with
        self.best = torch.empty(0)                # (T,)
        self.layers: torch.Tensor | None = None   # (L, T)

    def _grow(self, n: int, num_layers: int, device) -> None:
        if self.best.numel() >= n:
            return
        size = max(n, 2 * self.best.numel(), 4096)
        best = torch.full((size,), float("-inf"), device=device)
        best[:self.best.numel()] = self.best.to(device)
        self.best = best
        if self.per_layer:
            layers = torch.full((num_layers, size), float("-inf"), device=device)
            if self.layers is not None:
                layers[:, :self.layers.shape[1]] = self.layers.to(device)
            self.layers = layers

    def observe(self, src: torch.Tensor, shared: torch.Tensor, rel: torch.Tensor) -> None:
        """src (N,) document token positions of the scored entries (negative: the pinned header, skipped);
        shared (N,) the scorer's score of each; rel (L, H, N) the question relevance per layer and KV head."""
        doc = src >= 0
        src, shared = src[doc], shared[doc].float()
        if not src.numel():
            return
        self._grow(int(src.max()) + 1, rel.shape[0], shared.device)
        self.best.scatter_reduce_(0, src, shared, "amax")
        if self.per_layer:
            per = rel[..., doc].float().mean(1)                                    # (L, N)
            self.layers.scatter_reduce_(1, src.expand(per.shape[0], -1), per, "amax")

    def scores(self, n: int) -> torch.Tensor | None:
        """(n,) the record over the first n document tokens (-inf where unscored), or None when nothing was
        scored."""
        if not self.best.numel() or not torch.isfinite(self.best).any():
            return None
        out = torch.full((n,), float("-inf"))
        k = min(n, self.best.numel())
        out[:k] = self.best[:k].cpu()
        return out

    def units(self, src: torch.Tensor, seg: torch.Tensor, K: int, n: int) -> torch.Tensor | None:
        """(K,) each document unit's mean record over its scored tokens (src (T,) document positions, seg (T,) the
        unit of each; `n` tokens read), shifted so that every scored unit is above 0 and a unit with no scored
        token is 0; None when nothing was scored (a document that never filled the pot)."""
        best = self.scores(n)
        if best is None:
            return None
        tok = best[src.clamp(0, n - 1)]                                           # (T,)
        scored = torch.isfinite(tok)
        if not scored.any():
            return None
        floor = float(tok[scored].min())
        total = torch.zeros(K).scatter_add(0, seg[scored], tok[scored] - floor + 1e-6)
        count = torch.zeros(K).scatter_add(0, seg[scored], torch.ones(int(scored.sum())))
        return torch.where(count > 0, total / count.clamp_min(1), torch.zeros(K))
