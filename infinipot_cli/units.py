"""How durations and sizes are written everywhere (live display, chat, inspect, bench progress and tables):
durations as m:ss or h:mm:ss, sizes in binary units (KiB, MiB, GiB: 2^10, 2^20, 2^30 bytes)."""

from __future__ import annotations

import math

MIB = 1 << 20


def fmt_dur(s: float | None) -> str:
    """Seconds as m:ss, or h:mm:ss from an hour on; "?" when unknown."""
    if s is None or not math.isfinite(s) or s < 0:
        return "?"
    s = int(round(s))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}:{m:02d}:{sec:02d}" if h else f"{m}:{sec:02d}"


def fmt_bytes(n: float | None) -> str:
    """Bytes in the largest binary unit below them (B, KiB, MiB, GiB); "?" when unknown."""
    if n is None:
        return "?"
    n = float(n)
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} GiB"
