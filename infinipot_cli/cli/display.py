"""Progress display for the engine's `Event`s: a rich live view on a terminal, a few plain lines elsewhere.

Everything goes to stderr (or the stream given); stdout belongs to the answer, which the CLI writes.

    with Display(mode) as d:
        d.set_source("book.pdf (1/1)"); d.set_total(None, progress_fn=opener.fraction)
        engine = Engine(..., on_event=d.on_event)
        ...

Modes: "auto" (rich live view if the stream is a terminal and TERM is not dumb, else "plain"), "rich",
"plain" (a start line, a line per 10 % of progress or a slow heartbeat, a summary line) and "quiet" (nothing).
NO_COLOR (https://no-color.org) is honoured: no colours, distinct glyphs instead, the live view still runs.

`on_event` is called per forwarded chunk and per generated token, so it only stores numbers: O(1) per
event, except on "distill" where the kept document positions are copied (and sorted) once. The live view
redraws itself at most 4 times a second from rich's refresh thread; the memory strip is binned at draw
time with a binary search per cell (`memory_strip`), so it follows the document as it grows.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections import deque
from typing import Callable

import numpy as np

from ..units import fmt_bytes, fmt_dur

MODES = ("auto", "rich", "plain", "quiet")
STRIP_WIDTH = 60
BAR_WIDTH = 40
FOCUS_LABEL = "question's attention strongest at"  # the live line naming the focus (scoring/focus.py)
BLOCKS = "▁▂▃▄▅▆▇█"
SPEED_WINDOW_S = 10.0     # tok/s is measured over about this much of the recent past
SAMPLE_EVERY_S = 0.5      # one speed sample at most this often
PLAIN_CHECK_S = 0.25      # plain mode looks at the progress at most this often
PLAIN_HEARTBEAT_S = 15.0  # plain mode, progress unknown: a line every 15 s at first, then every elapsed/10
PLAIN_SLOW_S = 60.0       # plain mode, progress known: a line at least this often besides the 10 % steps...
PLAIN_FIRST_S = 15.0      # ... and the first one this soon after the start line (the speed and ETA early)
PLAIN_PHASE_S = 2.0       # plain mode: a step before reading (loading the model...) lasting this long gets a line

# colours: pot segments and strip (dropped by rich under NO_COLOR; glyphs tell them apart then)
C_PINNED, C_DISTILLED, C_FRESH, C_FREE = "magenta", "cyan", "green", "dim"
MESSAGE_STYLES = {"warning": "yellow", "warn": "yellow", "error": "bold red", "info": "dim", "ok": "green",
                  "success": "green", "": ""}


# ---- formatting helpers -----------------------------------------------------------------------------
def fmt_int(n: int | float | None) -> str:
    return "?" if n is None else f"{int(n):,}"


def fmt_pct(f: float) -> str:
    """A fraction as a percentage: one decimal below 10 % ("0.4%"), so a long read's first percent moves, else
    whole ("42%")."""
    p = 100 * f
    return f"{p:.1f}%" if 0 < p < 9.95 else f"{p:.0f}%"


def fmt_rate(r: float | None) -> str:
    if r is None or not math.isfinite(r):
        return "? tok/s"
    return f"{r:,.0f} tok/s" if r >= 10 else f"{r:.1f} tok/s"


# ---- the memory strip -----------------------------------------------------------------------------------
def as_sorted_positions(kept_src) -> np.ndarray:
    """kept_src (torch tensor, numpy array or list of document positions; negative ones, the pinned header, are
    dropped) -> sorted unique int64 array."""
    if kept_src is None:
        return np.zeros(0, dtype=np.int64)
    if hasattr(kept_src, "detach"):
        kept_src = kept_src.detach().cpu().numpy()
    a = np.asarray(kept_src, dtype=np.int64).reshape(-1)
    a = a[a >= 0]
    if a.size > 1 and not bool((a[1:] > a[:-1]).all()):
        a = np.unique(a)
    return a


def memory_strip(kept: np.ndarray, distilled_upto: int, tokens_read: int,
                 width: int = STRIP_WIDTH) -> list[tuple[float, bool]]:
    """What the pot remembers of the document read so far, as `width` cells over [0, tokens_read).

    kept: sorted document positions held by some head after the last distillation, which happened when
    `distilled_upto` tokens had been read; tokens read since are all in the pot ("fresh").
    Returns per cell (fraction of its tokens remembered, mostly fresh?). Cost: O(width * log len(kept)).
    """
    T = int(tokens_read)
    if T <= 0 or width <= 0:
        return []
    D = max(0, min(int(distilled_upto), T))
    w = min(width, T)
    edges = (np.arange(w + 1, dtype=np.int64) * T) // w          # every cell gets >= 1 token
    lo, hi = edges[:-1], edges[1:]
    n = hi - lo
    k = np.searchsorted(kept, np.minimum(hi, D)) - np.searchsorted(kept, np.minimum(lo, D))  # kept below D
    fresh = np.clip(hi - np.maximum(lo, D), 0, None)
    frac = np.minimum(1.0, (k + fresh) / n)
    return [(float(f), bool(2 * fr >= c)) for f, fr, c in zip(frac, fresh, n)]


def strip_chars(cells: list[tuple[float, bool]]) -> str:
    """The strip as plain characters: ' ' for nothing kept, ▁..█ for the kept fraction (rounded up)."""
    return "".join(cell_char(f) for f, _ in cells)


def cell_char(f: float) -> str:
    if f <= 0.0:
        return " "
    return BLOCKS[min(7, max(0, math.ceil(f * 8) - 1))]


def _segments(size: int, parts: list[int], width: int) -> list[int]:
    """Cells per part for a bar of `width` cells standing for `size` entries; a non-empty part gets >= 1 cell."""
    parts = [max(0, int(p)) for p in parts]
    if size <= 0 or width <= 0:
        return [0] * len(parts)
    exact = [p * width / size for p in parts]
    target = min(width, round(sum(exact)))
    cells = [max(1, int(e)) if p > 0 else 0 for p, e in zip(parts, exact)]
    while sum(cells) > target and max(cells) > 1:  # take from the part that can spare most
        i = max(range(len(cells)), key=lambda k: (cells[k] > 1, cells[k] - exact[k], cells[k]))
        cells[i] -= 1
    while sum(cells) < target:  # give to the largest remainder
        i = max(range(len(cells)), key=lambda k: (parts[k] > 0, exact[k] - cells[k]))
        cells[i] += 1
    return cells


# ---- the display ------------------------------------------------------------------------------------
class Display:
    def __init__(self, mode: str = "auto", stream=None, total_tokens: int | None = None):
        if mode not in MODES:
            raise ValueError(f"unknown display mode {mode!r} (use one of {', '.join(MODES)})")
        from rich.console import Console

        self.clock: Callable[[], float] = time.monotonic  # tests may replace it
        self.no_color = os.environ.get("NO_COLOR", "") != ""
        if isinstance(stream, Console):
            self.console = stream
            self.stream = stream.file
        else:
            self.stream = stream if stream is not None else sys.stderr
            self.console = None
        if mode == "auto":
            mode = "rich" if self._stream_is_terminal() else "plain"
        self.mode = mode
        if mode == "rich" and self.console is None:
            self.console = Console(file=self.stream, force_terminal=True, no_color=self.no_color or None,
                                   highlight=False)
        self._live = None
        self._live_paused = False  # stopped while the answer streams to the same terminal
        self.total: int | None = total_tokens
        self.progress_fn: Callable[[], float] | None = None
        self.source = ""
        self._reset_reading()
        self._ev = None            # the last event
        self._ev_clock = None      # self.clock() when it came
        self.phase = "starting"    # starting | reading | answering | done
        self.step = ""             # what "starting" waits for: "loading the model", "converting the model"...
        self._step_timer = None
        self._chunk: tuple[float, int] | None = None  # (clock, tokens) of the forward pass now running
        self._chunk_rate: float | None = None          # tokens per second of the last forward pass
        self.answer_tokens = 0
        self._answer_t0: float | None = None
        self.answer_s: float | None = None
        self._entered = False

    def _reset_reading(self) -> None:
        """State of one pass over a document (reset when tokens_read goes backwards: a new engine)."""
        self._mem: tuple[np.ndarray, int] = (np.zeros(0, dtype=np.int64), 0)  # (kept positions, read then)
        self._first_read: tuple[float, int] | None = None   # (elapsed_s, tokens_read) of the first read
        self._last_read_s = 0.0
        self._tokens = 0
        self._samples: deque[tuple[float, int]] = deque()
        self._plain_started = False
        self._plain_check = -math.inf
        self._plain_last_line = -math.inf
        self._plain_step = 0
        self._plain_t0 = 0.0

    def _stream_is_terminal(self) -> bool:
        if os.environ.get("TERM", "").strip().lower() in ("dumb", "unknown"):
            return False
        if self.console is not None:
            return self.console.is_terminal and not self.console.is_dumb_terminal
        try:
            return bool(self.stream.isatty())
        except Exception:  # noqa: BLE001 - closed or odd streams are not terminals
            return False

    # ---- context --------------------------------------------------------------------------------
    def __enter__(self) -> "Display":
        self._entered = True
        if self.mode == "rich":
            self._start_live()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._stop_live()
        self._entered = False
        if exc_type is None and self._ev is not None and self.mode in ("rich", "plain"):
            line = self.summary_line()
            if self.mode == "rich":
                from rich.text import Text

                self.console.print(Text(line, style="dim"), soft_wrap=True)
            else:
                self._write(line)

    def _start_live(self) -> None:
        if self._live is not None:
            return
        from rich.live import Live

        real_stderr = self.console.file in (sys.stderr, sys.__stderr__)
        self._live = Live(console=self.console, get_renderable=self.renderable, refresh_per_second=4,
                          transient=True, redirect_stdout=False, redirect_stderr=real_stderr)
        self._live.start(refresh=True)
        self._live_paused = False

    def _stop_live(self) -> None:
        if self._step_timer is not None:
            self._step_timer.cancel()
            self._step_timer = None
        live, self._live = self._live, None
        if live is not None:
            live.stop()

    # ---- inputs ---------------------------------------------------------------------------------
    def set_total(self, total_tokens: int | None, progress_fn: Callable[[], float] | None = None) -> None:
        """Total document tokens (known or estimated), and/or a function giving the fraction consumed."""
        self.total = int(total_tokens) if total_tokens else None
        self.progress_fn = progress_fn

    def set_source(self, label: str) -> None:
        self.source = label or ""

    def set_step(self, text: str, said: bool = False) -> None:
        """What the run waits for before reading ("loading the model", "converting the model", ...): shown
        after "starting…" in the live view; in plain mode, a line when it lasts PLAIN_PHASE_S (not when a message
        just `said` it: the step is then not told twice)."""
        self.step = text or ""
        timer, self._step_timer = self._step_timer, None
        if timer is not None:
            timer.cancel()
        if self.mode == "plain" and self.step and self.phase == "starting" and not said:
            import threading

            line, step = f"{self._label()}{self.step}…", self.step
            self._step_timer = threading.Timer(
                PLAIN_PHASE_S, lambda: self.phase == "starting" and self.step == step and self._write(line))
            self._step_timer.daemon = True
            self._step_timer.start()

    def message(self, text: str, style: str = "", always: bool = False) -> None:
        """A warning/info line on stderr, above the live view. Quiet mode prints nothing, except `always`
        lines (warnings, where a partial pot went), as plain "infinipot: TEXT"."""
        if self.mode == "quiet":
            if always:
                self.stream.write(f"infinipot: {text}\n")
                self.stream.flush()
            return
        if self.mode == "plain":
            self._write(text)
            return
        from rich.style import Style
        from rich.text import Text

        st = MESSAGE_STYLES.get(style)
        if st is None:
            try:
                Style.parse(style)
                st = style
            except Exception:  # noqa: BLE001 - an unknown style name is no reason to fail
                st = ""
        self.console.print(Text(text, style=st), soft_wrap=True)

    def warn(self, text: str) -> None:
        """A warning: above the live view, and on stderr even in quiet mode (-q silences only the progress), as
        "infinipot: warning: TEXT" like every other warning and error line."""
        self.notice(f"warning: {text}", style="warning")

    def notice(self, text: str, style: str = "") -> None:
        """A line the user must see whatever the mode (a cached pot evicted, a warning): "infinipot: TEXT" on
        stderr, above the live view, -q included."""
        self.message(text if self.mode == "quiet" else f"infinipot: {text}", style=style, always=True)

    def result(self, text: str, style: str = "") -> None:
        """A line of the command's result on stderr (an answer's evidence): above the live view, shown as it is
        in every mode, -q included (-q hides only the live display)."""
        if self.mode == "quiet":
            self._write(text)
        else:
            self.message(text, style=style)

    def on_event(self, ev) -> None:
        """Record an engine Event. O(1) except for copying kept_src on "distill"."""
        now = self.clock()
        kind = ev.kind
        self._ev, self._ev_clock = ev, now
        if kind == "forward":  # a forward pass of ev.chunk tokens begins: its progress until "read"
            self._chunk = (now, ev.chunk)
            return
        if kind == "read":
            if self._chunk is not None:
                dt = now - self._chunk[0]
                if dt > 0:
                    self._chunk_rate = self._chunk[1] / dt
                self._chunk = None
            tok, t = ev.tokens_read, ev.elapsed_s
            if tok < self._tokens:
                self._reset_reading()
            self._tokens, self._last_read_s = tok, t
            if self._first_read is None:
                self._first_read = (t, tok)
                self._samples.append((t, tok))
            elif t - self._samples[-1][0] >= SAMPLE_EVERY_S:
                self._samples.append((t, tok))
                while len(self._samples) > 2 and t - self._samples[1][0] >= SPEED_WINDOW_S:
                    self._samples.popleft()
            if self.phase != "reading":
                self.phase = "reading"
                if self._live_paused and self._entered:
                    self._start_live()
            if self.mode == "plain":
                self._plain_read(ev, now)
        elif kind == "distill":
            if ev.kept_src is not None:
                self._mem = (as_sorted_positions(ev.kept_src), ev.tokens_read)  # one assignment: the
                # refresh thread never sees positions of one distillation with the count of another
        elif kind == "token":
            self.answer_tokens += 1
        elif kind == "answer":
            self.phase = "answering"
            self.answer_tokens = 0
            self._answer_t0 = ev.elapsed_s
            self.answer_s = None
            if self.mode == "plain":
                self._write(f"{self._label()}answering… ({self._read_part()})")
            elif self.mode == "rich" and self._live is not None and self._answer_on_same_terminal():
                # the answer streams to stdout on this very terminal: get the live view out of its way
                self._stop_live()
                self._live_paused = True
                from rich.text import Text

                self.console.print(Text(f"{self._label()}{self._read_part()} · answering…", style="dim"),
                                   soft_wrap=True)
        elif kind == "done":
            self.phase = "done"
            if self._answer_t0 is not None:
                self.answer_s = max(0.0, ev.elapsed_s - self._answer_t0)

    def _answer_on_same_terminal(self) -> bool:
        try:
            return self.console.file in (sys.stderr, sys.__stderr__) and sys.stdout.isatty()
        except Exception:  # noqa: BLE001
            return False

    # ---- derived numbers ------------------------------------------------------------------------
    def fraction(self) -> float | None:
        """Fraction of the input consumed: tokens/total when the total is known, else progress_fn()."""
        if self.total:
            return min(1.0, self._tokens / self.total)
        if self.progress_fn is not None:
            try:
                f = float(self.progress_fn())
            except Exception:  # noqa: BLE001 - a progress estimate is never worth a crash
                return None
            return min(1.0, max(0.0, f)) if math.isfinite(f) else None
        return None

    def speed(self) -> float | None:
        """Tokens per second over the last ~10 s of reading."""
        try:
            t0, n0 = self._samples[0]
        except IndexError:
            return None
        dt = self._last_read_s - t0
        if dt <= 0:
            return None
        return (self._tokens - n0) / dt

    def eta(self) -> float | None:
        if self.phase != "reading":
            return None
        if self.total:
            sp = self.speed()
            if sp and sp > 0:
                return max(0, self.total - self._tokens) / sp
            return None
        f = self.fraction()
        if f is None or f <= 0 or self._first_read is None:
            return None
        # the tokens left (the total as the fraction read puts it) at the rate of the tokens read since the first
        # read: the time measured made that progress, not all of f (the first forward pass came before any time
        # was counted; with a source of 1M tokens its 1,024 tokens gave 1/5 of the first minute's progress)
        spent = self._last_read_s - self._first_read[0]
        tok0, tok = self._first_read[1], self._tokens
        if spent <= 0 or tok <= tok0:
            return None
        return (tok / f - tok) * spent / (tok - tok0)

    def chunk_progress(self) -> str:
        """The forward pass now running, between the events that end passes: "chunk of 1,024 tokens: ~40 %, 0:03"
        (the share from the last pass's speed), so the view moves while a slow pass runs."""
        chunk = self._chunk
        if chunk is None or self.phase != "reading":
            return ""
        start, n = chunk
        spent = max(0.0, self.clock() - start)
        if spent < 1.0:
            return ""
        share = f"~{min(99, int(100 * spent * self._chunk_rate / n))} %, " if self._chunk_rate and n else ""
        return f"chunk of {fmt_int(n)} tokens: {share}{fmt_dur(spent)}"

    def elapsed(self) -> float:
        """Engine time now: the last event's elapsed_s, carried forward by the wall clock until done."""
        ev = self._ev
        if ev is None:
            return 0.0
        if self.phase == "done":
            return ev.elapsed_s
        return ev.elapsed_s + max(0.0, self.clock() - self._ev_clock)

    def remembered(self) -> int:
        """Distinct document tokens the pot holds now (in some head): kept at the last distillation + fresh."""
        kept, upto = self._mem
        return int(kept.size) + max(0, self._tokens - upto)

    def strip(self, width: int = STRIP_WIDTH) -> list[tuple[float, bool]]:
        kept, upto = self._mem
        return memory_strip(kept, upto, self._tokens, width)

    def summary(self) -> dict:
        """The last known stats."""
        ev = self._ev
        reading_s = self._last_read_s if self._first_read is not None else None
        out = {
            "source": self.source,
            "mode": self.mode,
            "phase": self.phase,
            "tokens_read": self._tokens,
            "total_tokens": self.total,
            "cycles": self.cycles(),
            "entries": ev.entries if ev else 0,
            "pinned": ev.pinned if ev else 0,
            "distilled": ev.distilled if ev else 0,
            "size": ev.size if ev else None,
            "where": ev.where if ev else "",
            "elapsed_s": round(ev.elapsed_s, 3) if ev else 0.0,
            "reading_s": round(reading_s, 3) if reading_s is not None else None,
            "tokens_per_s": round(self._tokens / reading_s, 1) if reading_s else None,
            "kv_bytes": ev.kv_bytes if ev else 0,
            "remembered_tokens": self.remembered(),
            "answer_tokens": self.answer_tokens,
            "answer_s": round(self.answer_s, 3) if self.answer_s is not None else None,
        }
        return out

    # ---- text pieces ----------------------------------------------------------------------------
    def _label(self) -> str:
        return f"{self.source}: " if self.source else ""

    def cycles(self) -> int:
        """Distillation cycles of the reading (the engine does not count the answer's own distillation)."""
        return self._ev.cycles if self._ev else 0

    def _read_part(self) -> str:
        cycles = self.cycles()
        done = f"{cycles} CCD cycle{'s' if cycles != 1 else ''}"
        ev = self._ev
        if self._first_read is None and ev is not None and ev.tokens_read:  # a loaded pot, nothing read now
            return f"a pot of {fmt_int(ev.tokens_read)} tokens read before, {done}"
        return f"read {fmt_int(self._tokens)} tokens, {done}"

    def summary_line(self) -> str:
        s = self.summary()
        parts = []
        if s["reading_s"] is not None:
            rate = f" ({fmt_rate(s['tokens_per_s'])})" if s["tokens_per_s"] and s["reading_s"] > 0 else ""
            parts.append(f"read {fmt_int(s['tokens_read'])} tokens in {fmt_dur(s['reading_s'])}{rate}")
            parts.append(f"{s['cycles']} CCD cycle{'s' if s['cycles'] != 1 else ''}")
        if s["size"]:
            parts.append(f"pot {fmt_int(s['entries'])}/{fmt_int(s['size'])} entries")
        else:
            parts.append(f"pot {fmt_int(s['entries'])} entries (unbounded)")
        if s["tokens_read"]:
            pct = 100.0 * s["remembered_tokens"] / s["tokens_read"]
            parts.append(f"remembers {fmt_int(s['remembered_tokens'])} tokens ({pct:.1f}%)")
        parts.append(f"KV {fmt_bytes(s['kv_bytes'])}")
        if s["answer_tokens"] or s["answer_s"] is not None:
            a = f"answer {fmt_int(s['answer_tokens'])} tokens"
            if s["answer_s"]:
                a += f" in {s['answer_s']:.1f} s"
            parts.append(a)
        return f"{self._label()}" + " · ".join(parts)

    def progress_line(self) -> str:
        f = self.fraction()
        ev = self._ev
        parts = []
        if f is not None:
            parts.append(f"{fmt_pct(f):>4}")
        tok = f"{fmt_int(self._tokens)}"
        if self.total:
            tok += f"/{fmt_int(self.total)}"
        parts.append(f"{tok} tokens")
        cycles = self.cycles()
        parts.append(f"{cycles} cycle{'s' if cycles != 1 else ''}")
        if self.speed() is not None:  # nothing until a speed is known (no "? tok/s")
            parts.append(fmt_rate(self.speed()))
        eta = self.eta()
        if eta is not None:
            parts.append(f"ETA {fmt_dur(eta)}")
        if ev is not None and ev.where:
            parts.append(ev.where)
        if ev is not None and ev.focus:  # `ask DOC Q`: where the question's attention is strongest so far
            parts.append(f"{FOCUS_LABEL} {ev.focus}")
        return f"{self._label()}" + " · ".join(parts)

    # ---- plain mode -----------------------------------------------------------------------------
    def _write(self, line: str) -> None:
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except Exception:  # noqa: BLE001 - a closed stderr must not stop the reading
            pass

    def _plain_read(self, ev, now: float) -> None:
        if not self._plain_started:
            self._plain_started = True
            self._plain_check = self._plain_last_line = self._plain_t0 = now
            size = f"a pot of {fmt_int(ev.size)} entries" if ev.size else "an unbounded pot"
            total = f" (~{fmt_int(self.total)} tokens)" if self.total else ""
            self._write(f"{self._label()}reading{total} into {size}")
            return
        if now - self._plain_check < PLAIN_CHECK_S:
            return
        self._plain_check = now
        f = self.fraction()
        since = now - self._plain_last_line
        if f is not None:
            step = int(f * 10 + 1e-9)
            first = self._plain_last_line == self._plain_t0  # no progress line yet, only the start line
            due = (self._plain_step < step < 10) or since >= (PLAIN_FIRST_S if first else PLAIN_SLOW_S)
            if due:
                self._plain_step = max(self._plain_step, step)
        else:
            due = since >= max(PLAIN_HEARTBEAT_S, (now - self._plain_t0) / 10)
        if due:
            self._plain_last_line = now
            self._write(self.progress_line())

    # ---- rich view ------------------------------------------------------------------------------
    def renderable(self):
        """The live view as a rich renderable (also used by tests). Never raises: it runs in rich's thread."""
        try:
            return self._renderable()
        except Exception as e:  # noqa: BLE001 - a drawing bug must not kill the reading
            from rich.text import Text

            return Text(f"{self._label()}{self._read_part()} (display error: {type(e).__name__})", style="dim")

    def _renderable(self):
        from rich.spinner import Spinner
        from rich.table import Table
        from rich.text import Text

        console = self.console
        width = console.width if console is not None else 80
        no_color = bool(console.no_color) if console is not None else self.no_color
        ev = self._ev

        head = Text()
        if self.phase == "answering":
            head.append("answering…", style="bold")
            head.append(f"  {fmt_int(self.answer_tokens)} tokens", style="dim")
        elif self.phase == "done":
            head.append("done", style="bold")
        elif self.phase == "reading":
            head.append("reading", style="bold")
        else:
            head.append("starting…", style="bold")
            if self.step:
                head.append(f" {self.step}")
        if self.source:
            head.append(f"  {self.source}")
        if ev is not None and ev.where:
            head.append(f"  · {ev.where}", style="dim")
        top = Table.grid(padding=(0, 1))
        top.add_row(Spinner("dots", style="cyan") if self.phase != "done" else Text("✓", style="green"), head)

        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="dim", justify="right", no_wrap=True, min_width=6)
        grid.add_column(no_wrap=True, overflow="ellipsis")
        if ev is None:
            from rich.console import Group

            return Group(top)

        # pot occupancy
        bar_w = max(10, min(BAR_WIDTH, width - 30))
        entries, pinned = max(0, ev.entries), max(0, ev.pinned)
        distilled = max(0, min(ev.distilled, entries) - pinned)
        fresh = max(0, entries - max(ev.distilled, pinned))
        glyph = ("█", "▓", "▒", "·") if no_color else ("█", "█", "█", "░")
        if ev.size:
            free = max(0, ev.size - entries)
            cells = _segments(ev.size, [pinned, distilled, fresh, free], bar_w)
            bar = Text()
            for n, g, c in zip(cells, glyph, (C_PINNED, C_DISTILLED, C_FRESH, C_FREE)):
                bar.append(g * n, style=c)
            bar.append(f"  {fmt_int(entries)} / {fmt_int(ev.size)}")
            grid.add_row("pot", bar)
            legend = Text()
            for g, c, name, n in ((glyph[0], C_PINNED, "pinned", pinned), (glyph[1], C_DISTILLED, "distilled", distilled),
                                  (glyph[2], C_FRESH, "fresh", fresh), (glyph[3], C_FREE, "free", free)):
                legend.append(g, style=c)
                legend.append(f" {name} {fmt_int(n)}  ")
            grid.add_row("", legend)
        else:
            grid.add_row("pot", Text(f"{fmt_int(entries)} entries (unbounded: no distillation)"))

        # reading
        read = Text(f"{fmt_int(self._tokens)}")
        if self.total:
            read.append(f" / {fmt_int(self.total)}")
        read.append(" tokens")
        f = self.fraction()
        if f is not None:
            read.append(f"  {fmt_pct(f)}", style="bold")
        if self.speed() is not None:
            read.append(f"  · {fmt_rate(self.speed())}")
        eta = self.eta()
        if eta is not None:
            read.append(f"  · ETA {fmt_dur(eta)}")
        read.append(f"  · {fmt_dur(self.elapsed())}", style="dim")
        grid.add_row("read", read)
        chunk = self.chunk_progress()
        if chunk:
            grid.add_row("", Text(chunk, style="dim"))
        cycles = self.cycles()
        grid.add_row("CCD", Text(f"{cycles} cycle{'s' if cycles != 1 else ''}  · KV {fmt_bytes(ev.kv_bytes)}"))

        # memory strip
        strip_w = max(10, min(STRIP_WIDTH, width - 12))
        cells = self.strip(strip_w)
        st = Text()
        run, run_style = "", None
        for frac, is_fresh in cells:  # one span per run of equally styled cells
            ch, style = ("·", "dim") if frac <= 0 else (cell_char(frac), C_FRESH if is_fresh else C_DISTILLED)
            if style != run_style and run:
                st.append(run, style=run_style)
                run = ""
            run, run_style = run + ch, style
        if run:
            st.append(run, style=run_style)
        grid.add_row("memory", st)
        if self._tokens:
            pct = 100.0 * self.remembered() / self._tokens
            note = Text(f"holds {fmt_int(self.remembered())} of {fmt_int(self._tokens)} tokens read ({pct:.1f}%)",
                        style="dim")
            if self._mem[1] < self._tokens:
                note.append("  ")
                note.append("█", style=C_FRESH)
                note.append(" read since the last cycle", style="dim")
            grid.add_row("", note)
        if ev.focus:  # `ask DOC Q`: where the question's attention has been strongest so far (scoring/focus.py)
            grid.add_row("focus", Text(f"{FOCUS_LABEL} {ev.focus}"))

        from rich.console import Group

        return Group(top, grid)
