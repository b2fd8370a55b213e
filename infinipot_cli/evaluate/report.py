"""Reports: option parsing helpers, rich tables on stdout, JSON files written atomically."""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from ..errors import UsageError
from .progress import fmt_tokens

_LEN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_lengths(spec: str) -> list[int]:
    """"4k,16k,64k,256k,1m" -> [4096, 16384, 65536, 262144, 1048576] (k = 1024, m = 1024^2; plain ints too)."""
    out = []
    for part in spec.split(","):
        if not part.strip():
            continue
        m = _LEN.match(part)
        if not m:
            raise UsageError(f"--lengths: cannot read {part.strip()!r} (use e.g. 4k,16k,1m or 3000)")
        n = float(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20}[m.group(2).lower()]
        if n < 1:
            raise UsageError(f"--lengths: {part.strip()!r} is not a positive length")
        out.append(int(n))
    if not out:
        raise UsageError("--lengths: give at least one length")
    return out


def parse_depths(spec: str) -> list[float]:
    try:
        out = [float(p) for p in spec.split(",") if p.strip()]
    except ValueError:
        raise UsageError(f"--depths: cannot read {spec!r} (use e.g. 0.1,0.5,0.9)") from None
    if not out or any(not 0.0 <= d <= 1.0 for d in out):
        raise UsageError("--depths: give depths between 0 and 1, e.g. 0.1,0.5,0.9")
    return out


def parse_methods(spec: str, allowed: list[str]) -> list[str]:
    out = []
    from ..pot.config import split_method_spec

    for m in (p.strip().lower() for p in spec.split(",")):
        if not m:
            continue
        if m == "nuc":
            m = "sirllm"
        base, _ = split_method_spec(m)  # "infinipot+segment=32": a method with options
        if base not in allowed:
            raise UsageError(f"--methods: unknown method {m!r}; choose from {', '.join(allowed)}")
        if m not in out:
            out.append(m)
    if not out:
        raise UsageError("--methods: give at least one method")
    return out


def write_json(path: Path, obj) -> None:
    """Write JSON atomically (a temp file in the same folder, then rename)."""
    write_text(path, json.dumps(obj, indent=1) + "\n")


def write_text(path: Path, text: str) -> None:
    """Write a text file atomically (a temp file in the same folder, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the file ordinary permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def console() -> Console:
    """A console on the current stdout (looked up at call time, so test runners' capture works).

    Not a terminal (a pipe, a file, a test runner): 160 columns, so the wide speed table stays readable.
    """
    tty = bool(getattr(sys.stdout, "isatty", lambda: False)())
    return Console(highlight=False, soft_wrap=False, width=None if tty else 160)


# ---- needle -----------------------------------------------------------------------------------------------

def needle_table(summary: list[dict], depths: list[float]) -> Table:
    """Rows method x length, columns depth (+ all): correct/trials per cell; OOD where a cell was skipped.

    The last column, "held", is the share of the needle's tokens the pot still held when the question was
    answered (mean over all (layer, KV head) and trials): it separates what the pot lost from what the model
    answered wrongly with the needle in memory."""
    t = Table(title="Needle in a haystack: correct / trials", title_justify="left")
    t.add_column("method")
    t.add_column("length", justify="right")
    for d in depths:
        t.add_column(f"depth {d:g}", justify="right")
    t.add_column("all", justify="right")
    t.add_column("held", justify="right")
    rows: dict[tuple, dict] = {}
    for c in summary:
        rows.setdefault((c["method"], c["length"]), {})[c["depth"]] = c
    for (method, length), cells in rows.items():
        vals, ok, n, held = [], 0, 0, []
        for d in depths:
            c = cells.get(d)
            if c is not None and c.get("held") is not None:
                held += [c["held"]] * c["n"]
            if c is None:
                vals.append("")
            elif c["n"] == 0:
                vals.append(c["skipped"] or "-")
            else:
                ok, n = ok + c["correct"], n + c["n"]
                style = "green" if c["accuracy"] >= 0.999 else ("red" if c["accuracy"] == 0 else "yellow")
                vals.append(f"[{style}]{c['correct']}/{c['n']}[/{style}]")
        total = f"{ok}/{n} ({100 * ok / n:.0f}%)" if n else "-"
        t.add_row(method, fmt_tokens(length), *vals, total, f"{100 * sum(held) / len(held):.0f}%" if held else "-")
    return t


# ---- speed -----------------------------------------------------------------------------------------------

def _pct(part: float, whole: float) -> str:
    if whole <= 0:
        return "-"
    pct = 100 * part / whole
    return f"{pct:.1f}%" if 0 < pct < 9.95 else f"{pct:.0f}%"


def speed_header(runs: list[dict]) -> str:
    """One line: model, device, dtype and torch threads the workers ran with (from their records)."""
    done = [r for r in runs if r.get("model")]
    if not done:
        return "speed: no run completed"
    r = done[0]
    inter = f" ({r['interop_threads']} inter-op)" if r.get("interop_threads") else ""
    gen = sorted({x.get("gen_tokens") for x in done if x.get("gen_tokens")})
    where = f"{r['device']} ({r['gpu_name']})" if r.get("gpu_name") else r["device"]
    return (f"speed: {r['model']} on {where}, {r['dtype']}, {r.get('threads')} threads{inter}; "
            f"generation over {', '.join(map(str, gen)) or '-'} tokens (stop tokens ignored)")


def _answer_times(times: dict | None) -> str:
    """complete_answer_s {"30": s, "300": s} -> "0.9 / 5.1"."""
    return " / ".join(f"{v:.1f}" for v in times.values()) if times else "-"


def speed_table(runs: list[dict]) -> Table:
    t = Table(title="Read speed and memory", title_justify="left")
    for name, just in (("method", "left"), ("length", "right"), ("read tok/s", "right"), ("read s", "right"),
                       ("fwd", "right"), ("NuC", "right"), ("CaP", "right"), ("sel", "right"), ("rerot", "right"),
                       ("disp", "right"), ("other", "right"), ("TTFT s", "right"), ("gen tok/s", "right"),
                       ("30/300-tok answer s", "right"),
                       ("peak RSS MiB", "right"), ("read RSS MiB", "right"), ("KV MiB", "right"),
                       ("peak KV MiB", "right")):
        t.add_column(name, justify=just)
    gpu = any(r.get("gpu_peak_mb") is not None for r in runs)  # CUDA runs: peak GPU memory (max_memory_allocated)
    if gpu:
        t.add_column("GPU peak MiB", justify="right")
    for r in runs:
        length = fmt_tokens(r.get("length") or r["length_target"])
        if r.get("skipped") or r.get("error"):
            why = r["skipped"].split(":")[0] if r.get("skipped") else "error"
            t.add_row(r["method"], fmt_tokens(r["length_target"]), f"[dim]{why}[/dim]", *[""] * (16 if gpu else 15))
            continue
        tm = r["timings"]
        rs = tm["read_s"]
        t.add_row(r["method"], length, f"{r['read_tok_s']:,.0f}", f"{rs:.1f}",
                  *(_pct(tm.get(k, 0.0), rs) for k in ("forward", "nuc", "cap", "select", "rerotate", "display",
                                                       "other")),
                  f"{r['ttft_s']:.2f}", f"{r['gen_tok_s']:.1f}" if r.get("gen_tok_s") else "-",
                  _answer_times(r.get("complete_answer_s")),
                  f"{r['peak_rss_mb']:,.0f}", f"{r['read_rss_mb']:,.0f}" if r.get("read_rss_mb") else "-",
                  f"{r['kv_bytes'] / 2**20:,.1f}", f"{r['kv_peak_bytes'] / 2**20:,.1f}",
                  *([f"{r['gpu_peak_mb']:,.0f}" if r.get("gpu_peak_mb") is not None else "-"] if gpu else []))
    return t


def speed_notes(runs: list[dict]) -> list[str]:
    """One line per skipped / failed run, and the display-time note (once)."""
    out = []
    for r in runs:
        what = f"{r['method']} {fmt_tokens(r['length_target'])}"
        if r.get("skipped"):
            out.append(f"{what}: skipped — {r['skipped']}")
        elif r.get("error"):
            out.append(f"{what}: failed — {r['error']}")
        if r.get("note"):
            out.append(f"{what}: {r['note']}")
    return out
