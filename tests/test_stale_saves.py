"""What saves killed outright (kill -9) leave — a hidden scratch folder beside the pot, the size of the pot — goes
at the next start of a command that saves into that folder (before it reads: not only once it saves), at the
start of a command that uses the pot cache (its folder), and with `cache --clear`; a scratch folder whose process
still runs is left alone, and no user file is touched. No model needed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.pot import pot_cache
from infinipot_cli.scratch import SCRATCH_MARK, Scratch, is_scratch, remove_stale
from infinipot_cli.session import Job


@pytest.fixture
def dead_pid():
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()  # a process that has ended: its pid names a killed save
    return done.pid


def litter(folder, pid: int, name: str = "book.pot"):
    """The scratch folder a save of `name` killed outright leaves: a big temp file in it."""
    d = folder / f".{name}{SCRATCH_MARK}{pid}-abc123"
    d.mkdir(parents=True)
    (d / name).write_bytes(b"\0" * 4096)
    (d / "lock").write_bytes(b"")
    return d


def test_a_save_command_removes_dead_saves_litter_before_it_reads(tmp_path, dead_pid):
    out = tmp_path / "pots"
    out.mkdir()
    dead = litter(out, dead_pid, "other.pot")  # another name in the same folder: removed too
    live = Scratch(out, "busy.pot")             # a save of this process, running: left alone
    mine = out / "notes.txt"
    mine.write_text("a user's file\n")
    try:
        Job(kind="read", sources=["doc.txt"], save_pot=str(out / "book.pot")).check()  # before anything is opened
        assert not dead.exists() and live.dir.exists() and mine.read_text() == "a user's file\n"
    finally:
        live.remove()
    assert sorted(os.listdir(out)) == ["notes.txt"]


def test_the_pot_cache_folder_is_cleaned_at_the_start_and_by_clear(tmp_path, dead_pid, monkeypatch):
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", "1G")
    pots = tmp_path / "cache" / "pots"
    dead = litter(pots, dead_pid, "0123-abcd.pot")
    assert pot_cache.PotCache.plan(Job(kind="ask", sources=["doc.txt"], question="q")) is not None
    assert not dead.exists()
    dead = litter(pots, dead_pid, "4567-abcd.pot")
    r = CliRunner().invoke(app, ["cache", "--clear"])
    assert r.exit_code == 0 and not dead.exists(), r.output
    assert os.listdir(pots) == []


def test_only_dead_or_abandoned_scratch_folders_match(tmp_path, dead_pid):
    assert is_scratch(f".book.pot{SCRATCH_MARK}{dead_pid}-x_1") and not is_scratch(f"book.pot{SCRATCH_MARK}1-x")
    keep = tmp_path / f"x{SCRATCH_MARK}{dead_pid}-abc"  # not hidden: not ours
    keep.mkdir()
    (tmp_path / f".y{SCRATCH_MARK}{dead_pid}-abc").write_text("a file, not a folder")
    assert remove_stale(tmp_path) == [] and len(os.listdir(tmp_path)) == 2
    assert remove_stale(tmp_path / "missing") == []
