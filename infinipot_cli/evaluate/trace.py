"""`bench needle --trace`: where the needle's tokens are after every distillation, and what fills the pot.

After each distillation (engine event "distill") the tracer reads the pot's metadata — `pot.src` (document
position of every kept entry per (layer, KV head)), `pot.tok`, `pot.nov`, `pot.n_pinned` — and
`engine.last_by_nuc` (which kept entries NuC chose rather than CaP) and appends one small record per cycle,
aggregated per layer (never per head per entry), so a 1M-token run stays a few MB of JSON:

    cycle, tokens_read, final, needle_read, entries, layers, heads
    needle: per layer (lists of L values): heads_any (heads holding >= 1 needle token), mean / min / max
            needle tokens per head, covered (share of the needle's tokens held by >= 1 head of the layer),
            nuc_mean (needle tokens per head that NuC chose; None without NuC);
            overall: mean (tokens per head), heads_any (share of all heads), covered (share of the needle's
            tokens held by >= 1 head of any layer), per_token (heads over all layers holding each needle
            token), by_nuc / by_cap (needle entries over all heads kept by NuC / by CaP), novelty
    kept:   composition of the kept set over all heads — shares of pinned, sinks (document tokens 0-3),
            needle, punct (punctuation / whitespace tokens), recent (positions >= tokens_read - (M - C)),
            other; each entry counts once, in that order of precedence
    novelty: mean stored novelty of the kept document entries (None for policies without NuC);
            nuc_bar: the lowest novelty NuC kept (mean over heads) — what a token needed to be kept by NuC

by_nuc / by_cap follow `engine.last_by_nuc`. Policies without that mask (streaming, h2o, ...) report None; `cap` and `snapkv` report everything as CaP. The run also gets `needle_pieces`: the needle's
tokens as text, in order, as they were read.

The last distillation before answering (the real question as the catalyst) is recorded too, `final: true`.
"""

from __future__ import annotations

import unicodedata

import torch

from .haystack import Placement
from .progress import fmt_tokens

SINKS = 4
CATEGORIES = ("pinned", "sinks", "needle", "punct", "recent", "other")


def _r(x: float | None, nd: int = 4) -> float | None:
    if x is None or x != x or x in (float("inf"), float("-inf")):
        return None
    return round(float(x), nd)


def _rl(t: torch.Tensor, nd: int = 3) -> list:
    return [round(float(v), nd) for v in t.tolist()]


def is_punct_text(s: str) -> bool:
    """A token that decodes to punctuation, symbols and/or whitespace only (not empty, not a broken byte)."""
    if not s or "\ufffd" in s:
        return False
    return all(c.isspace() or unicodedata.category(c)[0] in "PSZ" for c in s)


class NeedleTracer:
    """Collects one record per distillation; feed it every engine event with `on_event(ev, engine)`.

    placement: the haystack's Placement (filled in while the pieces are generated; needle_start is -1
    until the needle is placed). recent: the recency window M - C (0 for unbounded references).
    """

    def __init__(self, tokenizer, placement: Placement, recent: int, sinks: int = SINKS):
        self.tok = tokenizer
        self.placement = placement
        self.recent = max(0, recent)
        self.sinks = sinks
        self.records: list[dict] = []
        self.answering = False
        self._punct: dict[int, bool] = {}
        self._needle_ids: dict[int, int] = {}  # needle token offset -> token id, as read
        self._read = 0

    # ---- events -----------------------------------------------------------------------------------
    def on_event(self, ev, engine) -> None:
        if ev.kind == "read":
            self._note_needle_ids(engine)
        elif ev.kind == "answer":
            self.answering = True  # a distillation after this is the final one, with the question
        elif ev.kind == "distill":
            self.records.append(self.snapshot(engine, final=self.answering))

    # ---- token classes ----------------------------------------------------------------------------
    def punct_mask(self, ids: torch.Tensor) -> torch.Tensor:
        """Bool mask of punctuation / whitespace tokens; each distinct id is decoded once (cached)."""
        uniq = ids.unique().tolist()
        for i in uniq:
            if i not in self._punct:
                self._punct[i] = is_punct_text(self.tok.decode([i]))
        p = [i for i in uniq if self._punct[i]]
        if not p:
            return torch.zeros_like(ids, dtype=torch.bool)
        return torch.isin(ids, torch.tensor(p, dtype=ids.dtype))

    def _note_needle_ids(self, engine) -> None:
        """On a "read" event: the entries just appended are the document tokens [previous, tokens_read)."""
        prev, tr = self._read, engine.tokens_read
        self._read = tr
        start, n = self.placement.needle_start, self.placement.needle_tokens
        if start < 0 or n <= 0 or tr <= prev or tr <= start or prev >= start + n:
            return
        src, tok = engine.pot.src[0, 0, -(tr - prev):], engine.pot.tok[0, 0, -(tr - prev):]
        sel = (src >= start) & (src < start + n)
        self._needle_ids.update(zip((src[sel] - start).tolist(), tok[sel].tolist()))

    def needle_pieces(self) -> list[str | None]:
        """The needle's tokens as text (None for a token never seen in the pot at a distillation)."""
        n = max(0, self.placement.needle_tokens)
        return [self.tok.decode([self._needle_ids[i]]) if i in self._needle_ids else None for i in range(n)]

    # ---- one cycle --------------------------------------------------------------------------------
    @torch.no_grad()
    def snapshot(self, engine, final: bool = False) -> dict:
        pot = engine.pot
        src, nov = pot.src.cpu(), pot.nov.float().cpu()  # diagnostics run on the host
        L, H, S = src.shape
        npin = pot.n_pinned
        tr = engine.tokens_read
        start, n = self.placement.needle_start, self.placement.needle_tokens
        placed = start >= 0 and n > 0
        if placed:
            mask = (src >= start) & (src < start + n)
        else:
            mask = torch.zeros_like(src, dtype=torch.bool)
        counts = mask.sum(-1)  # (L, H) needle tokens per head
        rel = src[mask] - start
        layer_of = torch.arange(L).view(L, 1, 1).expand(L, H, S)[mask]
        held = torch.zeros(L, max(n, 1), dtype=torch.bool)
        per_token = torch.zeros(max(n, 1), dtype=torch.long)
        if rel.numel():
            held[layer_of, rel] = True
            per_token.index_add_(0, rel, torch.ones_like(rel))
        held, per_token = held[:, :n], per_token[:n]

        by_nuc = getattr(engine, "last_by_nuc", None)
        if by_nuc is not None and tuple(by_nuc.shape) != (L, H, S - npin):
            by_nuc = None  # not aligned with this pot (should not happen); report no split
        nuc_mean = nuc_n = cap_n = nuc_bar = None
        if by_nuc is not None:
            by_nuc = by_nuc.cpu().bool()
            nm = mask[..., npin:]
            nuc_needle = nm & by_nuc
            nuc_n, cap_n = int(nuc_needle.sum()), int((nm & ~by_nuc).sum())
            nuc_mean = _rl(nuc_needle.sum(-1).float().mean(-1))
            if by_nuc.any():
                low = torch.where(by_nuc, nov[..., npin:], torch.full_like(nov[..., npin:], float("inf")))
                low = low.min(-1).values
                nuc_bar = _r(low[torch.isfinite(low)].mean().item())

        # composition of the kept set: later assignments win (precedence pinned > sinks > needle > ...)
        cat = torch.full_like(src, CATEGORIES.index("other"))
        if self.recent:
            cat[src >= tr - self.recent] = CATEGORIES.index("recent")
        cat[self.punct_mask(pot.tok.cpu())] = CATEGORIES.index("punct")
        cat[mask] = CATEGORIES.index("needle")
        cat[(src >= 0) & (src < self.sinks)] = CATEGORIES.index("sinks")
        cat[src < 0] = CATEGORIES.index("pinned")
        shares = torch.bincount(cat.flatten(), minlength=len(CATEGORIES)).float() / max(1, cat.numel())

        doc = src >= 0
        has_nov = bool(getattr(getattr(engine, "policy", None), "needs_nuc", True))  # else novelty is all 0
        return {
            # the answer's own distillation is drawn one step after the reading's last cycle
            "cycle": engine.cycles + bool(final), "tokens_read": tr, "final": bool(final),
            "needle_read": bool(placed and tr >= start + n), "entries": S, "layers": L, "heads": H,
            "needle": {
                "layers": {
                    "heads_any": (counts > 0).sum(-1).tolist(),
                    "mean": _rl(counts.float().mean(-1)),
                    "min": counts.min(-1).values.tolist(),
                    "max": counts.max(-1).values.tolist(),
                    "covered": _rl(held.float().mean(-1)) if n else [0.0] * L,
                    "nuc_mean": nuc_mean,
                },
                "mean": _r(counts.float().mean().item()),
                "heads_any": _r((counts > 0).float().mean().item()),
                "covered": _r((per_token > 0).float().mean().item()) if n else 0.0,
                "per_token": per_token.tolist(),
                "by_nuc": nuc_n, "by_cap": cap_n,
                "novelty": _r(nov[mask].mean().item()) if has_nov and mask.any() else None,
            },
            "kept": {c: _r(shares[i].item()) for i, c in enumerate(CATEGORIES)},
            "novelty": _r(nov[doc].mean().item()) if has_nov and doc.any() else None,
            "nuc_bar": nuc_bar,
        }


# ---- reading a trace back ---------------------------------------------------------------------------
def needle_read_cycle(trace: list[dict]) -> int | None:
    """The first cycle whose record saw the whole needle read."""
    return next((r["cycle"] for r in trace if r["needle_read"]), None)


def pick_layers(n_layers: int) -> list[int]:
    """First, middle and last layer."""
    return sorted({0, n_layers // 2, n_layers - 1})


def summary_text(rec: dict) -> str:
    """A few lines about one traced trial, for stderr."""
    trace = rec.get("trace") or []
    head = (f"trace {rec['method']} {fmt_tokens(rec['length_target'])} depth {rec['depth']:g} "
            f"trial {rec['trial'] + 1}: {'correct' if rec.get('correct') else 'wrong'} {rec.get('answer')!r} (expected {rec.get('expect')!r})")
    if not trace:
        return head + "\n  no distillation happened (nothing to trace)"
    n = rec.get("needle_tokens") or 0
    last = trace[-1]
    nd = last["needle"]
    L, H = last["layers"], last["heads"]
    rc = needle_read_cycle(trace)
    lines = [head,
             f"  {len(trace)} distillations ({sum(r['final'] for r in trace)} final); needle {n} tokens at "
             f"{rec.get('needle_start')}, read by cycle {rc if rc is not None else '-'}; {L} layers x {H} KV heads"]
    tag = "final, question catalyst" if last["final"] else "last"
    lay = nd["layers"]
    lines.append(f"  {tag} (cycle {last['cycle']}): needle tokens per head {nd['mean']:.2f} of {n} "
                 f"(min/max over heads: {min(lay['min'])}/{max(lay['max'])}); heads holding any "
                 f"{nd['heads_any']:.0%}; needle tokens held by some head {nd['covered']:.0%}")
    lines.append("  per layer (mean/head, heads with any): " + " · ".join(
        f"L{i} {lay['mean'][i]:.1f} {lay['heads_any'][i]}/{H}" for i in pick_layers(L)))
    if nd["by_nuc"] is not None:
        tot = nd["by_nuc"] + nd["by_cap"]
        lines.append(f"  needle entries by reason: NuC {nd['by_nuc']}, CaP {nd['by_cap']} "
                     f"(of {tot} over {L * H} heads)")
    else:
        lines.append("  needle entries by reason: - (this method has no NuC/CaP split)")
    pieces = rec.get("needle_pieces") or []
    lines.append(f"  heads (of {L * H}) holding each needle token: " + " ".join(
        f"{pieces[i]!r}:{c}" if i < len(pieces) and pieces[i] is not None else str(c)
        for i, c in enumerate(nd["per_token"])))
    kept = last["kept"]
    nov = f"; novelty mean {last['novelty']:.2f}" if last["novelty"] is not None else "; no NuC novelty"
    bar = f", NuC bar {last['nuc_bar']:.2f}" if last["nuc_bar"] is not None else ""
    nn = f", needle {nd['novelty']:.2f}" if nd["novelty"] is not None else ""
    lines.append("  kept set: " + " · ".join(f"{c} {kept[c]:.1%}" for c in CATEGORIES) + nov + nn + bar)
    after = [r for r in trace if r["needle_read"]]
    if after:
        pts = after if len(after) <= 8 else after[:4] + after[-4:]
        s = []
        for i, r in enumerate(pts):
            if len(after) > 8 and i == 4:
                s.append("…")
            s.append(f"{r['cycle']}{'(final)' if r['final'] else ''} {r['needle']['mean']:.2f}")
        lines.append("  retention (cycle: needle tokens/head): " + " → ".join(s))
    return "\n".join(lines)
