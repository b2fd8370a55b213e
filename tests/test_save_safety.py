"""--save-pot never destroys a user's file: not a source being read, not an existing file that is not a pot
(unless --force), and an interrupted read (Ctrl-C or SIGTERM) writes its partial pot beside an existing file,
says where, and saves nothing when nothing was read."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from infinipot_cli.pot import engine as engine_mod
from infinipot_cli.runtime import loading as model_mod
from infinipot_cli.app import app
from infinipot_cli.pot.potfile import is_pot_file

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs")
STORY = os.path.join(SAMPLES, "lighthouse.txt")
FAST = ["--pot-size", "512", "--keep", "256", "-q"]


def invoke(args):
    return CliRunner().invoke(app, args)


@pytest.fixture
def no_model(monkeypatch):
    """Fail the test if the model is loaded: these checks must come first."""
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the check")
    monkeypatch.setattr(model_mod, "load_model", refuse)


def _interrupt_feed_at(monkeypatch, n):
    calls = {"n": 0}
    real = engine_mod.Engine.feed

    def flaky(self, ids, where=""):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt
        return real(self, ids, where)

    monkeypatch.setattr(engine_mod.Engine, "feed", flaky)


def test_the_source_is_never_the_target(tmp_path, no_model):
    doc = tmp_path / "doc.txt"
    doc.write_text(open(STORY).read())
    before = doc.read_bytes()
    for extra in ([], ["--force"]):
        r = invoke(["read", str(doc), "--save-pot", str(doc)] + FAST + extra)
        assert r.exit_code == 2, r.output
        assert "is the document being read" in r.stderr
        assert doc.read_bytes() == before
    link = tmp_path / "link.pot"
    link.symlink_to(doc)  # the same file by another name
    r = invoke(["read", str(doc), "--save-pot", str(link)] + FAST + ["--force"])
    assert r.exit_code == 2 and doc.read_bytes() == before


def test_an_existing_non_pot_file_needs_force(builtin, story_opening, tmp_path, monkeypatch):
    doc = story_opening  # what is read does not matter here
    other = tmp_path / "important.txt"
    other.write_text("my notes\n")
    r = invoke(["read", doc, "--save-pot", str(other)] + FAST)
    assert r.exit_code == 2 and "not an infinipot pot" in r.stderr and "--force" in r.stderr
    assert other.read_text() == "my notes\n"
    r = invoke(["read", doc, "--save-pot", str(other), "--force"] + FAST)
    assert r.exit_code == 0, r.stderr
    assert is_pot_file(other)
    # an existing pot is replaced without --force (that is what --save-pot is for)
    first = other.read_bytes()
    r = invoke(["read", doc, "--save-pot", str(other), "--pot-size", "1024", "--keep", "256", "-q"])
    assert r.exit_code == 0, r.stderr
    assert is_pot_file(other) and other.read_bytes() != first


def test_a_partial_pot_goes_beside_whatever_is_at_the_target(tmp_path):
    """The naming an interrupted read's save uses (the real-model reads below and in test_cli_pots go through it)."""
    from infinipot_cli.pot.potfile import partial_target

    pot = tmp_path / "good.pot"
    assert partial_target(pot) == pot  # nothing there yet: the target itself
    pot.write_bytes(b"a finished pot")
    assert partial_target(pot) == tmp_path / "good.pot.partial"
    (tmp_path / "good.pot.partial").write_bytes(b"an earlier partial pot")
    assert partial_target(pot) == tmp_path / "good.pot.partial-2"


@pytest.mark.slow  # beside an existing file: the --force test below and the naming above; resuming: test_cli_pots
def test_interrupt_writes_beside_an_existing_pot(builtin, tmp_path, monkeypatch):
    pot = tmp_path / "good.pot"
    assert invoke(["read", STORY, "--save-pot", str(pot)] + FAST).exit_code == 0
    finished = pot.read_bytes()
    _interrupt_feed_at(monkeypatch, 3)
    r = invoke(["read", STORY, "--save-pot", str(pot)] + FAST)
    assert r.exit_code == 130
    assert pot.read_bytes() == finished  # the finished pot is untouched
    partial = tmp_path / "good.pot.partial"
    assert is_pot_file(partial)
    assert f"partial pot saved to {partial}" in r.stderr  # said even with -q
    _interrupt_feed_at(monkeypatch, 3)
    r = invoke(["read", STORY, "--save-pot", str(pot)] + FAST)
    assert r.exit_code == 130 and is_pot_file(tmp_path / "good.pot.partial-2")
    assert pot.read_bytes() == finished
    # the partial pot resumes into a complete one
    monkeypatch.undo()
    r = invoke(["read", "--load-pot", str(partial), STORY, "--save-pot", str(tmp_path / "done.pot"), "-q", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["sources"][0]["stopped_at"] is None


def test_interrupt_beside_a_non_pot_file_with_force(builtin, tmp_path, monkeypatch):
    other = tmp_path / "important.txt"
    other.write_text("keep me\n")
    _interrupt_feed_at(monkeypatch, 3)
    r = invoke(["read", STORY, "--save-pot", str(other), "--force"] + FAST)
    assert r.exit_code == 130
    assert other.read_text() == "keep me\n"
    assert is_pot_file(tmp_path / "important.txt.partial")


def test_interrupt_before_anything_is_read_saves_nothing(builtin, tmp_path, monkeypatch):
    pot = tmp_path / "new.pot"
    _interrupt_feed_at(monkeypatch, 1)
    r = invoke(["read", STORY, "--save-pot", str(pot)] + FAST)
    assert r.exit_code == 130
    assert not pot.exists() and not (tmp_path / "new.pot.partial").exists()
    assert "no pot saved" in r.stderr


def test_interrupt_with_a_new_target_saves_there(builtin, tmp_path, monkeypatch):
    pot = tmp_path / "new.pot"
    _interrupt_feed_at(monkeypatch, 3)
    r = invoke(["read", STORY, "--save-pot", str(pot)] + FAST)
    assert r.exit_code == 130 and is_pot_file(pot)
    assert f"partial pot saved to {pot}" in r.stderr


def test_sigterm_checkpoints_and_exits_143(builtin, tmp_path):
    """A real process: SIGTERM mid-read says so on stderr, saves the partial pot and exits 143."""
    doc = tmp_path / "long.txt"
    doc.write_text(open(STORY).read() * 2)  # ~6.5K tokens: the first line with a speed comes well before the end
    pot = tmp_path / "t.pot"
    p = subprocess.Popen([sys.executable, "-m", "infinipot_cli", "read", str(doc), "--save-pot", str(pot),
                          "--pot-size", "512", "--keep", "256"], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    lines = []
    deadline = time.time() + 120
    for line in p.stderr:
        lines.append(line)
        if "tok/s" in line or time.time() > deadline:
            break
    p.send_signal(signal.SIGTERM)
    rest, _ = p.communicate(timeout=120)[1], None
    err = "".join(lines) + (rest or "")
    assert p.returncode == 143, err
    assert "infinipot: error: terminated" in err
    assert "partial pot saved to" in err and is_pot_file(pot)
