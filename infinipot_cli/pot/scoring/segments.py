"""Sentence segments: keep whole sentences, not scattered tokens (beyond the paper; cf. ChunkKV, 2025).

InfiniPot's selection (§3.3.3) ranks single tokens. On a small model that leaves a pot of shards: dozens of
1–3 token fragments (" the", " had") between kept passages, which the model then reads badly (the
lighthouse story, where the pot held the answer sentence and the model still answered wrongly). A
sliding mean over neighbouring candidates (the older ``span`` option) keeps spans, but it averages a kept
span's edge tokens with whatever unrelated entry sits next to it in the pot after a distillation, so every
kept span erodes from its edges, cycle after cycle: at 128K tokens a pass-key needle went 25 -> 18 -> 16 ->
11 -> 4 tokens over ~115 cycles and was lost.

Segments are defined in *document* coordinates, so nothing ever mixes entries across a gap:

    a new segment starts where the document position jumps (an evicted stretch lies between two entries),
    or after a sentence or paragraph end, or where a long run is split into near-equal pieces of at most
    `max_len` entries. A paragraph ends at a blank line (a single newline is not an end: PDFs and plain text
    wrap lines inside sentences). A sentence ends at '.', '!' or '?' (closing quotes and brackets after it stay
    with it) only when whitespace follows and the next text does not start with a digit, and, for '.', when
    the word before it is neither a known abbreviation ("Dr", "etc", "e.g") nor a single
    letter (initials "J. R. R.", "U.S."): "4.19.0", "1.5", "X.680", "Override.xml", "Dr. Smith" stay whole.
    Chinese and Japanese "。", "！", "？" end a sentence with no space after them.
    This is decided from the texts of neighbouring entries, with per-token-id lookup tables (vectorised, any
    tokenizer: a token may hold ".", ".\n", '."' or "Dr." alone).

A segment's score is the mean of its entries' scores; selection takes whole segments, best first, while
they fit the budget, then smaller whole segments further down the ranking into the room left, and only the
last few slots with single entries of the worst-ranked segments (so every head keeps exactly the budget --
CR-RoPE needs the same count in every head -- and no well-ranked sentence is cut mid-way).

    starts (R, N) bool  entry i begins a unit (a gap or a sentence start), R rows = (layer, head) pairs
    score  (R, N)       per-entry score
"""

from __future__ import annotations

import torch

from ...runtime.devices import count_or_bound, on_host

SENTENCE_END = (".", "!", "?", "\u061f", "\u06d4")  # and Arabic's question mark and Urdu's full stop
WIDE_END = ("\u3002", "\uff01", "\uff1f")  # Chinese and Japanese 。！？: a sentence end with no space after it
PARAGRAPH_END = "\n\n"
CLOSERS = "\"')]}\u00bb\u201d\u2019"
OPENERS = "\"'([{\u00ab\u201c\u2018"  # after whitespace: the next sentence's first character
# Words that end with a '.' inside a sentence (lowercase, without their last '.'); single letters count too.
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof sr jr st mt vs etc e.g i.e eg ie cf al fig figs vol vols ch chap sec pp eds approx ca "
    "inc ltd corp dept jan feb mar apr jun jul aug sep sept oct nov dec gen col capt lt sgt rev hon gov pres "
    "op viz resp incl nr ref refs eq eqs app para art".split())
# Per token id flags (columns of the lookup table):
_F = ("term", "dot", "ws_after", "para", "nl_end", "lead_ws", "lead_nl", "space_only", "lead_digit",
      "word_dot", "abbr_self", "abbr_word", "closer", "blank", "wide", "letter_self", "letter", "tail_alnum")


def is_abbr(word: str) -> bool:
    """Whether `word` (without its dot) is an abbreviation a sentence does not end on: one letter, or one of
    ABBREVIATIONS."""
    w = word.lower()
    return (len(w) == 1 and w.isalpha()) or w in ABBREVIATIONS


def token_flags(text: str) -> tuple[bool, ...]:
    """The _F flags of one token's text."""
    body = text.rstrip()
    core = body.rstrip(CLOSERS + "\u300d\u300f")  # 」』 close a quotation in Chinese and Japanese
    wide = bool(core) and core[-1] in WIDE_END
    term = bool(core) and (core[-1] in SENTENCE_END or wide)
    dot = term and core[-1] == "."
    first = text.lstrip()[:1]
    before = core[:-1] if dot else ""
    i = len(before)
    while i > 0 and (before[i - 1].isalnum() or before[i - 1] == "."):
        i -= 1
    word = before[i:].strip(".")
    stripped = text.strip()
    initial = _initial(word)
    return (term, dot, term and body != text, PARAGRAPH_END in text, text.rstrip(" \t").endswith("\n"),
            text[:1].isspace(), text.lstrip(" \t")[:1] == "\n", bool(text) and not text.strip(" \t"),
            first.isdigit(), bool(word), bool(word) and (_known_abbr(word) or (initial and i > 0)),
            stripped.isalpha() and _known_abbr(stripped),
            bool(stripped) and not text[:1].isspace() and not stripped.strip(CLOSERS),
            not text.strip(" \t\n\r.!?,;:\"'()[]") and not (text[:1].isspace() and bool(stripped) and stripped[0] in OPENERS),
            wide, initial and i == 0, _initial(stripped) and stripped == text.lstrip(), text[-1:].isalnum())


def _known_abbr(word: str) -> bool:
    return word.lower() in ABBREVIATIONS


def _initial(word: str) -> bool:
    """A single Latin letter: an initial ("J. R. R.", "U.S.") when it is a word by itself. Other scripts' tokens
    are often single letters of a longer word (a byte-level vocabulary splits Arabic or Hebrew words into
    letters), and their sentences do not use Latin initials."""
    return len(word) == 1 and word.isascii() and word.isalpha()


class BoundaryTable:
    """Per token id text flags (token_flags), each id decoded once, lazily (any vocabulary size).

    The flags live in a dense table, a row per token id (ids not classified yet: all False), kept on every device
    a pot uses. On the CPU `table` classifies the ids it is given first; on an accelerator it only indexes (finding
    the new ids would read them on the host, a wait for the device): there the engine classifies every id when it
    is read (`observe`, from the host list it forwards), so every id a pot holds is known. The engine's
    distillation says so (`observed=True`) and only indexes on the CPU too: no host read inside a cycle."""

    def __init__(self, tokenizer):
        self.tok = tokenizer
        self._known: dict[int, tuple[bool, ...]] = {}
        self._rows = torch.zeros(0, len(_F), dtype=torch.bool)  # (ids, F) on the host
        self._on: dict = {}  # device -> (version, its copy of _rows)
        self._version = 0

    def _classify(self, ids: list[int]) -> None:
        new = [i for i in dict.fromkeys(ids) if i not in self._known]
        if not new:
            return
        batch = getattr(self.tok, "batch_decode", None)
        texts = batch([[i] for i in new]) if batch else [self.tok.decode([i]) for i in new]
        top = max(new) + 1
        if top > self._rows.shape[0]:
            grown = torch.zeros(max(top, 2 * self._rows.shape[0]), len(_F), dtype=torch.bool)
            grown[:self._rows.shape[0]] = self._rows
            self._rows = grown
        for i, text in zip(new, texts):
            self._known[i] = token_flags(text)
        self._rows[torch.tensor(new)] = torch.tensor([self._known[i] for i in new], dtype=torch.bool)
        self._version += 1

    def observe(self, ids: list[int]) -> None:
        """Classify the ids of a piece about to be read (host ints), so a later `table` on an accelerator knows them."""
        self._classify(ids)

    def _lut(self, device) -> torch.Tensor:
        """The (ids, F) table on `device`, brought up to date after new ids were classified: copied in place while
        it keeps its size (without waiting: pinned memory), so a CUDA graph that reads it reads the new flags; a
        new tensor when it grew. On the CPU the host table itself."""
        from ...runtime.devices import to_device

        got = self._on.get(device)
        if got is None or got[0] != self._version:
            rows, table = self._rows, None if got is None else got[1]
            if table is not None and table is not rows and table.shape == rows.shape:
                table.copy_(rows.pin_memory() if table.device.type == "cuda" else rows, non_blocking=True)
            else:
                table = to_device(rows, device, torch.bool)
            got = self._on[device] = (self._version, table)
        return got[1]

    def device_table(self, device) -> torch.Tensor:
        """The (ids, F) flags table `table()` indexes on `device`, up to date (`_lut`)."""
        return self._lut(torch.device(device) if not isinstance(device, torch.device) else device)

    def table(self, tok: torch.Tensor, observed: bool = False) -> dict[str, torch.Tensor]:
        """{flag name: bool tensor shaped like `tok`} for every flag in _F. `observed`: every id of `tok` was
        `observe`d already (the engine's pot), so nothing is classified (nor read) here."""
        if on_host(tok) and not observed:
            self._classify(tok.unique().tolist())
        lut = self._lut(tok.device)
        rows = lut[tok.clamp(0, max(lut.shape[0] - 1, 0))] if lut.shape[0] else \
            torch.zeros(*tok.shape, len(_F), dtype=torch.bool, device=tok.device)  # (..., N, F)
        return {name: rows[..., k] for k, name in enumerate(_F)}

    def flags(self, tok: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(term, blank): the token ends with '.', '!' or '?' (before closing quotes/brackets); it is only
        punctuation or whitespace."""
        f = self.table(tok)
        return f["term"], f["blank"]


def _next(x: torch.Tensor, fill: bool = False) -> torch.Tensor:
    return torch.cat([x[..., 1:], torch.full_like(x[..., :1], fill)], -1)


def _prev(x: torch.Tensor, fill: bool = False) -> torch.Tensor:
    return torch.cat([torch.full_like(x[..., :1], fill), x[..., :-1]], -1)


def sentence_ends(src: torch.Tensor, tok: torch.Tensor, table: BoundaryTable, observed: bool = False) -> torch.Tensor:
    """(..., N) bool: entry i ends a sentence or a paragraph (the module docstring's rules), judged from the
    texts of entries i-1, i, i+1, i+2 where their document positions are consecutive (`observed`: as in
    BoundaryTable.table)."""
    f = table.table(tok, observed)
    adj = torch.zeros_like(src, dtype=torch.bool)
    adj[..., 1:] = src[..., 1:] == src[..., :-1] + 1       # entry i directly follows entry i-1 in the document
    adj_next = _next(adj)                                  # entry i+1 directly follows entry i
    # closing quotes / brackets right after a sentence end carry it: '.' '"' -> the end is at '"'
    carry = f["closer"] & adj & _prev(f["term"])
    term = f["term"] | carry
    dot = f["dot"] | (carry & _prev(f["dot"]))
    joined = ~f["lead_ws"] & _prev(f["tail_alnum"]) & adj  # the token goes on the word before it ("ca" + "t.")
    alone = f["letter"] & ~joined            # a single-letter token that is a whole word: an initial
    abbr = torch.where(f["word_dot"], f["abbr_self"] | (f["letter_self"] & ~joined),  # the word before the '.'
                       (_prev(f["abbr_word"]) | _prev(alone)) & adj)
    abbr = abbr | (carry & _prev(abbr))
    nxt_ws = _next(f["lead_ws"]) & adj_next
    skip = _next(f["space_only"])                           # a lone " " token: look one further
    nxt_digit = _next(f["lead_digit"]) | (skip & _next(_next(f["lead_digit"])))
    follows = f["ws_after"] | (nxt_ws & ~nxt_digit)
    wide = f["wide"] | (carry & _prev(f["wide"]))
    sentence = term & (follows | wide) & ~(dot & abbr)
    paragraph = f["para"] | (f["nl_end"] & _next(f["lead_nl"]) & adj_next)
    return sentence | paragraph


def unit_starts(src: torch.Tensor, tok: torch.Tensor, table: BoundaryTable, observed: bool = False) -> torch.Tensor:
    """(..., N) bool: entry i starts a unit — its document position does not follow entry i-1's, or it is the
    first entry with text (not only punctuation / whitespace, which stays with the sentence before it) after a
    sentence or paragraph end. src, tok: (..., N); `observed`: every id was observed (BoundaryTable.table)."""
    ends = sentence_ends(src, tok, table, observed)
    blank = table.table(tok, True)["blank"]  # classified by the line above
    N = src.shape[-1]
    idx = torch.arange(N, device=src.device).expand_as(src)
    gap = torch.ones_like(src, dtype=torch.bool)
    gap[..., 1:] = src[..., 1:] != src[..., :-1] + 1
    content = ~blank
    last_end = torch.where(ends, idx, torch.full_like(idx, -1)).cummax(-1).values
    last_text = torch.where(content | gap, idx, torch.full_like(idx, -1)).cummax(-1).values
    after_end = _prev(last_end, -1) >= 0
    after_end &= _prev(last_end, -1) >= _prev(last_text, -1)
    return gap | (content & after_end)


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
    """Per row: (mean score, length) of every segment, (R, S_max) padded with (-inf, 0).

    Segments are numbered 0.. along each row, at most one per entry, so N bounds their count without reading it.
    One row (the shared selection, every layer and head the same) always takes that bound: its columns are then
    known without a host read on any device. Several rows (a per-head selection) take the count where reading it
    is free (the CPU), which keeps their first-fit tables (`first_fit`) small."""
    R, N = seg.shape
    S = (N if R == 1 else count_or_bound(lambda: seg.max() + 1, N, seg)) if seg.numel() else 0
    total = torch.zeros(R, S, dtype=torch.float32, device=seg.device).scatter_add_(-1, seg, score.float())
    count = torch.zeros(R, S, dtype=torch.float32, device=seg.device).scatter_add_(-1, seg, torch.ones_like(score, dtype=torch.float32))
    mean = torch.where(count > 0, total / count.clamp_min(1), torch.full_like(total, float("-inf")))
    return mean, count.long()


def first_fit(olen: torch.Tensor, free: torch.Tensor, room: torch.Tensor, width: int) -> torch.Tensor:
    """The greedy first-fit scan, with no loop over its takes: per row, walking the columns in order, column c is
    taken when `free[c]` and its length `olen[c]` fits the room left, which each take shrinks by `olen[c]`.

        olen (R, S) int64 >= 1 where free   free (R, S) bool   room (R,) int64, 0 <= room < width
        returns (R, S) bool, the columns taken

    Each column maps the room before it to the room after it: r -> r - olen[c] if free[c] and olen[c] <= r, else
    r, over the `width` room values (a table (R, S, width)). The room before column c is the composition of the
    maps of columns 0..c-1 applied to `room`; the prefix compositions come from ceil(log2 S) rounds of doubling
    (Hillis-Steele: round d composes each column's map with the one d columns before it, one gather), so the scan is
    a fixed number of tensor operations whatever is taken, and no value is read on the host. The same columns as
    taking one at a time, bit for bit: each map is the exact step of that walk."""
    R, S = olen.shape
    if S == 0:
        return torch.zeros_like(free)
    rooms = torch.arange(width, dtype=torch.int32, device=olen.device)             # (W,) every room value
    o = olen.to(torch.int32)[..., None]                                             # (R, S, 1)
    maps = rooms - o * (free[..., None] & (o <= rooms))                             # (R, S, W) room after c, int32
    d = 1
    while d < S:  # maps[c] becomes the composition of the maps of columns max(0, c - 2d + 1)..c
        maps[:, d:] = maps[:, d:].gather(-1, maps[:, :-d])
        d *= 2
    r0 = room.to(torch.int32)
    after = maps.gather(-1, r0.view(R, 1, 1).expand(R, S, 1))[..., 0]              # (R, S) room after column c
    before = torch.cat([r0[:, None], after[:, :-1]], -1)                            # (R, S) room before column c
    return free & (olen <= before)


def take_segments(seg: torch.Tensor, score: torch.Tensor, budget: torch.Tensor, taken: torch.Tensor,
                  exact: bool, longest: int | None = None) -> torch.Tensor:
    """Add whole segments to `taken` (R, N) bool, best mean `score` first, up to `budget` (R,) more entries.

    Segments with any taken entry are skipped. exact=False: the best segments while they fit (a prefix of the
    ranking), the rest of the budget is left unused. exact=True: every segment down the ranking that still fits
    the remaining budget is taken whole (smaller ones further down fill the room a big one leaves), and only
    what no whole free segment fits is filled with single entries, taken from the *worst*-ranked free segments
    -- so a well-ranked sentence at the budget's edge is kept whole or not at all, never cut mid-way,
    and exactly `budget` entries are added (when enough are left). `longest`: no segment is longer (default: N).
    Returns the new `taken`.

    A fixed sequence of tensor operations, the same on every device, with no value read on the host for one row
    (the shared selection): segments ranked by a stable sort (equal means in segment order, whatever the device
    and the padding), the prefix that fits from one cumsum and one mask, the smaller segments down the ranking
    from `first_fit` (the room after the prefix is shorter than the first segment that did not fit, so below
    `longest`), the last entries from one top-k of at most `longest`.
    """
    R, N = seg.shape
    out = taken.clone()
    mean, length = segment_means(seg, score)
    busy = torch.zeros_like(length).scatter_add_(-1, seg, taken.long()) > 0  # segment already (partly) taken
    mean = mean.masked_fill(busy | (length == 0), float("-inf"))
    order = torch.sort(mean, dim=-1, descending=True, stable=True).indices    # (R, S), free segments first
    valid = mean.gather(-1, order) > float("-inf")
    olen = length.gather(-1, order)                                           # (R, S) lengths in rank order
    cum = olen.cumsum(-1)
    fits = (cum <= budget[:, None]) & valid                                   # prefix of segments that fit
    longest = min(N, longest or N)
    if exact:
        # smaller segments further down the ranking, first fit: past the prefix, each one that fits the room left
        left = budget - (cum * fits).max(-1).values                           # (R,) room after the prefix
        cols = torch.arange(order.shape[-1], device=seg.device)
        past = valid & (cols >= fits.long().sum(-1, keepdim=True))            # (R, S) down the ranking, free
        # no free segment past the prefix when left >= longest (the first one that did not fit is longer than left)
        fits |= first_fit(olen, past, left.clamp(0, longest), longest + 1)
    chosen = torch.zeros_like(mean, dtype=torch.bool).scatter_(-1, order, fits)
    out |= chosen.gather(-1, seg)
    if exact:  # no free whole segment fits what is left (< longest): single entries of the worst-ranked segments
        left = budget - (out.long().sum(-1) - taken.long().sum(-1))           # (R,)
        S = order.shape[-1]
        seg_rank = torch.empty_like(order).scatter_(-1, order, torch.arange(S, device=seg.device).expand(R, S))
        pos = torch.arange(N, device=seg.device).expand(R, N)
        key = seg_rank.gather(-1, seg) * (N + 1) + (N - pos)                  # worst segment, its first entries
        free = ~out & valid.gather(-1, seg_rank).gather(-1, seg)
        key = torch.where(free, key, torch.full_like(key, -1))
        top = key.topk(longest, dim=-1)  # keys are unique: a larger k ranks the same entries first
        ranks = torch.arange(longest, device=seg.device).expand_as(top.indices)
        pick = (top.values >= 0) & (ranks < left[:, None])
        out.scatter_(-1, top.indices, pick | out.gather(-1, top.indices))
    return out
