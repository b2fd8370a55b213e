"""Progress on stderr for long benchmark runs: tokens read, tok/s, ETA for the run and for the whole benchmark.

On a terminal one line is rewritten in place (at most ~4 times a second); otherwise a line is printed at
most every `every_s` seconds, so logs of a 1M-token run stay readable.
"""

from __future__ import annotations

import sys
import time

from ..units import fmt_dur


def fmt_tokens(n: float) -> str:
    n = float(n)
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{int(n) >> 20}m"
    if n >= 1024 and n % 1024 == 0:
        return f"{int(n) >> 10}k"
    if n >= 10_000:
        return f"{n / 1000:.1f}K"
    return str(int(n))


class Progress:
    """Tracks one benchmark: `total` document tokens over all runs; `start(label, n)` per run."""

    def __init__(self, total_tokens: int, stream=None, every_s: float = 5.0, enabled: bool = True):
        self.total = max(1, total_tokens)
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every = 0.25 if self.tty else every_s
        self.enabled = enabled
        self.done = 0            # tokens of finished runs
        self.t_start = time.perf_counter()
        self.label = ""
        self.run_total = 0
        self.run_t0 = self.t_start
        self.last = 0.0
        self.cur = 0

    def start(self, label: str, tokens: int) -> None:
        self.label, self.run_total, self.cur = label, tokens, 0
        self.run_t0 = time.perf_counter()
        self.last = 0.0

    def update(self, tokens_read: int, force: bool = False) -> None:
        self.cur = tokens_read
        now = time.perf_counter()
        if not self.enabled or (not force and now - self.last < self.every):
            return
        self.last = now
        el = now - self.run_t0
        rate = tokens_read / el if el > 0 else 0.0
        eta = (self.run_total - tokens_read) / rate if rate > 0 else float("nan")
        all_el = now - self.t_start
        all_done = self.done + tokens_read
        all_rate = all_done / all_el if all_el > 0 else 0.0
        all_eta = (self.total - all_done) / all_rate if all_rate > 0 else float("nan")
        line = (f"{self.label}: {fmt_tokens(tokens_read)}/{fmt_tokens(self.run_total)} tok, {rate:,.0f} tok/s, "
                f"ETA {fmt_dur(eta)}")
        if self.total > self.run_total:
            line += f" | all {100 * all_done / self.total:.0f}%, ETA {fmt_dur(all_eta)}"
        if self.tty:
            self.stream.write("\r\x1b[2K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self, note: str = "") -> None:
        """End a run: count its tokens and print one summary line."""
        self.done += self.run_total
        if not self.enabled:
            return
        el = time.perf_counter() - self.run_t0
        line = f"{self.label}: {fmt_tokens(self.cur)} tok in {fmt_dur(el)}" + (f" — {note}" if note else "")
        self.stream.write(("\r\x1b[2K" if self.tty else "") + line + "\n")
        self.stream.flush()

    def skip(self, note: str) -> None:
        self.done += self.run_total
        if self.enabled:
            self.stream.write(("\r\x1b[2K" if self.tty else "") + f"{self.label}: skipped ({note})\n")
            self.stream.flush()
