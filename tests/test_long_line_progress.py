"""A text of one huge line reads with progress that moves: the source reports its fraction piece by piece within
the line, the display shows a long read's first percent with a decimal and a first plain line soon, and the ETA
counts only the progress made in the time it measures."""

from __future__ import annotations

import io
import random

import pytest

from infinipot_cli.cli.display import Display, fmt_pct
from infinipot_cli.documents import open_source
from infinipot_cli.pot.engine import Event
from infinipot_cli.pot.reader import SourceRecord, read_source


class CharTok:
    """One token per character."""

    def encode(self, text, add_special_tokens=False):
        return [ord(c) for c in text]


class StubEngine:
    """Takes fed tokens as forwarded at once."""

    def __init__(self):
        self.tokens_read, self.where, self.pending, self._fed = 0, "", [], 0

    def feed(self, ids, where=""):
        self.tokens_read += len(ids)
        self.where = where

    def finish(self):
        pass


def one_line(n_bytes: int, spaces: bool = True) -> str:
    rnd = random.Random(1)
    words = "the quick brown fox jumps over a lazy dog while seven ferries leave pier three".split()
    if not spaces:
        return "".join(rnd.choice("abcdefghij0123456789") for _ in range(n_bytes))
    out, n = [], 0
    while n < n_bytes:
        w = rnd.choice(words)
        out.append(w)
        n += len(w) + 1
    return " ".join(out)


@pytest.mark.parametrize("spaces", [True, False])
def test_a_single_huge_line_reports_its_progress_piece_by_piece(tmp_path, spaces):
    path = tmp_path / "one-line.txt"
    path.write_text(one_line(1_000_000, spaces))
    seen: list[tuple[float, int]] = []
    eng = StubEngine()
    src = open_source(str(path))
    read_source(eng, CharTok(), src, SourceRecord(path=str(path), format="text"),
                progress=lambda f: seen.append((f, eng.tokens_read)))
    fractions = [f for f, _ in seen]
    assert len(set(fractions)) >= 100  # a 2,000-character piece at a time, not one step per line
    assert fractions == sorted(fractions) and fractions[-1] == pytest.approx(1.0)
    total = eng.tokens_read
    for f, read in seen[:-1]:  # the fraction follows the tokens read
        assert abs(f - read / total) < 0.01, (f, read, total)
    assert eng.where == "line 1" and src.units == {"lines": 1}


def ev(tokens, t):
    return Event(kind="read", tokens_read=tokens, cycles=0, entries=100, pinned=40, distilled=40, size=2048,
                 where="line 1", elapsed_s=t, kv_bytes=0, text="", kept_src=None)


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_a_slow_long_read_shows_moving_progress_and_a_sane_eta():
    """A read of 1M tokens at 50 tokens/s, its first forward pass reaching 1 % before any time is counted: after
    150 s the plain display has written lines besides the start line, its percentages move (with a decimal
    below 10 %), and the ETA is the time the rest takes at that speed (not at a speed inflated by the first 1 %)."""
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    clock = Clock()
    d.clock = clock
    total, rate, first = 1_000_000, 50.0, 10_000
    state = {"f": 0.0}
    d.set_total(None, progress_fn=lambda: state["f"])
    t, tokens = 0.0, first
    state["f"] = tokens / total
    d.on_event(ev(tokens, t))
    while t < 150:
        t += 1024 / rate
        clock.t += 1024 / rate
        tokens += 1024
        state["f"] = tokens / total
        d.on_event(ev(tokens, t))
    lines = buf.getvalue().splitlines()
    progress = [x for x in lines[1:] if "tokens" in x]
    assert len(progress) >= 2, lines
    shown = [x.split(" · ")[0].strip() for x in progress]
    assert len(set(shown)) == len(shown) and all(s.endswith("%") and "." in s for s in shown), shown
    left = (total - tokens) / rate
    assert d.eta() == pytest.approx(left, rel=0.05), (d.eta(), left)


def test_percentages():
    assert [fmt_pct(f) for f in (0.0, 0.004, 0.0994, 0.0996, 0.42, 1.0)] == ["0%", "0.4%", "9.9%", "10%", "42%",
                                                                              "100%"]
