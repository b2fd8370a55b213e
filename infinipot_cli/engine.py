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
from dataclasses import asdict, dataclass, field
from typing import Callable

import torch
from transformers import DynamicCache

from .archive import Archive, recall
from .errors import UsageError
from .pot import MemoryPot
from .scoring import cap as cap_scores
from .scoring.nuc import lm_head_logits, novelty
from .scoring.policies import UNBOUNDED, Policy, SelectionInputs, make_policy
from .scoring.segments import BoundaryTable, unit_starts


@dataclass
class PotConfig:
    size: int = 2048          # M: entries per (layer, KV head)
    keep: int = 1024          # C: entries kept by a distillation (pinned header included)
    alpha: float = 0.5        # NuC share of the kept slots
    method: str = "infinipot"
    chunk: int = 1024         # most tokens per forward pass
    pool: int = 0             # InfiniPot option: max-pool CaP scores over neighbours
    nuc_decay: float = 1.0    # InfiniPot option: age stored novelty per cycle
    recent: int = 0           # InfiniPot option: always keep the last N entries
    span: int = 0             # InfiniPot option: sliding-mean token scores over N neighbours (with segment=0)
    share: bool = True        # InfiniPot option: one score per entry shared by all layers and heads; False = paper
    share_from: float = 0.5   # InfiniPot option: the shared score averages the layers from this depth on (0 = all)
    relevance: bool = True    # InfiniPot option: with CaP-Q, rank by question relevance (question minus template)
    segment: int = 48         # InfiniPot option: keep whole sentence segments of at most N entries; 0 = tokens
    rel_share: float = 1.0    # InfiniPot option: with relevance, its share of the CaP slots (the rest: the CaP sum)
    final_keep: int = 512     # InfiniPot option: before answering a question, distill to N entries with it;
                              # 0 = only when the pot is too full (the paper)
    reencode: bool = True     # InfiniPot option: answer a question from a fresh prefill of the pot's tokens
                              # (when every layer and head holds the same ones); False = from the pot's KV (paper)
    recall: int = 1024        # InfiniPot option: a question the pot was not read with first recalls up to N
                              # tokens of evicted sentences from the archive (archive.py); 0 = off (the paper)

    def policy(self) -> Policy:
        opts = {}
        if self.method in ("infinipot", "cap"):
            opts = {"pool": self.pool, "nuc_decay": self.nuc_decay, "recent": self.recent, "span": self.span,
                    "share": self.share, "share_from": self.share_from, "relevance": self.relevance,
                    "segment": self.segment, "rel_share": self.rel_share}
        return make_policy(self.method, alpha=self.alpha, **opts)

    @property
    def bounded(self) -> bool:
        return self.method not in UNBOUNDED

    @classmethod
    def from_spec(cls, spec: str, **kw) -> "PotConfig":
        """A method spec: a policy name with optional InfiniPot options, e.g. "infinipot-paper+recent=64"."""
        base, opts = split_method_spec(spec)
        return cls(method=base, **{**kw, **opts})


# The paper's exact selection (InfiniPot §3.3.3: per-head top-k of single tokens by the CaP sum), as the method
# "infinipot-paper". Our defaults differ, measured on the needle bench and on real prose (issue 6, README
# "Needle in a haystack"): segment=48 (keep whole sentences, in document coordinates), relevance=True (with a
# question, rank by the question's attention beyond the template's) and share=True with share_from=0.5 (one
# score per entry for every layer and head, from the deeper half of the layers) and final_keep=512 (before
# answering a question, one last distillation with it down to 512 entries: fewer look-alike sentences) and
# reencode=True (answer a question from a fresh prefill of the kept tokens instead of their KV states as read:
# on 56 needle cells, 4K-128K, it fixed 6 of the 7 needles held whole but answered wrongly from the KV, broke 1).
PAPER_OPTIONS = {"span": 0, "share": False, "share_from": 0.0, "segment": 0, "relevance": False, "rel_share": 1.0,
                 "final_keep": 0, "reencode": False, "recall": 0}
# The previous default (before sentence segments, question relevance and the final narrowing): a 32-entry
# sliding mean of the CaP sum.
SPAN_OPTIONS = {"span": 32, "segment": 0, "relevance": False, "final_keep": 0, "reencode": False}
ALIASES = {"infinipot-paper": ("infinipot", PAPER_OPTIONS), "cap-paper": ("cap", PAPER_OPTIONS),
           "infinipot-span": ("infinipot", SPAN_OPTIONS)}


def _flag(v: str) -> bool:
    return v.lower() in ("1", "true", "yes", "on")


_SPEC_OPTS = {"alpha": float, "pool": int, "nuc_decay": float, "recent": int, "span": int, "share_from": float,
              "share": _flag, "relevance": _flag, "segment": int, "rel_share": float,
              "final_keep": int, "reencode": _flag, "recall": int}


def split_method_spec(spec: str) -> tuple[str, dict]:
    """"infinipot+span=16+alpha=0.25" -> ("infinipot", {"span": 16, "alpha": 0.25});
    "infinipot-paper+pool=7" -> ("infinipot", {"span": 0, "share": False, "pool": 7})."""
    parts = [p.strip() for p in spec.strip().split("+")]
    base, preset = ALIASES.get(parts[0].lower(), (parts[0].lower(), {}))
    opts = dict(preset)
    for p in parts[1:]:
        key, _, val = p.partition("=")
        key = key.strip().replace("-", "_")
        if key not in _SPEC_OPTS or not val:
            raise UsageError(f"bad method option {p!r} in {spec!r}; options: {', '.join(_SPEC_OPTS)} (e.g. infinipot+span=32)")
        try:
            opts[key] = _SPEC_OPTS[key](val)
        except ValueError as e:
            raise UsageError(f"bad value in {p!r}") from e
    return base, opts


@dataclass
class Event:
    kind: str                      # "read" | "distill" | "answer" | "token" | "done"
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
    kept_src: torch.Tensor | None = None  # "distill": unique document positions still held by some head


@dataclass
class Timings:
    forward: float = 0.0
    nuc: float = 0.0
    cap: float = 0.0
    select: float = 0.0
    rerotate: float = 0.0
    answer: float = 0.0

    def as_dict(self) -> dict:
        return {k: round(v, 4) for k, v in asdict(self).items()}


class Engine:
    def __init__(self, model, tokenizer, config: PotConfig, catalyst_ids: list[int] | None = None,
                 on_event: Callable[[Event], None] | None = None, catalyst_focus: tuple[int, int] | None = None):
        self.model = model
        self.tok = tokenizer
        self.cfg = config
        self.policy = config.policy()
        self.catalyst = list(catalyst_ids or [])
        self.catalyst_focus = catalyst_focus  # the question's rows inside the catalyst (prompts.Focus)
        self.boundaries = BoundaryTable(tokenizer)  # sentence ends, for segment selection
        self.on_event = on_event
        self.device = next(model.parameters()).device
        self.pot = MemoryPot(model, config.size if config.bounded else None)
        self.pending: list[int] = []
        self.tokens_read = 0              # document tokens forwarded into the pot
        self.cycles = 0
        self.prev_hidden: torch.Tensor | None = None  # (d,) last hidden state, predicts the next token
        self.provenance: list[tuple[int, str]] = []   # (first document token index, where)
        self._fed = 0                     # document tokens fed (forwarded + pending)
        self.where = ""
        self.timings = Timings()
        self.last_by_nuc: torch.Tensor | None = None  # (L, H, keep - pinned) after each distillation
        self.archive = Archive()          # evicted sentences (token ids), for questions asked later (recall)
        self.recalled = 0                 # tokens the last answer recalled from the archive
        self.t0 = time.perf_counter()
        self._check_sizes()

    # ---- configuration --------------------------------------------------------------------------
    def _cat_len(self) -> int:
        return len(self.catalyst) if self.policy.catalyst == "prompt" else 0

    def _check_sizes(self) -> None:
        c = self.cfg
        if not c.bounded:
            return
        if c.keep <= 0 or c.size <= 0:
            raise UsageError("--pot-size and --keep must be positive")
        if c.keep >= c.size:
            raise UsageError(f"--keep ({c.keep}) must be smaller than --pot-size ({c.size})")
        if c.size - c.keep - self._cat_len() < 1:
            raise UsageError(
                f"the pot is too small: pot size {c.size} - keep {c.keep} - catalyst {self._cat_len()} tokens "
                "leaves no room to read; raise --pot-size or lower --keep")
        if not 0.0 <= c.alpha <= 1.0:
            raise UsageError("--nuc-ratio must be between 0 and 1")
        if not 0.0 <= c.rel_share <= 1.0:
            raise UsageError("rel_share must be between 0 and 1")
        if c.final_keep < 0:
            raise UsageError("--final-keep must be 0 (off) or more")

    def set_catalyst(self, ids: list[int], focus: tuple[int, int] | None = None) -> None:
        self.catalyst = list(ids)
        self.catalyst_focus = focus
        self._check_sizes()

    # ---- reading --------------------------------------------------------------------------------
    def pin(self, ids: list[int]) -> None:
        """Forward the header (chat template start + reading instruction); it is never evicted."""
        assert len(self.pot) == 0, "pin() must come first"
        if self.cfg.bounded and len(ids) >= self.cfg.keep:
            raise UsageError(f"--keep ({self.cfg.keep}) must exceed the pinned header ({len(ids)} tokens)")
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
                self._fill_and_distill(room)
            elif len(self.pending) >= chunk and room > chunk:
                self._forward(self._take(chunk))
            else:
                break

    def finish(self) -> None:
        """Forward whatever is pending (it fits: feed() distills before the pot could overflow)."""
        while self.pending:
            room = self._room()
            if len(self.pending) > room:
                self._fill_and_distill(room)
            else:
                self._forward(self._take(min(self.cfg.chunk, len(self.pending))))

    def _take(self, n: int) -> list[int]:
        out, self.pending = self.pending[:n], self.pending[n:]
        return out

    def _fill_and_distill(self, room: int) -> None:
        chunk = self.cfg.chunk
        while room > chunk:
            self._forward(self._take(chunk))
            room -= chunk
        cat, rows = self._catalyst_for(self.catalyst)
        _, capt = self._forward(self._take(room), cat, rows, focus=self.catalyst_focus)
        self._distill(self.cfg.keep, capt)

    def _where_at(self, index: int) -> str:
        w = ""
        for start, label in reversed(self.provenance):
            if start <= index:
                w = label
                break
        return w

    # ---- one forward pass -----------------------------------------------------------------------
    def _catalyst_for(self, prompt: list[int]) -> tuple[list[int], int]:
        """(tokens to append, query rows to capture) for a distillation with `prompt` as the catalyst."""
        if self.policy.catalyst == "prompt":
            return list(prompt), len(prompt)
        if self.policy.catalyst == "last":
            return [], 1
        return [], 0

    @torch.no_grad()
    def _forward(self, ids: list[int], cat: list[int] | None = None, rows: int = 0, pinned: bool = False,
                 focus: tuple[int, int] | None = None, src: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, cap_scores.Capture]:
        """Forward `ids` (document or header) [+ catalyst `cat`] over the pot; returns (hidden, capture).

        The document part is recorded in the pot; the catalyst's entries are cropped away afterwards.
        `rows`: capture the attention of the last `rows` query rows (CaP rows / TOVA's last token);
        `focus`: the question's rows among them (question relevance, scoring/cap.py); `src`: (n,) document
        positions of `ids` re-read from the archive (recall): the reading position does not advance.
        """
        pol = self.policy
        cat = list(cat or [])
        n = len(ids)
        inp = ids + cat
        if not inp:
            return torch.zeros(0), cap_scores.Capture()
        base_len = len(self.pot)
        t0 = time.perf_counter()
        x = torch.tensor([inp], device=self.device)
        focus = focus if pol.relevance and pol.catalyst == "prompt" and rows == len(cat) else None
        with cap_scores.capture(rows=rows, all_rows=pol.needs_acc and not pinned, focus=focus) as capt:
            out = self.model.model(input_ids=x, past_key_values=self.pot.cache, use_cache=True)
        hidden = out.last_hidden_state[0]  # (T, d)
        self.timings.forward += time.perf_counter() - t0 - capt.seconds
        self.timings.cap += capt.seconds
        self.pot.note_peak()
        if n:
            t1 = time.perf_counter()
            ids_t = torch.tensor(ids, device=self.device)
            if pol.needs_nuc and not pinned:
                nov = novelty(self.model, self.prev_hidden, hidden[:n], ids_t)
            else:
                nov = torch.zeros(n)
            self.timings.nuc += time.perf_counter() - t1
            recalled = src is not None
            if pinned:
                src = -1 - torch.arange(n)
            elif not recalled:
                src = torch.arange(self.tokens_read, self.tokens_read + n)
            self.pot.append_meta(src, ids_t, nov)
            if not recalled:
                self.prev_hidden = hidden[n - 1].clone()
            if not pinned and not recalled:
                self.tokens_read += n
                self.where = self._where_at(self.tokens_read - 1)
        if pol.needs_acc and capt.scores:
            S = len(self.pot)
            self.pot.acc += torch.stack([capt.scores[l][:, :S].cpu() for l in range(self.pot.num_layers)])
        self.pot.crop(base_len + n)
        if not pinned and n:
            self._emit("read")
        return hidden, capt

    # ---- distillation ---------------------------------------------------------------------------
    @torch.no_grad()
    def _distill(self, keep: int, capt: cap_scores.Capture | None) -> None:
        """Keep `keep` entries per (layer, head): pinned header + the policy's choice; CR-RoPE."""
        pot, pol = self.pot, self.policy
        S = len(pot)
        npin = pot.n_pinned
        if S <= keep:
            return
        t0 = time.perf_counter()
        L, H = pot.num_layers, pot.num_kv_heads
        cap = rel = starts = None
        if pol.catalyst is not None and capt is not None and capt.scores:
            cap = torch.stack([capt.scores[l][:, npin:S].float().cpu() for l in range(L)])  # (L, H, N)
            if capt.relevance:
                rel = torch.stack([capt.relevance[l][:, npin:S].float().cpu() for l in range(L)])  # (L, H, N)
        if pol.needs_units:
            rows = slice(0, 1) if pol.share else slice(None)  # shared: every head holds the same entries
            src, tok = pot.src[rows, rows, npin:], pot.tok[rows, rows, npin:]
            starts = unit_starts(src, tok, self.boundaries).expand(L, H, S - npin)  # (L, H, N)
        inp = SelectionInputs(budget=keep - npin, n=S - npin, cap=cap, nov=pot.nov[..., npin:],
                              acc=pot.acc[..., npin:] if pol.needs_acc else None, shape=(L, H), rel=rel,
                              starts=starts)
        chosen = pol.select(inp)  # (L, H, keep - npin) candidate indices
        forced = getattr(pol, "last_nuc", None)
        # for diagnostics (--trace): which kept entries were chosen by NuC rather than by CaP
        self.last_by_nuc = forced.gather(-1, chosen) if forced is not None else None
        idx = torch.cat([torch.arange(npin).view(1, 1, -1).expand(L, H, npin), chosen + npin], -1)
        self.archive.record_eviction(pot.src, pot.tok, idx, self.boundaries)
        t1 = time.perf_counter()
        self.timings.select += t1 - t0
        pot.keep(idx)
        pot.nov = pol.age(pot.nov)
        self.timings.rerotate += time.perf_counter() - t1
        self.cycles += 1
        self._emit("distill", kept_src=pot.src[pot.src >= 0].unique())

    # ---- answering ------------------------------------------------------------------------------
    @torch.no_grad()
    def answer(self, prompt_ids: list[int], max_new_tokens: int = 256, stop_ids: set[int] | None = None,
               on_text: Callable[[str], None] | None = None, final_distill: bool = True,
               focus: tuple[int, int] | None = None) -> str:
        """Append the final prompt to the pot and generate greedily.

        If pot + prompt + answer budget would exceed M, one last distillation runs first with the real
        prompt as the catalyst (`focus`: the question's tokens in it). With `final_keep` set and a question
        (`focus` given), it also runs whenever the pot holds more than `final_keep` entries, down to
        `final_keep` (and when it must run anyway, it keeps no more than that). With `recall` and a question
        the pot was not read with, the archive's best sentences for it are first forwarded into the pot
        (archive.py). With `reencode` and a
        question, the answer is generated over a fresh prefill of the tokens the pot holds (`_reencoded`). The
        pot is otherwise left as it was before the prompt (the prompt and the answer are cropped away
        afterwards, or were never added to it), so the same pot can answer again.
        """
        self.finish()
        t0 = time.perf_counter()
        pot, pol, cfg = self.pot, self.policy, self.cfg
        F = len(prompt_ids)
        self._emit("answer")
        if cfg.bounded and cfg.recall and focus is not None and pol.catalyst == "prompt" and final_distill:
            self.recalled = recall(self, prompt_ids, focus, max_new_tokens)
        if cfg.bounded:
            limit = cfg.size - F - max_new_tokens
            if limit <= pot.n_pinned + 16:
                raise UsageError(
                    f"the pot ({cfg.size}) cannot hold the prompt ({F} tokens) and the answer budget "
                    f"({max_new_tokens}); raise --pot-size or lower --max-new-tokens")
            # final_keep: only for a question (a summary wants breadth) and a policy that scores with the prompt
            narrow = cfg.final_keep if focus is not None and pol.catalyst == "prompt" else 0
            target = None
            if len(pot) > limit:  # the paper's last distillation: too full for the prompt and the answer
                target = min(cfg.keep, narrow or cfg.keep, limit)
            elif narrow and len(pot) > narrow:
                target = narrow
            if final_distill and target is not None:
                if target <= pot.n_pinned:
                    raise UsageError(f"--final-keep ({cfg.final_keep}) must exceed the pinned header "
                                     f"({pot.n_pinned} tokens)")
                self._final_distill(prompt_ids, target, focus)
        elif cfg.method == "snapkv" and len(pot) > cfg.keep and final_distill:
            self._final_distill(prompt_ids, cfg.keep, focus)
        base = len(pot)
        fresh = self._reencoded() if cfg.reencode and focus is not None and pol.catalyst == "prompt" else None
        kv = fresh if fresh is not None else pot.cache
        x = torch.tensor([prompt_ids], device=self.device)
        out = self.model.model(input_ids=x, past_key_values=kv, use_cache=True)
        pot.note_peak()
        logits = lm_head_logits(self.model, out.last_hidden_state[0, -1:])
        stops = stop_ids or set()
        gen: list[int] = []
        text = ""
        for _ in range(max_new_tokens):
            nxt = int(logits[0].argmax())
            if nxt in stops:
                break
            gen.append(nxt)
            new_text = self.tok.decode(gen, skip_special_tokens=True)
            if on_text and len(new_text) > len(text) and not new_text.endswith("\ufffd"):
                on_text(new_text[len(text):])
                text = new_text
            elif not on_text:
                text = new_text
            self._emit("token", text=new_text)
            out = self.model.model(input_ids=torch.tensor([[nxt]], device=self.device), past_key_values=kv,
                                   use_cache=True)
            pot.note_peak()
            logits = lm_head_logits(self.model, out.last_hidden_state[0, -1:])
        final = self.tok.decode(gen, skip_special_tokens=True)
        if on_text and len(final) > len(text):
            on_text(final[len(text):])
        if fresh is None:
            pot.crop(base)
        self.timings.answer += time.perf_counter() - t0
        self._emit("done")
        return final.strip()

    def _reencoded(self) -> DynamicCache | None:
        """InfiniPot option `reencode`: a new KV cache from one fresh (chunked) prefill of the tokens the pot
        holds, in pot order, at positions 0..S-1 -- the positions CR-RoPE gave them (§3.5). The pot's own KV
        states of a token were computed once, over the document around it as read, and carry over cycles what
        attention drew from text long evicted; the fresh prefill gives the states of just the text that is
        kept. Measured (README, "Needle in a haystack"): a 32K cell answered "mountain range." from the pot's
        KV and "clock tower stairwell." from the same 512 tokens prefilled afresh. None when the (layer, KV
        head) pairs hold different tokens (per-head selection: no single text to prefill). The pot itself is
        not changed; the new cache is at most the pot's size, for the time of one answer."""
        tok = self.pot.tok  # (L, H_kv, S) token ids, in pot order
        if tok.shape[-1] == 0 or not bool((tok == tok[:1, :1]).all()):
            return None
        ids = tok[0, 0].to(self.device)[None]  # (1, S)
        cache = DynamicCache()
        for i in range(0, ids.shape[1], self.cfg.chunk):
            self.model.model(input_ids=ids[:, i:i + self.cfg.chunk], past_key_values=cache, use_cache=True)
        return cache

    def _final_distill(self, prompt_ids: list[int], keep: int, focus: tuple[int, int] | None = None) -> None:
        """Distill once more with the real prompt as the catalyst (CaP-Q with the actual question)."""
        capt = None
        cat, rows = self._catalyst_for(prompt_ids)
        if rows:
            _, capt = self._forward([], cat if cat else list(prompt_ids), rows, focus=focus)
        self._distill(keep, capt)

    # ---- events ---------------------------------------------------------------------------------

    def _emit(self, kind: str, text: str = "", kept_src=None) -> None:
        if self.on_event is None:
            return
        pot = self.pot
        self.on_event(Event(kind=kind, tokens_read=self.tokens_read, cycles=self.cycles, entries=len(pot),
                            pinned=pot.n_pinned, distilled=pot.n_distilled, size=self.cfg.size if self.cfg.bounded else None,
                            where=self.where, elapsed_s=time.perf_counter() - self.t0, kv_bytes=pot.kv_bytes(),
                            text=text, kept_src=kept_src))
