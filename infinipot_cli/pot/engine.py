"""The Continual Context Distillation loop — InfiniPot §3.2 (Figure 1b).

    header (pinned) -> [ chunk ... until the pot is full | + catalyst -> score -> keep C + CR-RoPE ] * -> prompt -> answer

Tokens are fed in any number of pieces (`feed`); the engine forwards them through the model over the pot in
chunks of at most `chunk` tokens. When the next tokens would overflow the pot (M entries, catalyst included),
the last piece that fits is forwarded together with the catalyst prompt, the policy picks C entries per
(layer, KV head), the catalyst is dropped and the kept keys are re-rotated to positions 0..C-1. Memory never
exceeds M entries per head, whatever the length of the document.

The engine reports progress as `Event`s to a callback, so a display or a benchmark follows it without
reaching into it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import torch

from .answer_steps import AnswerSteps
from .archive import Archive
from .config import PotConfig, catalyst_room, check_catalyst_room, split_method_spec  # noqa: F401 - re-exported
from ..runtime.devices import Clock, Tally, to_device
from ..runtime.graphs import Graphs
from ..runtime.loading import with_cache
from ..errors import UsageError
from ..interrupts import deferred_interrupt
from .pot import MemoryPot, shared_row
from .scoring import capture as cap_scores
from .scoring.focus import Focus
from .scoring.nuc import novelty
from .scoring.policies import make_policy
from .scoring.policy import SelectionInputs
from .scoring.expected import TOP as EXPECT_TOP, ExpectedWords
from .scoring.record import RelevanceRecord
from .scoring.segments import BoundaryTable, unit_starts
from .spread import spread_select


def where_at(provenance: list, index: int) -> str:
    """The label of document token `index`: provenance is [(first token index, label)] in reading order."""
    w = ""
    for start, label in provenance:
        if start > index:
            break
        w = label
    return w


@dataclass
class Event:
    kind: str                      # "forward" | "read" | "distill" | "answer" | "token" | "done"
    tokens_read: int
    cycles: int
    entries: int                   # pot entries per head now
    pinned: int
    distilled: int
    size: int | None
    where: str
    elapsed_s: float
    kv_bytes: int
    text: str = ""                 # "token": the new text
    chunk: int = 0                 # "forward": document tokens in the forward pass now starting
    # "distill": the document positions the pot holds (negative: the pinned header), in any order and possibly
    # repeated (display.as_sorted_positions sorts them): a view of the pot's metadata, read only by a listener
    kept_src: torch.Tensor | None = None
    focus: str = ""                # where the question's attention has been strongest so far (scoring/focus.py)


class Timings(Tally):
    """Seconds per phase of the reading loop (attributes and `as_dict()`): device time from devices.Clock spans,
    so the timers never wait for the device."""

    def __init__(self):
        super().__init__(("forward", "nuc", "cap", "select", "rerotate", "answer"))


class Engine(AnswerSteps):
    """One reader: a pot, a selection policy and a catalyst. Feed it a document, then `ask` or `summarize`."""

    def __init__(self, model, tokenizer, config: PotConfig, catalyst_ids: list[int] | None = None,
                 on_event: Callable[[Event], None] | None = None, catalyst_focus: tuple[int, int] | None = None):
        self.model = model
        self.tok = tokenizer
        self.cfg = config.validate()
        self.policy = make_policy(config)
        self.catalyst = list(catalyst_ids or [])
        self.catalyst_focus = catalyst_focus  # the question's rows inside the catalyst (prompts.Focus)
        self.boundaries = BoundaryTable(tokenizer)  # sentence ends, for segment selection
        self.on_event = on_event
        self.device = next(model.parameters()).device
        self.clock = Clock(self.device)
        self.pot = MemoryPot(model, config.size if config.bounded else None, accumulate=self.policy.needs_acc)
        self.pending: list[int] = []
        self.tokens_read = 0              # document tokens forwarded into the pot
        self.cycles = 0
        self.prev_hidden: torch.Tensor | None = None  # (d,) last hidden state, predicts the next token
        self.provenance: list[tuple[int, str]] = []   # (first document token index, where)
        self._fed = 0                     # document tokens fed (forwarded + pending)
        self.where = ""
        self.timings = Timings()
        self.graphs = Graphs(self.device)  # CUDA graphs of the chunk forward and the selection (CUDA only)
        self.last_by_nuc: torch.Tensor | None = None  # (L, H, keep - pinned) after each distillation
        self.archive = Archive(config.archive_segment)  # evicted sentences (token ids), for questions asked later (recall)
        # the words the model expected at every position read, from NuC's own products (scoring/expected.py): a
        # later question's words the document lacks find the sentences where the model expected them
        self.expected_words: ExpectedWords | None = ExpectedWords.of(tokenizer) if self.policy.needs_nuc else None
        self.recalled = 0                 # tokens the last answer recalled from the archive
        # (src, tok (N,), header ids): the kept text the last answer was written from (evidence.py reads it)
        self.answered_from: tuple[torch.Tensor, torch.Tensor, list[int]] | None = None
        self._expected: tuple[list[int], tuple[int, int] | None] | None = None  # (prompt, focus): see expect()
        # (prompt, focus, Capture) of the read's last forward: used once, dropped when the pot changes
        self._prepared: tuple | None = None
        self._derived: dict[str, tuple] = {}  # derived(): name -> (key, value)
        # set a RelevanceRecord to keep the question relevance every distillation gave each document token
        # (scoring/record.py; `ask DOC Q` shows its best passage as evidence; it changes nothing the engine keeps)
        self.record: RelevanceRecord | None = None
        # set a Focus to follow where the question's attention is strongest while reading (the live display)
        self.focus: Focus | None = None
        self.focus_where = ""             # the focus's location label, "" until it has one
        self.focus_label: Callable[[int], str] | None = None  # position -> label (default: its piece's, where_at)
        self.t0 = time.perf_counter()
        self._check_room()

    # ---- configuration --------------------------------------------------------------------------
    def derived(self, name: str, key, compute: Callable[[], object]):
        """A value the answer stage derives from the document as read (its evidence units, its key-point
        sentences), computed once by `compute()` and kept while `key` (what it depends on: tokens read, part
        bounds) stays the same."""
        held = self._derived.get(name)
        if held is not None and held[0] == key:
            return held[1]
        value = compute()
        self._derived[name] = (key, value)
        return value

    def _cat_len(self) -> int:
        return len(self.catalyst) if self.policy.catalyst == "prompt" else 0

    def _check_room(self) -> None:
        """The catalyst must leave room to read (sizes themselves are checked by PotConfig.validate)."""
        check_catalyst_room(self.cfg, self._cat_len())

    def set_catalyst(self, ids: list[int], focus: tuple[int, int] | None = None) -> None:
        self.catalyst = list(ids)
        self.catalyst_focus = focus
        self._check_room()

    def listen(self, on_event: Callable[[Event], None] | None) -> None:
        """Report progress to `on_event` from now on (elapsed times count from now)."""
        self.on_event = on_event
        self.t0 = time.perf_counter()

    def expect(self, prompt_ids: list[int] | None, focus: tuple[int, int] | None = None) -> None:
        """The next answer's prompt, known while reading (`ask`). The read's last forward then carries it as
        the catalyst, so the question's last distillation (§3.2) scores the pot from that forward instead of
        a forward of its own after the read: the same attention rows, in one product with the last piece
        rather than a 34-row pass over the whole pot before the first token. None: no prompt expected."""
        self._expected = (list(prompt_ids), focus) if prompt_ids else None

    def drop_pending(self) -> None:
        """Forget tokens fed but not yet forwarded (an interrupted read keeps what the pot holds)."""
        self.pending = []
        self._fed = self.tokens_read

    # ---- reading --------------------------------------------------------------------------------
    def pin(self, ids: list[int]) -> None:
        """Forward the header (chat template start + reading instruction); it is never evicted."""
        assert len(self.pot) == 0, "pin() must come first"
        if self.cfg.bounded and len(ids) >= self.cfg.keep:
            raise UsageError(f"{self.cfg.keep_named()} must exceed the pinned header ({len(ids)} tokens)")
        self._forward(ids, pinned=True)
        self.pot.n_pinned = len(ids)
        self.pot.n_distilled = len(ids)

    def _room(self) -> int:
        if not self.cfg.bounded:
            return 1 << 62
        return self.cfg.size - self._cat_len() - len(self.pot)

    def feed(self, ids: list[int], where: str = "") -> None:
        """Add document tokens; forwards and distills as the pot fills."""
        if not ids:
            return
        if where and (not self.provenance or self.provenance[-1][1] != where):
            self.provenance.append((self._fed, where))
        self._fed += len(ids)
        self.pending.extend(ids)
        chunk = self.cfg.chunk
        while True:
            room = self._room()
            if len(self.pending) > room:  # the pot would overflow: fill it, catalyst, distill
                self.archive.settle(wait=False)  # earlier cycles' evictions, between cycles (archive.py)
                self._fill_and_distill(room)
            elif len(self.pending) > chunk and room > chunk:  # the last piece waits for finish()
                self._forward(self._take(chunk))
            else:
                break

    def finish(self) -> None:
        """Forward whatever is pending (it fits: feed() distills before the pot could overflow); the last piece
        carries the expected prompt as the catalyst of the final distillation when one will run (expect())."""
        while self.pending:
            room = self._room()
            if len(self.pending) > room:
                self._fill_and_distill(room)
            elif len(self.pending) > self.cfg.chunk:
                self._forward(self._take(self.cfg.chunk))
            else:
                self._forward_last(self._take(len(self.pending)))

    def _forward_last(self, ids: list[int]) -> None:
        """The read's last forward, with the expected prompt appended as the final distillation's catalyst when
        the pot will be narrowed for it (a bounded pot already distilled, which the question narrows to
        `final_keep`) and pot + piece + prompt fit in M."""
        exp = self._expected
        if (exp is None or self.policy.catalyst != "prompt" or not self.cfg.bounded or self.cycles == 0
                or len(self.pot) + len(ids) + len(exp[0]) > self.cfg.size):
            self._forward(ids)
            return
        prompt, focus = exp
        _, capt = self._forward(ids, prompt, len(prompt), focus=focus)
        self._prepared = (prompt, focus, capt)
        if (self.record is not None or self.focus is not None) and capt.relevance:  # it scores the last piece too
            pot, L = self.pot, self.pot.num_layers
            npin, S, dev = pot.n_pinned, len(pot), pot.nov.device
            self._note(capt.stack("scores", L, npin, S, dev), capt.stack("relevance", L, npin, S, dev))

    def _take(self, n: int) -> list[int]:
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def _fill_and_distill(self, room: int) -> None:
        chunk = self.cfg.chunk
        while room > chunk:
            self._forward(self._take(chunk))
            room -= chunk
        cat, rows = self.catalyst_for(self.catalyst)
        _, capt = self._forward(self._take(room), cat, rows, focus=self.catalyst_focus)
        self._distill(self.cfg.keep, capt)


    # ---- one forward pass -----------------------------------------------------------------------
    def catalyst_for(self, prompt: list[int]) -> tuple[list[int], int]:
        """(tokens to append, query rows to capture) for a distillation with `prompt` as the catalyst: the prompt
        and all its rows (a CaP policy), nothing and the last row ("last": TOVA), or nothing (no catalyst)."""
        if self.policy.catalyst == "prompt":
            return list(prompt), len(prompt)
        if self.policy.catalyst == "last":
            return [], 1
        return [], 0

    def catalyst_capture(self, cat: list[int], rows: int) -> cap_scores.Capture:
        """The attention the last `rows` query rows of the catalyst `cat` (catalyst_for) give the pot's entries,
        from one forward of `cat` alone over the pot; the catalyst's entries are cropped away afterwards, so the
        pot is left as it was."""
        return self._forward([], cat, rows)[1]

    @torch.no_grad()
    def _forward(self, ids: list[int], cat: list[int] | None = None, rows: int = 0, pinned: bool = False,
                 focus: tuple[int, int] | None = None, src: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, cap_scores.Capture]:
        """Forward `ids` (document or header) [+ catalyst `cat`] over the pot; returns (hidden, capture).

        The document part is recorded in the pot; the catalyst's entries are cropped away afterwards.
        `rows`: capture the attention of the last `rows` query rows (CaP rows / TOVA's last token);
        `focus`: the question's rows among them (question relevance, scoring/capture.py); `src`: (n,) document
        positions of `ids` re-read from the archive (recall): the reading position does not advance.
        """
        pol = self.policy
        cat = list(cat or [])
        n = len(ids)
        inp = ids + cat
        self._prepared = None  # the pot changes: a prepared capture no longer describes it
        if not inp:
            return torch.zeros(0), cap_scores.Capture()
        base_len = len(self.pot)
        recalled = src is not None
        clock = self.clock
        if n and not pinned and not recalled:
            self._emit("forward", chunk=n)  # a display shows the pass's progress until its "read"
        try:  # nothing but the cache changes in here; on any exception (Ctrl-C included) it is cropped back
            if pol.needs_units:  # each id's text flags, from the host list (scoring/segments.BoundaryTable)
                self.boundaries.observe(inp)
            self.pot.reserve(base_len + len(inp))
            t0 = clock.now()
            x = to_device([inp], self.device)  # (1, T): no wait for the device (pinned copy on CUDA)
            focus = focus if pol.relevance and pol.catalyst == "prompt" and rows == len(cat) else None
            hidden, capt = self._model_forward(x, base_len, rows, pol.needs_acc and not pinned, focus)  # (T, d)
            self.timings.add("forward", clock.span(t0))
            self.timings.add("forward", *capt.spans, sign=-1.0)
            self.timings.add("cap", *capt.spans)
            self.pot.note_peak()
            if n:
                ids_t = x[0, :n]
                expect = None  # (ids, logp) (n, EXPECT_TOP): the words expected at these positions
                if pol.needs_nuc and not pinned:  # the NuC timer covers NuC only (0 for policies without it)
                    t1 = clock.now()
                    top = EXPECT_TOP if self.expected_words is not None and not recalled else 0
                    nov = novelty(self.model, self.prev_hidden, hidden[:n], ids_t, sample=self.cfg.nuc_sample,
                                  top=top)
                    if top:
                        nov, *expect = nov
                    self.timings.add("nuc", clock.span(t1))
                else:
                    nov = torch.zeros(n, device=self.device)
                if pinned:
                    src = -1 - torch.arange(n, device=self.device)
                elif not recalled:
                    src = torch.arange(self.tokens_read, self.tokens_read + n, device=self.device)
                last = hidden[n - 1].clone()
            acc = None
            if pol.needs_acc and capt.scores:
                S = base_len + n
                acc = torch.stack([capt.scores[l][:, :S].to(self.pot.device)
                                   for l in range(self.pot.num_layers)])  # (L, H, S)
        except BaseException:
            self.pot.crop(base_len)
            if ids and not pinned and not recalled:
                self.pending = list(ids) + self.pending  # not read: back to the front of the queue
            raise
        with deferred_interrupt():  # commit: metadata, counters and cache length change together
            if n:
                self.pot.append_meta(src, ids_t, nov)
            if n and not recalled:
                self.prev_hidden = last
                if not pinned:
                    if expect is not None:
                        self.expected_words.observe(self.tokens_read, *expect)
                    self.tokens_read += n
                    self.where = where_at(self.provenance, self.tokens_read - 1)
            if acc is not None:
                self.pot.acc = self.pot.acc + acc
            self.pot.crop(base_len + n)
        if not pinned and not recalled and n:
            self._emit("read")
        return hidden, capt

    def _model_forward(self, x: torch.Tensor, base_len: int, rows: int, all_rows: bool,
                       focus: tuple[int, int] | None) -> tuple[torch.Tensor, cap_scores.Capture]:
        """The model's forward of x (1, T) over the pot's first `base_len` entries, its CaP capture open: (hidden
        (T, d), Capture). On CUDA, a chunk forward whose shapes come again (every cycle's: the pot starts each one
        at C entries) is replayed as a CUDA graph (runtime/graphs.py): its keys and values are written into the
        same rows of the same buffer, its capture into the same tensors. Its CaP time then counts as forward."""
        cache, model = self.pot.cache, self.model.model
        from_layer = self.policy.cap_from(self.pot.num_layers)
        if not self.graphs.on or all_rows or not cache.ready:
            with cap_scores.capture(rows=rows, all_rows=all_rows, focus=focus, from_layer=from_layer,
                                    device=self.device) as capt:
                out = model(input_ids=x, use_cache=True, **with_cache(model, cache))
            return out.last_hidden_state[0], capt

        def forward(ids: torch.Tensor):  # the same Python state whenever it runs: the rows from base_len on
            for layer in cache.layers:
                layer.length = base_len
            with cap_scores.capture(rows=rows, focus=focus, from_layer=from_layer) as c:  # host timer: no events
                out = model(input_ids=ids, use_cache=True, **with_cache(model, cache))
            return out.last_hidden_state[0], c.scores, c.relevance, c.stacked, c.stacked_rel

        T = x.shape[1]
        key = ("forward", base_len, T, rows, focus, from_layer, cache.k.data_ptr(), cache.v.data_ptr(), cache.capacity)
        hidden, scores, relevance, stacked, stacked_rel = self.graphs.run(key, forward, (x,))
        for layer in cache.layers:  # what the forward's cache updates did (a replay runs no Python)
            layer.length = base_len + T
        capt = cap_scores.Capture(rows=rows, focus=cap_scores.valid_focus(focus, rows), from_layer=from_layer,
                                  scores=dict(scores), relevance=dict(relevance), stacked=stacked,
                                  stacked_rel=stacked_rel)
        return hidden, capt

    # ---- distillation ---------------------------------------------------------------------------
    @torch.no_grad()
    def _distill(self, keep: int, capt: cap_scores.Capture | None, final: bool = False, general: bool | None = None
                 ) -> None:
        """Keep `keep` entries per (layer, head): pinned header + the policy's choice; CR-RoPE. `final`: the
        distillation before an answer, which the answer undoes: it neither counts as a reading cycle nor archives
        what it evicts (that text is back in the pot after the answer). `general`: the catalyst asks no question
        (default: the reading catalyst's)."""
        pot, pol = self.pot, self.policy
        S = len(pot)
        npin = pot.n_pinned
        if S <= keep:
            return
        clock = self.clock
        t0 = clock.now()
        L, H = pot.num_layers, pot.num_kv_heads
        cap = rel = None
        if pol.catalyst is not None and capt is not None and capt.scores:
            dev = pot.nov.device  # scores are stacked where the pot's metadata is: no host copy per layer
            cap = capt.stack("scores", L, npin, S, dev)  # (L, H, N), zeros below the policy's cap_from
            if capt.relevance:
                rel = capt.stack("relevance", L, npin, S, dev)
                self._note(cap, rel)
        general = self.catalyst_focus is None if general is None else general
        spreads = self._spreads(general)
        rows = slice(0, 1) if pol.share else slice(None)  # shared: every head holds the same entries
        src, tok = pot.src[rows, rows, npin:], pot.tok[rows, rows, npin:]  # (L|1, H|1, N)

        def select(src, tok, nov, cap, rel=None):  # -> (L, H, keep - npin) candidate indices, the NuC share
            # every id the pot holds was observed when it was read (or loaded): the table only indexes
            starts = unit_starts(src, tok, self.boundaries, observed=True) if pol.needs_units else None
            inp = SelectionInputs(budget=keep - npin, n=S - npin, shape=(L, H), nov=nov, cap=cap, rel=rel,
                                  acc=pot.acc[..., npin:] if pol.needs_acc else None, starts=starts)
            if spreads:  # a general read: the budget shared out over the document (spread.py)
                return spread_select(pol, inp, src[:1, :1], self.tokens_read, self.cfg.spread), pol.last_nuc
            return pol.select(inp), pol.last_nuc

        inputs = (src, tok, pot.nov[..., npin:], cap) + ((rel,) if rel is not None else ())
        if self.graphs.on and pol.share and not spreads and not pol.needs_acc and cap is not None:
            # the same shapes every cycle: on CUDA a graph from the second one (runtime/graphs.py); the flags table
            # is brought up to date first and read in place
            lut = self.boundaries.device_table(pot.device) if pol.needs_units else None
            key = ("select", S, keep, npin, rel is not None, None if lut is None else (lut.data_ptr(), lut.shape))
            chosen, pol.last_nuc = self.graphs.run(key, select, inputs)
        else:
            chosen, pol.last_nuc = select(*inputs)
        # for diagnostics (--trace): which kept entries were chosen by NuC rather than by CaP
        self.last_by_nuc = pol.last_nuc.gather(-1, chosen) if pol.last_nuc is not None else None
        row = shared_row(chosen)
        if row is not None:  # one row for every (layer, head): kept expanded, so pot.keep knows it without a look
            idx = torch.cat([torch.arange(npin, device=row.device), row + npin]).view(1, 1, -1).expand(L, H, -1)
        else:
            idx = torch.cat([torch.arange(npin, device=chosen.device).view(1, 1, -1).expand(L, H, npin), chosen + npin], -1)
        t1 = clock.now()
        self.timings.add("select", clock.span(t0, t1))
        with deferred_interrupt():  # the distilled pot, the archive and the cycle count change together
            if self.tok is not None and not final:  # sentence units need the tokenizer's text
                self.archive.record_eviction(pot.src, pot.tok, idx, self.boundaries)
            pot.keep(idx, rerotate=pol.rerotate)
            self.cycles += not final
        self.timings.add("rerotate", clock.span(t1))
        self._emit("distill", kept_src=pot.src[0, 0] if row is not None else pot.src)

    def _note(self, cap: torch.Tensor, rel: torch.Tensor) -> None:
        """Hand the question's scores of the pot's entries (cap, rel: (L, H, N) over the unpinned entries) to the
        record and the focus, where they are set."""
        pol, pot = self.policy, self.pot
        if (self.record is None and self.focus is None) or not getattr(pol, "share", False) \
                or not hasattr(pol, "scorer"):
            return
        npin = pot.n_pinned
        src = pot.src[0, 0, npin:npin + rel.shape[-1]]                   # (N,) the shared policy's one row
        shared = pol.scorer.score(cap, pot.nov[..., npin:npin + rel.shape[-1]], rel).cap.reshape(-1)  # (N,)
        if self.record is not None:
            self.record.observe(src, shared, rel)
        if self.focus is not None and self.focus.observe(src, shared):
            pos = self.focus.pos
            self.focus_where = self.focus_label(pos) if self.focus_label else where_at(self.provenance, pos)

    def _spreads(self, general: bool) -> bool:
        """Position-balanced selection: a general read (the catalyst has no question) of a shared, sentence-unit
        InfiniPot policy with `spread` stretches."""
        pol = self.policy
        return (bool(self.cfg.spread) and general and pol.catalyst == "prompt" and pol.share
                and getattr(pol, "segment", 0) > 0 and pol.pot_options)

    # ---- state (pot files, resume) ---------------------------------------------------------------
    def state(self) -> tuple[dict[str, torch.Tensor], dict]:
        """Everything needed to resume this reader: tensors (CPU) and JSON-able facts. potfile.py stores them."""
        pot = self.pot
        lengths = pot.layer_lengths() if pot.cache_len() else []
        if pot.cache_len() != len(pot) or any(n != len(pot) for n in lengths):
            raise RuntimeError(f"inconsistent pot: the cache holds {max(lengths, default=0)} entries, the metadata "
                               f"{len(pot)}")
        tensors: dict[str, torch.Tensor] = {}
        for i, layer in enumerate(pot.cache.layers if pot.cache_len() else []):
            tensors[f"layers.{i}.keys"] = layer.keys.detach().cpu().contiguous()      # (1, H_kv, S, D)
            tensors[f"layers.{i}.values"] = layer.values.detach().cpu().contiguous()  # (1, H_kv, S, Dv)
        tensors["src"] = pot.src.cpu().long().contiguous()   # (L, H_kv, S)
        tensors["tok"] = pot.tok.cpu().long().contiguous()   # (L, H_kv, S)
        tensors["nov"] = pot.nov.cpu().float().contiguous()  # (L, H_kv, S)
        if pot.acc is not None:  # H2O's accumulated attention (L, H_kv, S)
            tensors["acc"] = pot.acc.cpu().float().contiguous()
        tensors["catalyst"] = torch.tensor(self.catalyst, dtype=torch.long)
        tensors["pending"] = torch.tensor(self.pending, dtype=torch.long)
        if self.prev_hidden is not None:
            tensors["prev_hidden"] = self.prev_hidden.detach().cpu().contiguous().clone()  # (d,)
        tensors.update(self.archive.tensors())  # archive.ids (T,) int32, archive.segs (K, 2): evicted sentences
        if self.expected_words is not None:
            tensors.update(self.expected_words.tensors())  # expected.ids (W, KEEP) int32
        facts = {"config": self.cfg.as_dict(), "tokens_read": int(self.tokens_read), "cycles": int(self.cycles),
                 "entries": len(pot), "n_pinned": int(pot.n_pinned), "n_distilled": int(pot.n_distilled),
                 "peak_entries": int(pot.peak_entries), "layers": pot.num_layers, "kv_heads": pot.num_kv_heads,
                 "cache_layers": len(pot.cache.layers) if pot.cache_len() else 0, "kv_bytes": int(pot.kv_bytes()),
                 "fed": int(self._fed), "pending": len(self.pending), "where": self.where,
                 "provenance": [[int(s), str(w)] for s, w in self.provenance],
                 "archive": {"segments": len(self.archive), "tokens": self.archive.tokens}}
        return tensors, facts

    @classmethod
    def from_state(cls, model, tokenizer, tensors: dict[str, torch.Tensor], facts: dict,
                   catalyst_focus: tuple[int, int] | None = None) -> "Engine":
        """The reader `state()` described, on `model` (already checked to be the model that made it)."""
        eng = cls(model, tokenizer, PotConfig.from_saved(facts.get("config") or {}),
                  catalyst_ids=tensors["catalyst"].tolist(), catalyst_focus=catalyst_focus)
        pot = eng.pot
        dtype = next(model.parameters()).dtype
        for i in range(int(facts.get("cache_layers", 0))):
            k = tensors[f"layers.{i}.keys"].to(device=eng.device, dtype=dtype)
            v = tensors[f"layers.{i}.values"].to(device=eng.device, dtype=dtype)
            pot.cache.update(k, v, i)
        pot.src, pot.tok, pot.nov = (tensors[k].to(pot.device) for k in ("src", "tok", "nov"))
        if pot.acc is not None:  # a policy that accumulates attention: the file's (a pot saved without it: zeros)
            acc = tensors.get("acc")
            pot.acc = acc.to(pot.device) if acc is not None else torch.zeros_like(pot.nov)
        if eng.policy.needs_units:  # a distillation's table() only indexes: every id the pot holds is observed
            eng.boundaries.observe(tensors["tok"].unique().tolist())
        pot.n_pinned = int(facts["n_pinned"])
        pot.n_distilled = int(facts.get("n_distilled", len(pot)))
        pot.peak_entries = int(facts.get("peak_entries", len(pot)))
        eng.tokens_read = int(facts["tokens_read"])
        eng.cycles = int(facts.get("cycles", 0))
        ph = tensors.get("prev_hidden")
        eng.prev_hidden = ph.to(device=eng.device, dtype=dtype) if ph is not None else None
        eng.provenance = [(int(s), str(w)) for s, w in facts.get("provenance", [])]
        eng.pending = tensors["pending"].tolist()
        eng._fed = int(facts.get("fed", eng.tokens_read + len(eng.pending)))
        eng.where = str(facts.get("where", ""))
        if eng.expected_words is not None:  # pots saved before it was kept have none
            eng.expected_words.restore(tensors)
        if "archive.segs" in tensors:  # pots saved before the archive existed have none
            eng.archive = Archive.from_tensors(tensors["archive.ids"], tensors["archive.segs"],
                                               eng.cfg.archive_segment)
        return eng

    # ---- events ---------------------------------------------------------------------------------

    def _emit(self, kind: str, text: str = "", kept_src=None, chunk: int = 0) -> None:
        if self.on_event is None:
            return
        pot = self.pot
        self.on_event(Event(kind=kind, tokens_read=self.tokens_read, cycles=self.cycles, entries=len(pot),
                            pinned=pot.n_pinned, distilled=pot.n_distilled, size=self.cfg.size if self.cfg.bounded else None,
                            where=self.where, elapsed_s=time.perf_counter() - self.t0, kv_bytes=pot.kv_bytes(),
                            text=text, kept_src=kept_src, chunk=chunk, focus=self.focus_where))
