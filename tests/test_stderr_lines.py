"""What stderr says, said once and in order: every warning starts "infinipot: warning:" (a dropped damaged cached
pot too) in every display mode; a model converted once is said once, not again by the step line; a cache hit's
age on stderr is the --json `age_s` (one clock read); "resuming … at token N" comes after the pot was loaded,
never followed by a late "loading the pot…", nor a cache hit by "starting the pot…"."""

from __future__ import annotations

import io
import time
from types import SimpleNamespace

import pytest

from infinipot_cli import session as session_mod
from infinipot_cli.cli import display as display_mod
from infinipot_cli.cli.display import Display
from infinipot_cli.pot import pot_cache
from infinipot_cli.pot.pot_cache import fmt_age
from test_pot_cache import SMALL, cache, document, run, tiny  # noqa: F401 - fixtures

LOUD = [a for a in SMALL if a != "-q"]


@pytest.mark.parametrize("mode", ["plain", "quiet"])
def test_warnings_carry_the_prefix_in_every_mode(mode):
    buf = io.StringIO()
    d = Display(mode, stream=buf)
    d.warn("page 3 has no text")
    d.notice("evicted 1 least recently used cached pot")
    assert buf.getvalue().splitlines() == ["infinipot: warning: page 3 has no text",
                                           "infinipot: evicted 1 least recently used cached pot"]


def test_a_dropped_damaged_cached_pot_is_an_infinipot_warning(tiny, cache, tmp_path):  # noqa: F811
    doc = document(tmp_path / "book.txt", seed=80)
    r, first = run(["ask", doc, "Who keeps the lamp?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    entry = cache / (first["cache"]["key"] + ".pot")
    with open(entry, "r+b") as f:
        f.truncate(entry.stat().st_size // 2)
    r, _ = run(["ask", doc, "Who keeps the lamp?"] + LOUD, tiny)  # plain mode: stderr is no terminal
    assert r.exit_code == 0, r.stderr
    said = [ln for ln in r.stderr.splitlines() if "damaged cached pot" in ln]
    assert len(said) == 1 and said[0].startswith("infinipot: warning: dropped a damaged cached pot ("), said


def test_converting_is_said_once(monkeypatch):
    """The conversion's own line, and no "converting the model (once)…" step line after it in plain mode."""
    from infinipot_cli.runtime import loading

    monkeypatch.setattr(display_mod, "PLAIN_PHASE_S", 0.05)

    class Done(Exception):
        pass

    def converting_tokenizer(name, progress=None):
        progress("converting the built-in model once into /x/models/SmolLM2-135M-Instruct (about 30 s)…")
        time.sleep(0.4)  # the conversion lasts past the step line's delay
        raise Done

    monkeypatch.setattr(loading, "load_tokenizer", converting_tokenizer)
    monkeypatch.setattr("infinipot_cli.runtime.threads.configure", lambda *a: None)
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    with pytest.raises(Done):
        session_mod._load_model(session_mod.Job(kind="ask", sources=["x"], question="q"), d, None)
    time.sleep(0.2)
    lines = [ln for ln in buf.getvalue().splitlines() if "convert" in ln]
    assert lines == ["converting the built-in model once into /x/models/SmolLM2-135M-Instruct (about 30 s)…"]


def test_a_hits_age_is_one_value_on_stderr_and_in_json(tiny, cache, tmp_path, monkeypatch):  # noqa: F811
    doc = document(tmp_path / "book.txt", seed=81)
    r, first = run(["ask", doc, "Who keeps the lamp?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr

    class Clock:  # each reading of the clock 7 s later: two readings could not agree
        t = time.time() + 30

        def time(self):
            Clock.t += 7
            return Clock.t

    monkeypatch.setattr(pot_cache, "time", Clock())
    r, hit = run(["ask", doc, "Where is the boat?"] + LOUD, tiny)
    assert r.exit_code == 0 and hit["cache"]["hit"], r.stderr
    age = hit["cache"]["age_s"]
    assert age >= 37 and f"answering from the pot cached {fmt_age(age)} ago" in r.stderr, (age, r.stderr)


def test_resuming_is_said_after_the_pot_was_loaded(monkeypatch):
    monkeypatch.setattr(display_mod, "PLAIN_PHASE_S", 0.05)
    buf = io.StringIO()
    d = Display("plain", stream=buf)
    d.set_step("loading the pot")  # as run() says it before Session.resume; the load itself is quick
    src = SimpleNamespace(path="book.txt", name="book.txt", size_bytes=100, warnings=[])
    prev = SimpleNamespace(stopped_at=1024)

    class Resumed:
        records = [prev]

        def expect(self, question):
            pass

        def already_read(self, source):
            return prev

        def read(self, source, label="", skip_tokens=0, progress=None):
            assert skip_tokens == 1024
            time.sleep(0.4)  # finding token 1024 and reading on lasts past the step line's delay

    session_mod._read_all(Resumed(), [src], session_mod.Job(kind="read", sources=["book.txt"]), d)
    time.sleep(0.1)
    lines = buf.getvalue().splitlines()
    assert lines[0] == "resuming book.txt at token 1,024", lines
    assert not any("loading the pot" in ln for ln in lines), lines


def test_a_cache_hit_is_not_followed_by_a_starting_line(tiny, cache, tmp_path, monkeypatch):  # noqa: F811
    doc = document(tmp_path / "book.txt", seed=82)
    r, first = run(["ask", doc, "Who keeps the lamp?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    monkeypatch.setattr(display_mod, "PLAIN_PHASE_S", 0.05)
    real = session_mod.Session.ask

    def slow_ask(self, *a, **k):
        time.sleep(0.4)  # the answer starts after the step line would be due
        return real(self, *a, **k)

    monkeypatch.setattr(session_mod.Session, "ask", slow_ask)
    r, hit = run(["ask", doc, "Where is the boat?"] + LOUD, tiny)
    assert r.exit_code == 0 and hit["cache"]["hit"], r.stderr
    lines = r.stderr.splitlines()
    assert any(ln.startswith("answering from the pot cached") for ln in lines), lines
    assert not any("starting the pot" in ln for ln in lines), lines  # nothing started: the pot was loaded
