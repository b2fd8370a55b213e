"""Waiting with a word: before reading, the display says what the run waits for (loading torch, the tokenizer,
the model, converting it, starting the pot); while a slow forward pass runs, the live view shows its progress
instead of numbers frozen for a whole chunk; a FIFO with no writer says what it waits for."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time

import pytest
from rich.console import Console

from infinipot_cli.cli import display as display_mod
from infinipot_cli.cli.display import Display
from infinipot_cli.pot.engine import Event


def ev(kind, tokens=0, chunk=0, t=0.0):
    return Event(kind=kind, tokens_read=tokens, cycles=0, entries=100, pinned=38, distilled=38, size=2048,
                 where="", elapsed_s=t, kv_bytes=1, chunk=chunk)


def view(d: Display) -> str:
    out = Console(file=io.StringIO(), width=100, record=True, force_terminal=True)
    out.print(d.renderable())
    return out.export_text()


class Clock:
    t = 100.0

    def __call__(self):
        return self.t


def test_the_live_view_names_the_step_it_waits_for():
    d = Display("rich", stream=Console(file=io.StringIO(), force_terminal=True, width=100))
    d.set_step("loading the model")
    assert "starting… loading the model" in view(d)
    d.on_event(ev("read", 1024))
    assert "loading the model" not in view(d)


def test_plain_mode_says_a_slow_step_once(monkeypatch):
    monkeypatch.setattr(display_mod, "PLAIN_PHASE_S", 0.05)
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    d.set_step("loading torch")
    d.set_step("converting the model (once)")  # the first step ended before it was worth a line
    time.sleep(0.3)
    d.set_step("loading the model")
    d.on_event(ev("read", 1024))  # reading began before that step's line was due
    time.sleep(0.3)
    assert buf.getvalue().splitlines()[0] == "converting the model (once)…"
    assert "loading torch" not in buf.getvalue() and "loading the model" not in buf.getvalue()


def test_a_slow_chunk_shows_its_progress():
    clock = Clock()
    d = Display("rich", stream=Console(file=io.StringIO(), force_terminal=True, width=100))
    d.clock = clock
    d.on_event(ev("forward", 0, chunk=1024))
    clock.t += 4.0
    d.on_event(ev("read", 1024, t=4.0))      # the last pass: 256 tokens a second
    d.on_event(ev("forward", 1024, chunk=1024))
    clock.t += 2.0                           # half of the next pass's expected 4 s
    text = view(d)
    assert "chunk of 1,024 tokens: ~50 %, 0:02" in text
    clock.t += 10.0
    assert "~99 %" in view(d)                # never 100 % before the pass ends
    d.on_event(ev("read", 2048, t=16.0))
    assert "chunk of" not in view(d)


def test_the_engine_announces_every_forward_pass():
    import torch

    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine
    from tiny_models import VOCAB, make_model

    events = []
    eng = Engine(make_model("llama"), None, PotConfig(size=256, keep=128, chunk=64, segment=0).validate(),
                 catalyst_ids=[5, 6, 7], on_event=events.append)
    eng.pin([1, 2, 3])
    eng.feed(torch.randint(10, VOCAB, (500,)).tolist())
    eng.finish()
    kinds = [e.kind for e in events if e.kind in ("forward", "read")]
    assert kinds and kinds == ["forward", "read"] * (len(kinds) // 2)
    reads = [e for e in events if e.kind == "read"]
    forwards = [e for e in events if e.kind == "forward"]
    assert [f.chunk for f in forwards] == [r.tokens_read - f.tokens_read for f, r in zip(forwards, reads)]


def test_a_run_says_each_step_before_reading(monkeypatch):
    """session.run tells the display what it loads, in order (here the model load is stopped)."""
    from infinipot_cli.runtime import loading as model_mod
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.session import Job, run

    steps = []

    class Recording(Display):
        def set_step(self, text):
            steps.append(text)
            super().set_step(text)

    def stop(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(model_mod, "load_model", stop)
    import os

    story = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs", "lighthouse.txt")
    with pytest.raises(KeyboardInterrupt):
        run(Job(kind="summarize", sources=[story], pot=PotConfig()),
            Recording("quiet", stream=io.StringIO()))
    assert steps == ["loading torch", "loading the tokenizer", "loading the model"]


def test_a_fifo_with_no_writer_says_what_it_waits_for(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    p = subprocess.Popen([sys.executable, "-m", "infinipot_cli", "ask", str(fifo), "q"],
                         stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    got = []
    t = threading.Thread(target=lambda: got.append(p.stderr.readline()), daemon=True)
    t.start()
    t.join(60)
    p.kill()
    p.wait()
    assert got and "waiting for a writer on the named pipe" in got[0], got
