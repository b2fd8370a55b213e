"""The reader's answer-time steps — InfiniPot §3.2's last distillation and what this project adds around it.

After the read (engine.py, the paper's loop), an answer is written either from the pot's own entries (`answer`:
the last distillation with the real prompt as the catalyst when the pot cannot hold the prompt and the answer,
CaP-Q narrowing to `final_keep`, recall of archived sentences for a question the pot was not read with, a fresh
re-encoding of the kept text) or over text chosen from the pot and its archive (`answer_over`, the product's
question path: answer/answering.py). Whatever an answer changes in the pot is undone after it.

`AnswerSteps` is a part of `Engine` (its base class): these methods use the reader's pot, policy and forward.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

from ..errors import UsageError
from ..runtime.generate import AnswerCache, answer_room, generate
from ..runtime.loading import with_cache

MIN_ANSWER_ROOM = 16  # an answer over chosen text needs more than this many entries of document text beside the rest


class AnswerSteps:
    """The answer-time half of `Engine` (engine.py): answering from the pot or over chosen text."""

    @torch.no_grad()
    def answer(self, prompt_ids: list[int], mode: str, max_new_tokens: int = 256, stop_ids: set[int] | None = None,
               on_text: Callable[[str], None] | None = None, focus: tuple[int, int] | None = None,
               should_stop: Callable[[list[int], str], bool] | None = None,
               logits_fn: Callable[[list[int], torch.Tensor], torch.Tensor] | None = None) -> str:
        """Append the final prompt to the pot and generate greedily. mode: "question" or "summary".
        `logits_fn(gen_ids, logits)` rewrites each next token's logits (repetition.py: no loops).

        `should_stop(gen_ids, text)` after each token ends the answer early (stopping.Stopper: a loop, or a
        question's first sentence); the caller trims the text with the same criterion.

        If pot + prompt + answer budget would exceed M, one last distillation runs first with the real prompt as
        the catalyst (§3.2). A question (CaP-Q; `focus`: the question's tokens in the prompt) also narrows the pot
        to `final_keep` entries and, with `reencode`, is answered over a fresh prefill of the kept text
        (`_reencoded`); a summary wants breadth and does neither. With `recall`, a question the pot was not read
        with first brings back the archive's best sentences for it (archive.py). Whatever this answer changed is
        undone after it (also when it fails or is interrupted): the same pot answers the next question as read.
        """
        if mode not in ("question", "summary"):
            raise ValueError(f"mode must be 'question' or 'summary', not {mode!r}")
        self.finish()
        t0 = time.perf_counter()
        pot, pol, cfg = self.pot, self.policy, self.cfg
        question = mode == "question" and pol.catalyst == "prompt"
        self._emit("answer")
        known = not (question and focus is not None) or self.question_known(prompt_ids, focus)
        target = self._final_target(len(prompt_ids), max_new_tokens, question, known)
        snap = pot.snapshot() if question or target is not None else None  # what this answer changes is undone
        try:
            if question and cfg.bounded and cfg.recall and focus is not None:  # a question the pot was not read with
                self.recalled = self._recall(self._recall_candidates(prompt_ids, focus, max_new_tokens), prompt_ids,
                                             focus, max_new_tokens)
                if self.recalled:
                    target = self._final_target(len(prompt_ids), max_new_tokens, question, known)
            if target is not None:
                self._final_distill(prompt_ids, target, focus if question or not cfg.bounded else None)
            self.answered_from = (*pot.document_entries(), pot.tok[0, 0, :pot.n_pinned].tolist())
            extra = answer_room(len(prompt_ids), max_new_tokens)  # room for the prompt and the answer's start
            fresh = self._reencoded(extra) if cfg.reencode and question else None
            lead: list[int] = []  # kept text still to prefill: it goes in one forward with the prompt
            if fresh is not None:
                kv, lead = fresh
            else:
                kv = AnswerCache.from_cache(pot.cache, extra)  # the pot is not written
            gen = generate(self.model, kv, lead + list(prompt_ids), max_new_tokens, stop_ids or set(), on_text,
                           should_stop, tokenizer=self.tok, on_token=lambda _id, text: self._emit("token", text=text),
                           logits_fn=logits_fn)
            pot.peak_entries = max(pot.peak_entries, kv.get_seq_length())
            final = self.tok.decode(gen, skip_special_tokens=True)
        finally:
            if snap is not None:
                pot.restore(snap)
        self.timings.answer += time.perf_counter() - t0
        self._emit("done")
        return final.strip()

    def _final_target(self, prompt_len: int, max_new_tokens: int, question: bool, known: bool = True
                      ) -> int | None:
        """Entries to distill the pot to before answering, or None: the paper's last distillation when the pot
        cannot hold the prompt and the answer (§3.2); for a question also the narrowing: to `final_keep` when the
        pot was read with this question (`known`), else to C (a question asked of a pot read without it sees
        twice the text: on the same reads of five real documents 6 of 20 answers right against 4 of 21 at 512;
        docs/results/qa.md)."""
        pot, cfg = self.pot, self.cfg
        if not cfg.bounded:
            return cfg.keep if self.policy.compress_at_end and len(pot) > cfg.keep else None  # SnapKV's one compression
        limit = pot.n_pinned + self.answer_room(prompt_len, max_new_tokens)  # raises when they do not fit
        # a document that fits the pot whole (never distilled while reading) is answered from all of it:
        # narrowing such pots lost answers the whole text gave (docs/results/needle.md)
        narrow = 0
        if question and self.cycles > 0 and cfg.final_keep:
            narrow = cfg.final_keep if known else max(cfg.final_keep, cfg.keep)
        target = None
        if len(pot) > limit:
            target = min(cfg.keep, narrow or cfg.keep, limit)
        elif narrow and len(pot) > narrow:
            target = narrow
        if target is not None and target <= pot.n_pinned:
            raise UsageError(f"--final-keep ({cfg.final_keep}) must exceed the pinned header ({pot.n_pinned} tokens)")
        return target

    def _reencoded(self, extra: int = 0) -> tuple[AnswerCache, list[int]] | None:
        """`reencode`: a new KV cache from one fresh chunked prefill of the tokens the pot holds, in pot order,
        at positions 0..S-1 (the positions CR-RoPE gave them, §3.5), with room for `extra` more. The pot's own
        states carry what attention drew from text long evicted; the fresh prefill sees only the kept text
        (measured: docs/results/needle.md). Returns (cache, last chunk's ids) as `_prefilled`; None when heads
        hold different tokens (per-head selection)."""
        tok = self.pot.tok  # (L, H_kv, S) token ids, in pot order
        if tok.shape[-1] == 0 or not bool((tok == tok[:1, :1]).all()):
            return None
        return self._prefilled(tok[0, 0, self.pot.n_pinned:].tolist(), extra)

    def _prefilled(self, ids: list[int], extra: int = 0) -> tuple[AnswerCache, list[int]]:
        """A new KV cache holding the pinned header and a fresh chunked prefill of `ids` after it (positions
        n_pinned.., whatever the pot holds), with room for `extra` more. The pinned header is copied, not
        prefilled: pin() prefilled it alone at positions 0..n_pinned-1 and CR-RoPE never moves it, so its entries
        are those a fresh prefill computes. Returns (cache, last chunk's ids): all chunks but the last are
        prefilled here; the last goes into the same forward as the prompt (one forward fewer before the first
        token). The pot is not changed."""
        npin = self.pot.n_pinned
        n = len(ids)
        cache = AnswerCache.from_cache(self.pot.cache, n + extra, length=npin)  # + room for the prompt and the answer
        last = max(n - 1, 0) // self.cfg.chunk * self.cfg.chunk  # start of the last chunk
        x = torch.tensor([ids], dtype=torch.long, device=self.device)
        for i in range(0, last, self.cfg.chunk):
            self.model.model(input_ids=x[:, i:i + self.cfg.chunk], use_cache=True,
                             **with_cache(self.model.model, cache))
        return cache, ids[last:]

    def answer_room(self, prompt_len: int, max_new_tokens: int) -> int:
        """Document tokens an answer written over chosen text (answer_over) may see beside the pinned header, the
        prompt and the answer within the pot's M entries (unbounded methods: no limit); a UsageError when the
        prompt and the answer alone do not fit (the one check, _final_target's for an answer from the pot too)."""
        cfg = self.cfg
        if not cfg.bounded:
            return 1 << 62
        room = cfg.size - self.pot.n_pinned - prompt_len - max_new_tokens
        if room <= MIN_ANSWER_ROOM:
            raise UsageError(f"the pot ({cfg.size}) cannot hold the prompt ({prompt_len} tokens) and the answer "
                             f"budget ({max_new_tokens}); raise --pot-size or lower --max-new-tokens")
        return room

    @torch.no_grad()
    def answer_over(self, src: torch.Tensor, ids: list[int], prompt_ids: list[int], max_new_tokens: int = 256,
                    stop_ids: set[int] | None = None, on_text: Callable[[str], None] | None = None,
                    should_stop: Callable[[list[int], str], bool] | None = None,
                    logits_fn: Callable[[list[int], torch.Tensor], torch.Tensor] | None = None) -> str:
        """Generate an answer to `prompt_ids` over a fresh prefill of the pinned header and `ids`: document text
        taken from the pot and its archive (`src` (N,): each token's document position), not the pot's KV. The
        pot is not changed; `answered_from` records the text for the evidence (evidence.py)."""
        self.finish()
        t0 = time.perf_counter()
        self._emit("answer")
        pot = self.pot
        self.recalled = 0
        self.answered_from = (src.cpu(), torch.tensor(ids, dtype=torch.long), pot.tok[0, 0, :pot.n_pinned].tolist())
        kv, lead = self._prefilled(list(ids), answer_room(len(prompt_ids), max_new_tokens))
        gen = generate(self.model, kv, lead + list(prompt_ids), max_new_tokens, stop_ids or set(), on_text,
                       should_stop, tokenizer=self.tok, on_token=lambda _id, text: self._emit("token", text=text),
                       logits_fn=logits_fn)
        pot.peak_entries = max(pot.peak_entries, kv.get_seq_length())
        self.timings.answer += time.perf_counter() - t0
        self._emit("done")
        return self.tok.decode(gen, skip_special_tokens=True).strip()

    def question_known(self, prompt_ids: list[int], focus: tuple[int, int] | None) -> bool:
        """True when the pot was read with this very question as the catalyst (CaP-Q): nothing to recall."""
        cf = self.catalyst_focus
        if focus is None or cf is None:
            return False
        return list(prompt_ids[focus[0]:focus[1]]) == list(self.catalyst[cf[0]:cf[1]])

    def _recall_candidates(self, prompt_ids: list[int], focus: tuple[int, int],
                           max_new_tokens: int) -> list[tuple[int, list[int]]]:
        """The archive's best sentences for the question (`focus`: its tokens in `prompt_ids`), in document
        order, as (document start, token ids), within the room the pot leaves beside the answer; [] when the pot
        was read with this question or nothing matches."""
        cfg, pot = self.cfg, self.pot
        budget = min(cfg.recall, cfg.size - cfg.keep - len(prompt_ids) - max_new_tokens)
        if budget < 8 or not len(self.archive) or self.question_known(prompt_ids, focus):
            return []
        question = self.tok.decode(prompt_ids[focus[0]:focus[1]], skip_special_tokens=True)
        return self.archive.recall(self.tok, question, budget, exclude=pot.src[pot.src >= 0].unique())

    def _recall(self, segs: list[tuple[int, list[int]]], prompt_ids: list[int], focus, max_new_tokens: int) -> int:
        """Forward recalled sentences (document start, token ids) into the pot at their document positions, as
        if read; when they do not fit, the pot is first distilled to C with the question (CaP-Q), so it never
        exceeds M entries. Returns the tokens recalled."""
        n = sum(len(ids) for _, ids in segs)
        if not n:
            return 0
        if len(self.pot) + n + len(prompt_ids) + max_new_tokens > self.cfg.size:
            self._final_distill(prompt_ids, self.cfg.keep, focus)
        ids = [t for _, seg in segs for t in seg]
        src = torch.cat([torch.arange(s, s + len(seg)) for s, seg in segs])  # (n,) original document positions
        for i in range(0, n, self.cfg.chunk):
            self._forward(ids[i:i + self.cfg.chunk], src=src[i:i + self.cfg.chunk])
        return n

    def _final_distill(self, prompt_ids: list[int], keep: int, focus: tuple[int, int] | None = None) -> None:
        """Distill once more with the real prompt as the catalyst (CaP-Q with the actual question); its scores
        come from the read's last forward when that carried this prompt (expect()) and the pot is unchanged."""
        capt = None
        cat, rows = self.catalyst_for(prompt_ids)
        prep, self._prepared = self._prepared, None  # used once
        if rows and prep is not None and prep[0] == list(prompt_ids) and prep[1] == focus:
            capt = prep[2]
        elif rows:
            _, capt = self._forward([], cat if cat else list(prompt_ids), rows, focus=focus)
        self._distill(keep, capt, final=True, general=focus is None)
