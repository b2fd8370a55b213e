"""Key points a reader can check: the sentences the pot judged most important, part by part, with their source.

After a general read, the pot holds whole sentences of every stretch of the document (spread.py). For a summary,
the summary prompt is forwarded once over the pot as the catalyst (CaP, §3.3.1; the pot is cropped back after)
and every kept sentence gets the mean of its tokens' scores: CaP and NuC (§3.3.2) as percentile ranks, mixed
with the pot's alpha as the selection mixes them. The document read is cut into `parts` equal stretches; each
gives its best `per_part` sentences (clean prose only: enough words, mostly letters), in document order, each
with where it came from (the reader's provenance: page, chapter or line).

    key_points(engine, prompt_ids) -> [{"text", "where", "page"|"chapter"|"line"|"section", "position"}]
"""

from __future__ import annotations

import re

import torch

from .engine import where_at
from .scoring.segments import unit_starts
from .spread import bins_of

PARTS = 8          # stretches of the document the key points come from
PER_PART = 1       # key points per stretch at most
MIN_WORDS, MAX_WORDS = 6, 40
_LABEL = re.compile(r"^(p\.|page|line|chapter)\s+(\S+)$")  # the readers' labels (documents/*.py)


def _ranks(x: torch.Tensor) -> torch.Tensor:
    """(N,) percentile ranks in [0, 1]."""
    n = x.numel()
    r = torch.empty(n, dtype=torch.float32)
    r[x.argsort()] = torch.arange(n, dtype=torch.float32)
    return r / max(1, n - 1)


def entry_scores(engine, prompt_ids: list[int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src, tok, score), each (N,), of the pot's document entries (head 0: the shared selection's entries)."""
    pot = engine.pot
    npin = pot.n_pinned
    src, tok = pot.src[0, 0, npin:].cpu(), pot.tok[0, 0, npin:].cpu()
    nov = pot.nov[0, 0, npin:].float().cpu()
    cap = torch.zeros_like(nov)
    cat, rows = engine._catalyst_for(prompt_ids)
    if rows and len(pot) + len(cat) <= (engine.cfg.size or 1 << 62):
        _, capt = engine._forward([], cat, rows)  # the catalyst's rows over the pot; its entries are cropped
        if capt.scores:
            # the layers the policy captures (the shared scorer's: from share_from of the depth on), mean over heads
            cap = torch.stack([capt.scores[l][:, npin:len(pot)].float().mean(0).cpu()
                               for l in sorted(capt.scores)]).mean(0)
    alpha = float(getattr(engine.cfg, "alpha", 0.5))
    return src, tok, (1 - alpha) * _ranks(cap) + alpha * _ranks(nov)


def _clean(text: str) -> str | None:
    text = " ".join(text.split())
    words = text.split()
    if len(words) < MIN_WORDS or re.search(r"\.{4,}|_{4,}|-{4,}", text):
        return None
    letters = sum(ch.isalpha() for ch in text)
    if letters < 0.6 * len(text.replace(" ", "")):
        return None
    if not text[:1].isalnum() and text[:1] not in "\"'(":
        text = text.lstrip("-*•·,;:) ")
        if not text:
            return None
    if not re.search(r"[.!?][\"')\u201d\u2019]*$", text):
        return None  # a piece of a sentence (the pot kept part of it): not a point a reader can check
    if len(words) > MAX_WORDS:
        text = " ".join(text.split()[:MAX_WORDS]) + " …"
    return text


def where_fields(label: str) -> dict:
    """{"source"?, "page"|"chapter"|"line"?, "section"?} from a provenance label: "p. 5 · 2 Parsing" (PDF: page
    label and outline title), "line 120" (text), "§ Basic usage" (HTML), a chapter title (EPUB); with several
    sources the source's name comes first ("a.pdf · p. 5")."""
    parts = [p.strip() for p in label.split(" · ") if p.strip()]
    out: dict = {}
    for i, p in enumerate(parts):
        m = _LABEL.match(p)
        if m:
            kind, val = m.group(1), m.group(2).strip()
            kind = "page" if kind in ("p.", "page") else kind
            out[kind] = int(val) if val.isdigit() else val
            if i:
                out["source"] = " · ".join(parts[:i])
            if parts[i + 1:]:
                out["section"] = " · ".join(parts[i + 1:]).removeprefix("§ ")
            return out
    if len(parts) > 1:
        out["source"], parts = parts[0], parts[1:]
    if parts:
        out["section"] = " · ".join(parts).removeprefix("§ ")
    return out


def key_points(engine, prompt_ids: list[int], parts: int = PARTS, per_part: int = PER_PART) -> list[dict]:
    """The pot's best sentences, at most `per_part` from each of `parts` stretches of the document, in order."""
    if engine.tok is None or len(engine.pot) <= engine.pot.n_pinned:
        return []
    src, tok, score = entry_scores(engine, prompt_ids)
    keep = src >= 0
    src, tok, score = src[keep], tok[keep], score[keep]
    if src.numel() == 0:
        return []
    order = src.argsort()
    src, tok, score = src[order], tok[order], score[order]
    starts = unit_starts(src[None], tok[None], engine.boundaries)[0]
    seg = starts.long().cumsum(0) - 1  # (N,) sentence index
    n = int(seg[-1]) + 1
    mean = torch.zeros(n).scatter_add_(0, seg, score) / torch.bincount(seg, minlength=n).float()
    stretch = bins_of(src, max(engine.tokens_read, int(src.max()) + 1), parts)
    best: dict[int, list[tuple[float, int]]] = {}
    for i in mean.argsort(descending=True).tolist():
        members = (seg == i).nonzero().flatten()
        k = int(stretch[members[0]])
        if len(best.get(k, [])) >= per_part:
            continue
        text = _clean(engine.tok.decode(tok[members].tolist(), skip_special_tokens=True))
        if text is None:
            continue
        best.setdefault(k, []).append((float(mean[i]), int(members[0])))
    out = []
    for k in sorted(best):
        for _, first in sorted(best[k], key=lambda x: x[1]):
            members = (seg == seg[first]).nonzero().flatten()
            pos = int(src[first])
            label = where_at(engine.provenance, pos)
            fields = where_fields(label)
            text = _clean(engine.tok.decode(tok[members].tolist(), skip_special_tokens=True))
            out.append({"text": _drop_heading(text, fields.get("section")), "where": label, **fields,
                        "position": pos})
    return out


def _drop_heading(text: str, section: str | None) -> str:
    """A sentence that begins right after its section's heading ("Methods The team reached…") without it: the
    heading is already in the point's location."""
    rest = text[len(section) + 1:] if section and text.startswith(section + " ") else ""
    if len(rest) > 20 and rest[:1].isupper():  # a new sentence starts after the heading
        return rest
    return text


def render(points: list[dict]) -> str:
    """The key points as the summary prints them: one line each, its source in brackets."""
    return "\n".join(f"- {p['text']}" + (f" [{p['where']}]" if p.get("where") else "") for p in points)
