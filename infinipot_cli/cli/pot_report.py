"""`infinipot inspect`: what a saved pot holds and which passages of the document it still remembers."""

from __future__ import annotations

import os
from pathlib import Path

import torch

from .display import cell_char
from ..pot.engine import where_at
from ..pot.potfile import load_some, load_tensors, parse_meta, read_header
from ..units import fmt_bytes


def _spans(counts: torch.Tensor) -> list[tuple[int, int]]:
    """[start, end) runs of positions with a non-zero count."""
    k = (counts > 0).to(torch.int8)
    d = torch.diff(torch.cat([torch.zeros(1, dtype=torch.int8), k, torch.zeros(1, dtype=torch.int8)]))
    starts = torch.nonzero(d == 1).flatten().tolist()
    ends = torch.nonzero(d == -1).flatten().tolist()
    return list(zip(starts, ends))


def inspect_pot(path: str | os.PathLike, tokenizer=None, bins: int = 60, top: int = 12,
                max_chars: int = 400, verify: bool = True) -> dict:
    """What a pot file holds and what it remembers — JSON-serializable.

    passages: the `top` spans of consecutive kept document positions (union over all (layer, head)) by kept
    weight (tokens x share of heads), in document order, each with its text (if `tokenizer`) and `where` label.
    strip: [0, tokens_read) in min(bins, tokens_read) bins; `kept` = share of the bin's tokens some head keeps,
    `heads` = mean share of heads keeping them.
    verify: read every tensor and check the checksum (as load_pot does); False reads only src/tok.
    """
    path = Path(path)
    header, size = read_header(path)
    meta = parse_meta(path, header)
    if verify:
        t = load_tensors(path, meta)
    else:
        t = load_some(path, meta, ("src", "tok"))
    L, H = meta["layers"], meta["kv_heads"]
    LH = max(1, L * H)
    T = int(meta["tokens_read"])
    src, tok = t["src"], t["tok"]
    mask = src >= 0
    pos, ids = src[mask], tok[mask]
    counts = torch.bincount(pos, minlength=T)[:T] if T else torch.zeros(0, dtype=torch.long)
    token_of = torch.full((T,), -1, dtype=torch.long)
    if T:
        token_of[pos] = ids
    prov = sorted(([int(s), str(w)] for s, w in meta.get("provenance", [])), key=lambda p: p[0])

    spans = []
    for s, e in _spans(counts):
        w = float(counts[s:e].sum()) / LH
        spans.append((w, s, e))
    chosen = sorted(sorted(spans, key=lambda x: (-x[0], x[1]))[:top], key=lambda x: x[1])
    passages = []
    for w, s, e in chosen:
        text = None
        if tokenizer is not None:
            text = tokenizer.decode(token_of[s:e].tolist(), skip_special_tokens=False)
            if max_chars and len(text) > max_chars:
                text = text[:max_chars].rstrip() + "…"
        passages.append({"start": s, "end": e, "tokens": e - s, "heads": round(w / (e - s), 4),
                         "weight": round(w, 2), "where": where_at(prov, s), "text": text})

    nb = min(bins, T) if bins > 0 else 0
    edges = [i * T // nb for i in range(nb + 1)] if nb else []
    kept_strip, heads_strip, where_strip = [], [], []
    for a, b in zip(edges[:-1], edges[1:]):
        c = counts[a:b].float()
        kept_strip.append(round(float((c > 0).float().mean()), 4))
        heads_strip.append(round(float(c.mean()) / LH, 4))
        where_strip.append(where_at(prov, a))

    remembered = int((counts > 0).sum())
    cfg = meta.get("config", {})
    return {
        "path": str(path),
        "file_bytes": size,
        "format_version": meta["format_version"],
        "infinipot_version": meta.get("infinipot_version"),
        "created": meta.get("created"),
        "model": meta.get("model"),
        "fingerprint": meta["fingerprint"],
        "dtype": meta.get("dtype"),
        "kv_dtype": meta.get("kv_dtype", meta.get("dtype")),
        "config": cfg,
        "catalyst": meta.get("catalyst"),
        "layers": L,
        "kv_heads": H,
        "head_dim": meta["head_dim"],
        "entries": meta["entries"],
        "n_pinned": meta["n_pinned"],
        "n_distilled": meta.get("n_distilled"),
        "peak_entries": meta.get("peak_entries"),
        "kv_bytes": meta.get("kv_bytes"),
        "tokens_read": T,
        "pending": meta.get("pending", 0),
        "cycles": meta.get("cycles", 0),
        "where": meta.get("where", ""),
        "sources": meta.get("sources", []),
        "provenance": prov,
        "remembered": {"tokens": remembered, "share": round(remembered / T, 4) if T else 0.0,
                       "spans": len(spans)},
        "strip": {"bins": nb, "kept": kept_strip, "heads": heads_strip, "where": where_strip},
        "passages": passages,
    }


def strip_line(shares: list[float]) -> str:
    """One block character per bin: blank for nothing kept, ▁..█ by share (the live display's strip)."""
    return "".join(cell_char(s) for s in shares)


def render_inspect(info: dict, console) -> None:
    """Print inspect_pot's dict with rich: facts, the coverage strip and the remembered passages. On a terminal
    the facts are a table wrapped to its width; elsewhere (a pipe, a file) one line each, never wrapped."""
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    terminal = console.is_terminal

    def say(markup: str = "") -> None:
        console.print(markup, soft_wrap=not terminal)

    cfg = info.get("config") or {}
    cat = info.get("catalyst") or {}
    tab = Table(show_header=False, box=None, pad_edge=False)
    tab.add_column(style="bold cyan", no_wrap=True)
    tab.add_column()
    rows = [
        ("pot", f"{info['path']} ({fmt_bytes(info.get('file_bytes'))})"),
        ("model", f"{info.get('model')}  [dim]{info.get('fingerprint')} · {info.get('dtype')}[/dim]"),
        ("made", f"{info.get('created') or '?'} by infinipot {info.get('infinipot_version')}"),
        ("method", f"{cfg.get('method')}  pot {cfg.get('size')} · keep {cfg.get('keep')} · "
                   f"NuC ratio {cfg.get('alpha')} · chunk {cfg.get('chunk')}"),
        ("catalyst", f"{cat.get('kind')}" + (f": {escape(str(cat.get('text')))}" if cat.get("text") else "")),
        ("read", f"{info['tokens_read']:,} tokens in {info.get('cycles', 0)} distillation "
                 f"cycle{'' if info.get('cycles', 0) == 1 else 's'}"
                 + (f" (+{info['pending']} pending)" if info.get("pending") else "")
                 + (f", up to {escape(info['where'])}" if info.get("where") else "")),
        ("holds", f"{info['entries']} entries per head ({info['n_pinned']} pinned) · {info['layers']} layers × "
                  f"{info['kv_heads']} KV heads · KV {fmt_bytes(info.get('kv_bytes'))}"),
        ("on disk", f"{fmt_bytes(info.get('file_bytes'))} ({info.get('file_bytes') or 0:,} bytes; KV stored as "
                    f"{info.get('kv_dtype')}"
                    + (f", {info['file_bytes'] // info['entries']:,} bytes per entry)" if info.get("entries") else ")")),
        ("remembers", f"{info['remembered']['tokens']:,} document tokens "
                      f"({info['remembered']['share']:.1%}) in {info['remembered']['spans']} "
                      f"span{'' if info['remembered']['spans'] == 1 else 's'}"),
    ]
    for src in info.get("sources") or []:
        stop = src.get("stopped_at")
        more = f", stopped at token {stop:,}" if isinstance(stop, int) else ""
        rows.append(("source", f"{escape(str(src.get('path')))} [dim]({src.get('format')}, "
                               f"{src.get('tokens', '?')} tokens{more})[/dim]"))
    if terminal:
        for k, v in rows:
            tab.add_row(k, v)
        console.print(tab)
    else:
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            console.print(Text(k.ljust(width) + " ", style="bold cyan") + Text.from_markup(v), soft_wrap=True)

    strip = info.get("strip") or {}
    if strip.get("bins"):
        wh = strip.get("where") or []
        say()
        say("[bold]coverage[/bold] [dim](document start → end)[/dim]")
        say(f"  kept  [green]{strip_line(strip['kept'])}[/green]")
        say(f"  heads [cyan]{strip_line(strip['heads'])}[/cyan]")
        if wh and (wh[0] or wh[-1]):
            say(f"  [dim]{escape(wh[0] or 'start')} … {escape(wh[-1] or 'end')}[/dim]")

    passages = info.get("passages") or []
    if passages:
        say()
        say("[bold]what the pot remembers[/bold] [dim](largest kept passages, in document order)[/dim]")
        for p in passages:
            label = f"{escape(p['where'])} · " if p.get("where") else ""
            rng = f"token {p['start']:,}" if p["tokens"] == 1 else f"tokens {p['start']:,}–{p['end'] - 1:,}"
            say(f"[cyan]{label}{rng}[/cyan] [dim]kept by {p['heads']:.0%} of heads[/dim]")
            if p.get("text") is not None:
                say("  " + escape(" ".join(p["text"].split())))
