"""The progress display: fast tests with hand-made Events, no model."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
import torch
from rich.console import Console

from infinipot_cli.cli.display import Display, as_sorted_positions, memory_strip, strip_chars
from infinipot_cli.pot.engine import Event

SGR = re.compile(r"\x1b\[([0-9;]*)m")


def ev(kind="read", tokens=0, cycles=0, entries=100, pinned=40, distilled=40, size=2048, where="p. 3",
       t=0.0, kv=48_000_000, text="", kept=None):
    return Event(kind=kind, tokens_read=tokens, cycles=cycles, entries=entries, pinned=pinned, distilled=distilled,
                 size=size, where=where, elapsed_s=t, kv_bytes=kv, text=text, kept_src=kept)


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def simulate(d: Display, n_reads=200, per=500, distill_every=10, clock: FakeClock | None = None, dt=0.1,
             answer=True):
    """A reading run: n_reads chunks of `per` tokens, a distillation every `distill_every` chunks."""
    cycles = 0
    for i in range(1, n_reads + 1):
        tok = i * per
        if clock is not None:
            clock.t += dt
        d.on_event(ev("read", tok, cycles, entries=1500, distilled=1024 if cycles else 40, t=i * dt,
                      where=f"p. {i // 10 + 1}"))
        if i % distill_every == 0:
            cycles += 1
            d.on_event(ev("distill", tok, cycles, entries=1024, distilled=1024, t=i * dt,
                          kept=torch.arange(0, tok, 13)))
    if answer:
        t = n_reads * dt
        d.on_event(ev("answer", n_reads * per, cycles, entries=1024, distilled=1024, t=t))
        for k in range(5):
            d.on_event(ev("token", n_reads * per, cycles, entries=1024, distilled=1024, t=t + 0.1 * k, text="x" * k))
        d.on_event(ev("done", n_reads * per, cycles, entries=1024, distilled=1024, t=t + 1.0))
    return cycles


def colour_codes(s: str) -> list[str]:
    """SGR parameters that set a foreground/background colour."""
    bad = []
    for params in SGR.findall(s):
        for p in params.split(";"):
            if p and (30 <= int(p) <= 49 or 90 <= int(p) <= 107):
                bad.append(params)
    return bad


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


# ---- plain / quiet / auto -----------------------------------------------------------------------------
def test_plain_writes_a_few_lines_only_to_its_stream(capsys):
    buf = io.StringIO()
    d = Display("plain", stream=buf, total_tokens=100_000)
    clock = FakeClock()
    d.clock = clock
    d.set_source("book.txt (1/1)")
    with d:
        simulate(d, n_reads=200, per=500, clock=clock, dt=0.1)  # 20 s of reading, 100k tokens
    lines = buf.getvalue().splitlines()
    assert 3 <= len(lines) <= 14, lines
    assert "reading" in lines[0] and "2,048" in lines[0] and "book.txt" in lines[0]
    progress = [l for l in lines[1:-1] if "%" in l and "tokens" in l and "answering" not in l]
    assert 5 <= len(progress) <= 9  # one line per 10 %
    assert re.search(r": +1[01]% ·", progress[0]) and "90%" in progress[-1]
    assert any("answering" in l for l in lines)
    assert lines[-1].startswith("book.txt (1/1): read 100,000 tokens") and "20 CCD cycles" in lines[-1]
    assert "\x1b" not in buf.getvalue()
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ""


def test_plain_unknown_total_heartbeat_is_sparse():
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    clock = FakeClock()
    d.clock = clock
    with d:
        simulate(d, n_reads=600, per=100, clock=clock, dt=0.5, answer=False)  # 300 s, no total
    lines = buf.getvalue().splitlines()
    # start + heartbeats every max(15 s, elapsed/10) + summary
    assert 5 <= len(lines) <= 22, lines
    assert "ETA" not in buf.getvalue()


def test_plain_progress_fn_gives_eta():
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    clock = FakeClock()
    d.clock = clock
    state = {"f": 0.0}
    d.set_total(None, progress_fn=lambda: state["f"])
    with d:
        for i in range(1, 101):
            clock.t += 1.0
            state["f"] = i / 100
            d.on_event(ev("read", i * 1000, t=float(i)))
    text = buf.getvalue()
    assert "ETA" in text and "50%" in text


def test_quiet_prints_nothing(capsys):
    buf = io.StringIO()
    d = Display("quiet", stream=buf, total_tokens=10_000)
    with d:
        simulate(d, n_reads=20)
        d.message("careful", style="warning")
    assert buf.getvalue() == ""
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ""
    s = d.summary()
    assert s["tokens_read"] == 20 * 500 and s["cycles"] == 2 and s["answer_tokens"] == 5


def test_auto_mode_picks_plain_for_pipes_and_dumb_terminals(monkeypatch):
    assert Display("auto", stream=io.StringIO()).mode == "plain"

    class TTY(io.StringIO):
        def isatty(self):
            return True

    assert Display("auto", stream=TTY()).mode == "rich"
    monkeypatch.setenv("TERM", "dumb")
    assert Display("auto", stream=TTY()).mode == "plain"
    with pytest.raises(ValueError):
        Display("fancy")


def test_messages():
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    d.message("warning: page 3 has no text", style="warning")
    assert buf.getvalue() == "warning: page 3 has no text\n"
    con = Console(file=io.StringIO(), force_terminal=True, width=100)
    r = Display("rich", stream=con)
    with r:
        r.message("heads up", style="warning")
        r.message("odd style", style="no-such-style!!")
    assert "heads up" in con.file.getvalue() and "odd style" in con.file.getvalue()


# ---- rich -----------------------------------------------------------------------------------------------
def render_text(d: Display, width=100) -> str:
    out = Console(file=io.StringIO(), width=width, record=True, force_terminal=True)
    out.print(d.renderable())
    return out.export_text()


def test_rich_renders_occupancy_strip_and_stats(capsys):
    con = Console(file=io.StringIO(), force_terminal=True, width=100)
    d = Display("rich", stream=con, total_tokens=200_000)
    d.set_source("book.pdf (2/3)")
    with d:
        d.on_event(ev("read", 10_000, 0, entries=1500, pinned=40, distilled=40, t=1.0))
        d.on_event(ev("read", 20_000, 0, entries=1800, pinned=40, distilled=40, t=2.0))
        d.on_event(ev("distill", 20_000, 1, entries=1024, pinned=40, distilled=1024, t=2.0,
                      kept=torch.arange(0, 10_000)))  # remembers the first half fully
        d.on_event(ev("read", 25_000, 1, entries=1536, pinned=40, distilled=1024, t=3.0, where="ch. 7",
                      kv=50_331_648))
        view = render_text(d)
    # occupancy: pinned 40, distilled 1024-40, fresh 1536-1024, free 2048-1536
    for s in ("1,536 / 2,048", "pinned 40", "distilled 984", "fresh 512", "free 512"):
        assert s in view, (s, view)
    assert "25,000 / 200,000 tokens" in view and "12%" in view
    assert "1 cycle" in view and "48.0 MiB" in view and "ch. 7" in view and "book.pdf (2/3)" in view
    assert "tok/s" in view and "ETA" in view
    strip_line = next(l for l in view.splitlines() if l.strip().startswith("memory"))
    strip = strip_line.split("memory", 1)[1].strip()
    assert len(strip) == 60
    # [0, 10k) kept -> full cells, [10k, 20k) dropped -> dots, [20k, 25k) fresh -> full
    assert strip[:24] == "█" * 24 and strip[24:48] == "·" * 24 and strip[48:] == "█" * 12
    assert "holds 15,000 of 25,000" in view
    # the live view and summary went to the console's file, not to stdout/stderr
    out = con.file.getvalue()
    assert "1,536 / 2,048" in out and "read 25,000 tokens" in out.splitlines()[-1]
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err == ""


def test_rich_answering_and_unbounded():
    con = Console(file=io.StringIO(), force_terminal=True, width=100)
    d = Display("rich", stream=con)
    with d:
        d.on_event(ev("read", 5_000, entries=5_040, size=None, t=1.0))
        assert "5,040 entries (unbounded" in render_text(d)
        d.on_event(ev("answer", 5_000, entries=5_040, size=None, t=1.5))
        d.on_event(ev("token", 5_000, entries=5_040, size=None, t=1.6, text="Hi"))
        assert "answering…" in render_text(d)
        d.on_event(ev("done", 5_000, entries=5_040, size=None, t=2.5))
    s = d.summary()
    assert s["answer_tokens"] == 1 and s["answer_s"] == 1.0 and s["size"] is None
    assert "answer 1 tokens in 1.0 s" in con.file.getvalue()


def test_no_color_is_honoured(monkeypatch):
    def run() -> str:
        buf = io.StringIO()
        d = Display("rich", stream=buf, total_tokens=50_000)
        with d:
            simulate(d, n_reads=40)
            d.message("a warning", style="warning")
            view = render_text(d)
        return buf.getvalue() + view

    coloured = run()
    assert colour_codes(coloured), "expected colours without NO_COLOR"
    monkeypatch.setenv("NO_COLOR", "1")
    plain = run()
    assert "\x1b[" in plain  # still a live (terminal) view
    assert colour_codes(plain) == []
    assert "pinned" in plain and "distilled" in plain


def test_new_engine_resets_reading_state():
    d = Display("quiet")
    d.on_event(ev("read", 10_000, t=5.0))
    d.on_event(ev("distill", 10_000, 1, kept=torch.arange(0, 100), t=5.0))
    d.on_event(ev("read", 1_000, t=0.5))  # a second document read by a fresh engine
    assert d.summary()["tokens_read"] == 1_000
    assert d.remembered() == 1_000
    assert strip_chars(d.strip(10)) == "█" * 10


# ---- the strip histogram --------------------------------------------------------------------------------
def test_memory_strip_histogram():
    kept = as_sorted_positions(torch.cat([torch.arange(50, 60), torch.arange(0, 10), torch.arange(20, 40, 2)]))
    assert kept.tolist() == sorted(kept.tolist()) and kept.dtype == np.int64
    cells = memory_strip(kept, distilled_upto=100, tokens_read=120, width=12)  # 10 tokens per cell
    fr = [round(f, 3) for f, _ in cells]
    assert fr == [1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]
    assert [fresh for _, fresh in cells] == [False] * 10 + [True] * 2
    assert strip_chars(cells) == "█ ▄▄ █    ██"


def test_memory_strip_edges():
    assert memory_strip(np.zeros(0, np.int64), 0, 0) == []
    # nothing distilled yet: all fresh
    cells = memory_strip(np.zeros(0, np.int64), 0, 1000, width=60)
    assert len(cells) == 60 and all(f == 1.0 and fresh for f, fresh in cells)
    # fewer tokens than cells: one cell per token
    cells = memory_strip(np.array([1, 3]), 5, 5, width=60)
    assert [f for f, _ in cells] == [0.0, 1.0, 0.0, 1.0, 0.0]
    # a cell straddling the last distillation mixes kept and fresh tokens
    cells = memory_strip(np.array([0]), 5, 10, width=1)
    assert cells == [(0.6, True)]
    # uneven bins still cover every token exactly once
    kept = np.arange(0, 1001, 1)
    assert all(f == 1.0 for f, _ in memory_strip(kept, 1001, 1001, width=60))
    # small fractions still show (rounded up)
    assert strip_chars(memory_strip(np.array([0]), 800, 800, width=1)) == "▁"


# ---- overhead: events do bounded work; drawing is left to rich's refresh thread or a few plain lines ------
def _feed(d: Display) -> None:
    kept = torch.arange(0, 2_000_000, 67)  # ~30k positions, like a real union over heads
    reads = [ev("read", i * 100, i // 100, entries=1500, distilled=1024, t=i * 1e-4) for i in range(1, 10_001)]
    distills = [ev("distill", i * 10_000, i, entries=1024, distilled=1024, t=i * 1e-2, kept=kept)
                for i in range(1, 101)]
    with d:
        for i, e in enumerate(reads):
            d.on_event(e)
            if i % 100 == 99:
                d.on_event(distills[i // 100])


def test_plain_display_writes_a_few_lines_for_ten_thousand_events():
    out = io.StringIO()
    _feed(Display("plain", stream=out, total_tokens=1_000_000))
    assert 0 < len(out.getvalue().splitlines()) <= 12


def test_rich_display_never_draws_from_the_reading_thread(monkeypatch):
    import threading

    con = Console(file=io.StringIO(), force_terminal=True, width=120)
    d = Display("rich", stream=con, total_tokens=1_000_000)
    main, calls = threading.get_ident(), []
    real = d.renderable

    def counted():
        calls.append(threading.get_ident())
        return real()

    monkeypatch.setattr(d, "renderable", counted)
    _feed(d)
    assert calls.count(main) <= 3  # the frames of entering and leaving only, whatever the number of events


def test_pot_bar_segments():
    from infinipot_cli.cli.display import _segments

    assert _segments(2048, [40, 984, 476, 548], 40) == [1, 19, 9, 11]
    assert _segments(2048, [6, 0, 0, 2042], 40) == [1, 0, 0, 39]  # a tiny pinned header still shows
    assert _segments(2048, [1, 1, 1, 2045], 10) == [1, 1, 1, 7]
    assert sum(_segments(4096, [100, 1900, 37, 2059], 33)) == 33


# ---- ETA from the source, no "? tok/s", one cycle count, singular, quiet GGUF conversion -------------
def test_no_unknown_speed_at_the_start():
    d = Display("plain", stream=io.StringIO())
    d.on_event(ev("read", 500, 0, t=0.0))
    line = d.progress_line()
    assert "?" not in line and "tok/s" not in line
    assert "0 cycles" in line
    d.on_event(ev("read", 1000, 1, t=1.0))
    assert "1 cycle ·" in d.progress_line() and "tok/s" in d.progress_line()


def test_cycle_count_is_the_same_in_the_progress_line_and_the_final_line():
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    with d:
        d.on_event(ev("read", 500, 0, t=0.0))
        d.on_event(ev("read", 4000, 1, t=1.0))
        d.on_event(ev("distill", 4000, 1, t=1.0, kept=torch.arange(0, 4000, 7)))
        d.on_event(ev("answer", 4000, 1, t=1.5))
        d.on_event(ev("done", 4000, 1, t=2.0))  # the answer's own distillation is not a reading cycle (engine)
    lines = buf.getvalue().splitlines()
    answering = next(x for x in lines if "answering" in x)
    assert "1 CCD cycle)" in answering and "1 CCD cycle ·" in lines[-1] and "2 CCD" not in lines[-1]


def test_reading_progress_from_the_source_gives_an_eta(tmp_path):
    from infinipot_cli.session import _Progress
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.reader import token_stream

    class CharTok:
        def encode(self, text, add_special_tokens=False):
            return [ord(c) for c in text]

    p = tmp_path / "t.txt"
    p.write_text("".join(f"line {i} of a fairly long text file.\n" for i in range(3000)))
    prog = _Progress(0.0, 1.0)
    d = Display("plain", stream=io.StringIO())
    d.set_total(None, progress_fn=prog.fraction)
    seen, tokens = [], 0
    for k, (ids, _) in enumerate(token_stream(CharTok(), open_source(str(p)).passages(), progress=prog.update)):
        tokens += len(ids)
        d.on_event(ev("read", tokens, 0, t=0.5 * (k + 1)))
        seen.append(d.fraction())
        if k == 5:
            assert d.eta() is not None and "ETA" in d.progress_line()
    assert seen == sorted(seen) and 0 < seen[0] < 0.1 and seen[-1] == pytest.approx(1.0)


def test_gguf_conversion_progress_bar_is_silenced():
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    from infinipot_cli.runtime.loading import _no_gguf_progress_bar

    with _no_gguf_progress_bar():
        bar = gguf_utils.tqdm(range(3), desc="Converting and de-quantizing GGUF tensors...")
        assert bar.disable
    assert not isinstance(gguf_utils.tqdm, type(_no_gguf_progress_bar))


def test_inspect_says_one_cycle_in_the_singular():
    from infinipot_cli.cli.pot_report import render_inspect

    info = {"path": "p.pot", "file_bytes": 10, "config": {}, "catalyst": {}, "tokens_read": 10, "cycles": 1,
            "entries": 5, "n_pinned": 1, "layers": 1, "kv_heads": 1, "remembered": {"tokens": 1, "share": 0.1,
                                                                                  "spans": 1}}
    out = io.StringIO()
    render_inspect(info, Console(file=out, width=200))
    assert "1 distillation cycle" in out.getvalue() and "1 distillation cycles" not in out.getvalue()
