"""Sentence segments: keep whole sentences, not scattered tokens (beyond the paper; cf. ChunkKV, 2025).

InfiniPot's selection (§3.3.3) ranks single tokens. On a small model that leaves a pot of shards: dozens of
1–3 token fragments (" the", " had") between kept passages, which the model then reads badly (issue 6:
the lighthouse story, where the pot held the answer sentence and the model still answered wrongly). A
sliding mean over neighbouring candidates (the older ``span`` option) keeps spans, but it averages a kept
span's edge tokens with whatever unrelated entry sits next to it in the pot after a distillation, so every
kept span erodes from its edges, cycle after cycle: at 128K tokens a pass-key needle went 25 -> 18 -> 16 ->
11 -> 4 tokens over ~115 cycles and was lost.

Segments are defined in *document* coordinates, so nothing ever mixes entries across a gap:

    a new segment starts where the document position jumps (an evicted stretch lies between two entries),
    or after a sentence or paragraph end ('.', '!', '?' or a blank line in the previous token; a single
    newline is not an end: PDFs and plain text wrap lines inside sentences), or where a long run is split
    into near-equal pieces of at most `max_len` entries.

A segment's score is the mean of its entries' scores; selection takes whole segments, best first, while
they fit the budget, and the first segment that does not fit fills the rest (so every head keeps exactly
the budget: CR-RoPE needs the same count in every head).

    starts (R, N) bool  entry i begins a unit (a gap or a sentence start), R rows = (layer, head) pairs
    score  (R, N)       per-entry score
"""

from __future__ import annotations

import torch

SENTENCE_END = (".", "!", "?")
PARAGRAPH_END = "\n\n"


class BoundaryTable:
    """Which token ids end a sentence or a paragraph; each id is decoded once, lazily (any vocabulary size)."""

    def __init__(self, tokenizer):
        self.tok = tokenizer
        self._known: dict[int, tuple[bool, bool]] = {}

    def _classify(self, ids: list[int]) -> None:
        new = [i for i in ids if i not in self._known]
        if not new:
            return
        batch = getattr(self.tok, "batch_decode", None)
        texts = batch([[i] for i in new]) if batch else [self.tok.decode([i]) for i in new]
        for i, text in zip(new, texts):
            ends = any(c in text for c in SENTENCE_END) or PARAGRAPH_END in text
            blank = not text.strip(" \t\n\r.!?,;:\"'()[]")
            self._known[i] = (ends, blank)

    def flags(self, tok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(ends, blank) bool tensors shaped like `tok`: the token ends a sentence/paragraph; it is only
        punctuation or whitespace (it stays with the sentence before it)."""
        uniq = tok.unique().tolist()
        self._classify(uniq)
        lut_ends = torch.tensor([self._known[i][0] for i in uniq], dtype=torch.bool, device=tok.device)
        lut_blank = torch.tensor([self._known[i][1] for i in uniq], dtype=torch.bool, device=tok.device)
        pos = torch.searchsorted(torch.tensor(uniq, dtype=tok.dtype, device=tok.device), tok.contiguous())
        return lut_ends[pos], lut_blank[pos]


def unit_starts(src: torch.Tensor, tok: torch.Tensor, table: BoundaryTable) -> torch.Tensor:
    """(..., N) bool: entry i starts a unit — its document position does not follow entry i-1's, or entry
    i-1 ended a sentence and entry i is not itself trailing punctuation / whitespace. src, tok: (..., N)."""
    ends, blank = table.flags(tok)
    starts = torch.ones_like(src, dtype=torch.bool)
    gap = src[..., 1:] != src[..., :-1] + 1
    starts[..., 1:] = gap | (ends[..., :-1] & ~blank[..., 1:])
    return starts


def segment_ids(starts: torch.Tensor, max_len: int) -> torch.Tensor:
    """(R, N) segment index per entry (0-based, increasing along N): units split into near-equal pieces of
    at most `max_len` entries (a 50-entry sentence with max_len 48 becomes 25 + 25, not 48 + 2)."""
    R, N = starts.shape
    ar = torch.arange(N, device=starts.device).expand(R, N)
    unit = starts.long().cumsum(-1) - 1                                   # (R, N) unit index
    first = torch.where(starts, ar, torch.zeros_like(ar)).cummax(-1).values  # unit's first entry
    pos = ar - first                                                      # position inside the unit
    length = torch.zeros(R, N, dtype=torch.long, device=starts.device).scatter_add_(-1, unit, torch.ones_like(unit))
    ulen = length.gather(-1, unit)                                        # (R, N) length of own unit
    pieces = (ulen + max_len - 1) // max_len
    piece = pos * pieces // ulen                                          # which piece of the unit
    new = starts.clone()
    new[:, 1:] |= piece[:, 1:] != piece[:, :-1]
    return new.long().cumsum(-1) - 1


def segment_means(seg: torch.Tensor, score: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row: (mean score, length) of every segment, (R, S_max) padded with (-inf, 0)."""
    R, N = seg.shape
    S = int(seg.max()) + 1 if seg.numel() else 0
    total = torch.zeros(R, S, dtype=torch.float32, device=seg.device).scatter_add_(-1, seg, score.float())
    count = torch.zeros(R, S, dtype=torch.float32, device=seg.device).scatter_add_(-1, seg, torch.ones_like(score, dtype=torch.float32))
    mean = torch.where(count > 0, total / count.clamp_min(1), torch.full_like(total, float("-inf")))
    return mean, count.long()


def take_segments(seg: torch.Tensor, score: torch.Tensor, budget: torch.Tensor, taken: torch.Tensor,
                  exact: bool) -> torch.Tensor:
    """Add whole segments to `taken` (R, N) bool, best mean `score` first, up to `budget` (R,) more entries.

    Segments with any taken entry are skipped. exact: the first segment that does not fit contributes its
    first entries, so exactly `budget` entries are added (when enough are left); otherwise only whole
    segments are taken and the rest of the budget is left unused. Returns the new `taken`.
    """
    R, N = seg.shape
    out = taken.clone()
    mean, length = segment_means(seg, score)
    busy = torch.zeros_like(length).scatter_add_(-1, seg, taken.long()) > 0  # segment already (partly) taken
    mean = mean.masked_fill(busy | (length == 0), float("-inf"))
    order = mean.argsort(-1, descending=True)                                 # (R, S), free segments first
    valid = mean.gather(-1, order) > float("-inf")
    cum = length.gather(-1, order).cumsum(-1)
    fits = (cum <= budget[:, None]) & valid                                   # prefix of segments that fit
    chosen = torch.zeros_like(mean, dtype=torch.bool).scatter_(-1, order, fits)
    out |= chosen.gather(-1, seg)
    if exact:
        nfit = fits.long().sum(-1)
        used = (cum * fits).max(-1).values                                    # entries taken by whole segments
        rest = budget - used                                                  # (R,)
        has_next = (nfit < valid.long().sum(-1)) & (rest > 0)
        part = order.gather(-1, nfit.clamp_max(order.shape[-1] - 1)[:, None])  # first segment that does not fit
        in_part = (seg == part) & has_next[:, None]
        rank = in_part.long().cumsum(-1)                                      # 1.. within the partial segment
        out |= in_part & (rank <= rest[:, None])
    return out
