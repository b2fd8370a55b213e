"""Figures: a needle heatmap per method (like InfiniPot Figure 5) and memory / speed against length (Figure 7).

matplotlib with the Agg backend (no display needed); every figure is written to a PNG and closed.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

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
    """2x2: peak RSS, peak KV cache, read throughput, decode throughput — against length, one line per method."""
    ok = [r for r in runs if not r.get("skipped") and not r.get("error")]
    methods = list(dict.fromkeys(r["method"] for r in runs))
    panels = [("peak_rss_mb", "peak RSS (MB)"), ("kv_peak_mb", "peak KV cache (MB)"),
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
