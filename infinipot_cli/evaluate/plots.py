"""Figures: a needle heatmap per method (like InfiniPot Figure 5) and memory / speed against length (Figure 7).

matplotlib with the Agg backend (no display needed); every figure is written to a PNG and closed.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import UsageError

try:
    import matplotlib
except ImportError:  # the benches' extra: pip install "infinipot-cli[bench]" (make setup installs it)
    raise UsageError('the benches draw their figures with matplotlib: pip install "infinipot-cli[bench]" '
                     "(make setup installs it)") from None

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.colors import LinearSegmentedColormap  # noqa: E402

from .progress import fmt_tokens  # noqa: E402

# red (0) -> yellow -> green (1), as in Kamradt's and the paper's heatmaps
CMAP = LinearSegmentedColormap.from_list("needle", ["#d7301f", "#fdd835", "#2e9e4f"])


def needle_heatmap(summary: list[dict], method: str, lengths: list[int], depths: list[float], path: Path,
                   title: str = "") -> Path:
    """Accuracy per (depth row, length column) for one method; grey "OOD" cells where it was skipped."""
    cells = {(c["length"], c["depth"]): c for c in summary if c["method"] == method}
    fig, ax = plt.subplots(figsize=(max(4.5, 1.6 + 1.1 * len(lengths)), max(3.0, 1.6 + 0.6 * len(depths))), dpi=110)
    grid = [[float("nan")] * len(lengths) for _ in depths]
    for i, d in enumerate(depths):
        for j, n in enumerate(lengths):
            c = cells.get((n, d))
            if c and c["n"]:
                grid[i][j] = c["accuracy"]
    cmap = CMAP.with_extremes(bad="#bdbdbd")
    ax.imshow(grid, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i, d in enumerate(depths):
        for j, n in enumerate(lengths):
            c = cells.get((n, d))
            label = "" if c is None else (f"{c['correct']}/{c['n']}" if c["n"] else (c["skipped"] or "-"))
            ax.text(j, i, label, ha="center", va="center", fontsize=9, color="black")
    ax.set_xticks(range(len(lengths)), [fmt_tokens(n) for n in lengths])
    ax.set_yticks(range(len(depths)), [f"{d:g}" for d in depths])
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("needle depth")
    ax.set_title(title or f"{method}: needle retrieval", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def speed_plot(runs: list[dict], path: Path, title: str = "") -> Path:
    """2x2: peak RSS (while reading, where measured), peak KV cache, read throughput, decode throughput — against
    length, one line per method."""
    ok = [r for r in runs if not r.get("skipped") and not r.get("error")]
    methods = list(dict.fromkeys(r["method"] for r in runs))
    rss = "read_rss_mb" if ok and all(r.get("read_rss_mb") for r in ok) else "peak_rss_mb"  # the read's own peak
    panels = [(rss, "peak RSS while reading (MiB)" if rss == "read_rss_mb" else "peak RSS (MiB)"),
              ("kv_peak_mb", "peak KV cache (MiB)"),
              ("read_tok_s", "read throughput (tok/s)"), ("gen_tok_s", "generation (tok/s)")]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=110)
    for ax, (key, label) in zip(axes.flat, panels):
        top = 0.0
        for m in methods:
            pts = sorted((r["length"], (r["kv_peak_bytes"] / 2**20) if key == "kv_peak_mb" else r.get(key))
                         for r in ok if r["method"] == m)
            pts = [(x, y) for x, y in pts if y is not None]
            if pts:
                top = max(top, max(p[1] for p in pts))
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=m)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tokens read")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(0, top * 1.1 if top > 0 else 1)
        ticks = sorted({r["length"] for r in ok})
        if ticks:
            ax.set_xticks(ticks, [fmt_tokens(t) for t in ticks])
            ax.minorticks_off()
    handles, labels = axes.flat[0].get_legend_handles_labels()
    if not handles:
        for ax in axes.flat:
            handles, labels = ax.get_legend_handles_labels()
            if handles:
                break
    if handles:
        fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.955), ncol=min(6, len(labels)),
                   frameon=False)
    fig.suptitle(title or "memory and speed against length", y=0.99, fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.91))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


# needle trace (--trace): kept-set composition colours, in trace.CATEGORIES order
TRACE_COLOURS = {"pinned": "#6a51a3", "sinks": "#9e9ac8", "needle": "#d7301f", "punct": "#fdae6b",
                 "recent": "#74a9cf", "other": "#d9d9d9"}


def _needle_read_x(trace: list[dict], needle_end: int | None) -> float | None:
    """The (fractional) cycle at which the needle's last token was read, interpolated on tokens read."""
    import numpy as np

    if needle_end is None or needle_end <= 0:
        return None
    pts = [(0, 0)] + [(r["tokens_read"], r["cycle"]) for r in trace if not r["final"]]
    xs, ys = [p[0] for p in pts], [p[1] for p in pts]
    if needle_end > xs[-1]:
        return None if not any(r["needle_read"] for r in trace) else float(trace[-1]["cycle"])
    return float(np.interp(needle_end, xs, ys))


def trace_plot(rec: dict, path: Path, title: str = "") -> Path:
    """Needle retention across distillation cycles for one traced trial (`bench needle --trace`).

    Top: needle tokens kept per head (first / middle / last layer and the mean over layers; dotted: the
    mean's NuC part). Middle: share of heads holding any needle token (per layer and overall) and share of
    the needle's tokens held by some head. Bottom: what the kept set is made of. A vertical line marks where
    the needle was read; the final distillation (the question as catalyst) is drawn with a star.
    """
    from .trace import CATEGORIES, pick_layers

    trace = rec["trace"]
    xs = [r["cycle"] for r in trace]
    L, H = trace[0]["layers"], trace[0]["heads"]
    n = rec.get("needle_tokens") or 0
    fig, axes = plt.subplots(3, 1, figsize=(11, 9.5), dpi=110, sharex=True,
                             gridspec_kw={"height_ratios": [3, 2, 2]})
    ax1, ax2, ax3 = axes
    cmap = plt.get_cmap("viridis")
    layers = pick_layers(L)
    for j, li in enumerate(layers):
        c = cmap(0.15 + 0.7 * j / max(1, len(layers) - 1))
        ax1.plot(xs, [r["needle"]["layers"]["mean"][li] for r in trace], color=c, lw=1.2, label=f"layer {li}")
        ax2.plot(xs, [r["needle"]["layers"]["heads_any"][li] / H for r in trace], color=c, lw=1.2,
                 label=f"layer {li}")
    ax1.plot(xs, [r["needle"]["mean"] for r in trace], color="black", lw=2.2, label="mean over layers")
    if trace[0]["needle"]["layers"]["nuc_mean"] is not None:
        ax1.plot(xs, [sum(r["needle"]["layers"]["nuc_mean"]) / L for r in trace], color="black", lw=1.2, ls=":",
                 label="mean, kept by NuC")
    ax2.plot(xs, [r["needle"]["heads_any"] for r in trace], color="black", lw=2.2, label="all heads")
    ax2.plot(xs, [r["needle"]["covered"] for r in trace], color="#d7301f", lw=1.5, ls="--",
             label="needle tokens held by some head")
    finals = [r for r in trace if r["final"]]
    for r in finals:
        ax1.plot([r["cycle"]], [r["needle"]["mean"]], marker="*", ms=12, color="black", ls="none",
                 label="final (question catalyst)")
        ax2.plot([r["cycle"]], [r["needle"]["heads_any"]], marker="*", ms=12, color="black", ls="none")
    if n:
        ax1.axhline(n, color="#d7301f", lw=0.8, ls="--", alpha=0.6, label=f"needle length ({n} tokens)")
    ax1.set_ylabel("needle tokens kept per head")
    ax1.set_ylim(0, max(n, max((max(r["needle"]["layers"]["max"]) for r in trace), default=1)) * 1.08 or 1)
    ax2.set_ylabel("share")
    ax2.set_ylim(-0.02, 1.05)
    bottom = [0.0] * len(trace)
    for c in CATEGORIES:
        ys = [r["kept"][c] or 0.0 for r in trace]
        ax3.fill_between(xs, bottom, [b + y for b, y in zip(bottom, ys)], step="mid", color=TRACE_COLOURS[c],
                         label=c, lw=0)
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax3.set_ylim(0, 1)
    ax3.set_ylabel("kept set (all heads)")
    ax3.set_xlabel("distillation cycle")
    xr = _needle_read_x(trace, (rec.get("needle_start") or 0) + n if rec.get("needle_start", -1) >= 0 else None)
    for ax in axes:
        ax.grid(True, alpha=0.3)
        if xr is not None:
            ax.axvline(xr, color="#d7301f", lw=1.2, alpha=0.8)
    if xr is not None:
        ax1.text(xr, ax1.get_ylim()[1], " needle read", va="top", fontsize=8, color="#d7301f")
    for ax in axes:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if any(not r["final"] for r in trace):  # tokens read as a secondary axis on top
        sec = ax1.secondary_xaxis("top", functions=(lambda c: _interp(c, trace, 0), lambda t: _interp(t, trace, 1)))
        sec.set_xlabel("tokens read", fontsize=8)
        sec.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: fmt_tokens(round(v)) if v >= 0 else ""))
        sec.tick_params(labelsize=7)
    verdict = "correct" if rec.get("correct") else "wrong"
    fig.suptitle((title or "needle retention") + f"\nanswer {rec.get('answer')!r}: {verdict}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def _interp(v, trace: list[dict], direction: int):
    """cycle -> tokens read (direction 0) or back (1): piecewise linear over the non-final cycles, extended
    linearly past both ends (so the secondary axis stays invertible)."""
    import numpy as np

    pts = [(0, 0)] + [(r["cycle"], r["tokens_read"]) for r in trace if not r["final"]]
    cyc = np.array([p[0] for p in pts], dtype=float)
    tok = np.array([p[1] for p in pts], dtype=float)
    xp, fp = (cyc, tok) if direction == 0 else (tok, cyc)
    v = np.asarray(v, dtype=float)
    if len(xp) < 2:
        return v * 0
    out = np.interp(v, xp, fp)
    lo = (fp[1] - fp[0]) / (xp[1] - xp[0])
    hi = (fp[-1] - fp[-2]) / (xp[-1] - xp[-2])
    out = np.where(v < xp[0], fp[0] + (v - xp[0]) * lo, out)
    return np.where(v > xp[-1], fp[-1] + (v - xp[-1]) * hi, out)


def ruler_plot(averages: dict, path: Path, title: str = "") -> Path:
    """RULER's average score (over its tasks) against length, one line per method · flow; a length where a
    method was skipped (OOD) or some task is missing leaves a gap."""
    labels = list(dict.fromkeys(m for m, _ in averages))
    lengths = sorted({n for _, n in averages})
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    for label in labels:
        ys = [averages.get((label, n)) for n in lengths]
        ax.plot(range(len(lengths)), [float("nan") if y is None else y for y in ys], marker="o", label=label)
    ax.set_xticks(range(len(lengths)), [fmt_tokens(n) for n in lengths])
    ax.set_ylim(0, 100)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("RULER average (0-100)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title or "RULER", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def qa_plot(records: list[dict], kinds: dict[str, str], path: Path, title: str = "") -> Path:
    """Right answers and evidence holding the answer, per document kind (x) and flow or baseline (bars):
    `records` are bench qa's, `kinds` maps a document id to its kind."""
    ans = [r for r in records if not r["unanswerable"]]
    flows = list(dict.fromkeys(r["flow"] for r in ans))
    kind_list = sorted({kinds.get(r["doc"], "?") for r in ans})
    fig, axes = plt.subplots(1, 2, figsize=(max(7.0, 1.2 * len(kind_list) * 2), 3.6), dpi=110, sharey=True)
    width = 0.8 / max(1, len(flows))
    for ax, key, label in ((axes[0], "correct", "right"), (axes[1], "evidence_recall", "evidence holds the answer")):
        for i, flow in enumerate(flows):
            vals = []
            for k in kind_list:
                rs = [r for r in ans if r["flow"] == flow and kinds.get(r["doc"], "?") == k]
                vals.append(100 * sum(bool(r[key]) for r in rs) / len(rs) if rs else float("nan"))
            ax.bar([x + i * width for x in range(len(kind_list))], vals, width, label=flow)
        ax.set_xticks([x + width * (len(flows) - 1) / 2 for x in range(len(kind_list))], kind_list, rotation=30)
        ax.set_title(label, fontsize=10)
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("% of answerable questions")
    axes[1].legend(fontsize=8, loc="lower right")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
