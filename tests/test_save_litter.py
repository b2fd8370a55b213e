"""A save killed outright (kill -9) leaves no litter that lasts: its temporary files live in one scratch folder
beside the pot, which the next save into that folder removes; the existing pot stays intact, and a save still
running is never disturbed (two processes saving one pot at once both finish, the last one wins)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from infinipot_cli.pot import potfile
from infinipot_cli.pot.config import PotConfig
from infinipot_cli.pot.engine import Engine
from tiny_models import make_model_for

TESTS = os.path.dirname(os.path.abspath(__file__))

CHILD = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from transformers import AutoTokenizer
    from infinipot_cli.pot import potfile
    from infinipot_cli.runtime.loading import builtin_model_path
    from test_save_litter import engine
    tok = AutoTokenizer.from_pretrained(str(builtin_model_path()))
    real = potfile.save_file
    def stalled(tensors, path, metadata=None):  # the save is killed while its file is written
        real(tensors, path, metadata=metadata)
        open({ready!r}, "w").close()
        time.sleep(120)
    potfile.save_file = stalled
    potfile.save_pot({target!r}, engine(tok, {seed}))
""")


def engine(tok, seed: int = 0):
    eng = Engine(make_model_for(tok, seed=seed), tok, PotConfig(size=96, keep=48, chunk=32), catalyst_ids=[11, 12, 13])
    eng.pin([1, 2, 3, 4])
    eng.feed(list(range(100, 400)), where="line 1")
    eng.finish()
    return eng


def _stalled_saves(tmp_path, target, seeds):
    """Child processes saving to `target` at once, each stopped once its file is written (not yet moved into
    place)."""
    children = []
    for seed in seeds:
        code = CHILD.format(tests=TESTS, ready=str(tmp_path / f"ready-{seed}"), target=str(target), seed=seed)
        children.append(subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE))
    t0 = time.time()
    for seed, child in zip(seeds, children):
        while not (tmp_path / f"ready-{seed}").exists():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.time() - t0 < 300, "the child never reached its save"
            time.sleep(0.1)
    return children


def _litter(folder, keep=("good.pot",)):
    return sorted(n for n in os.listdir(folder) if n not in keep and not n.startswith("ready-"))


def test_a_killed_save_leaves_the_pot_and_its_litter_goes_next_time(builtin_tok, tmp_path):
    target = tmp_path / "good.pot"
    potfile.save_pot(target, engine(builtin_tok))
    before = potfile.read_meta(target)["tensors_sha256"]

    killed, running = _stalled_saves(tmp_path, target, seeds=(1, 2))  # two saves in progress at once
    try:
        os.kill(killed.pid, signal.SIGKILL)
        killed.wait()
        assert potfile.read_meta(target)["tensors_sha256"] == before  # the pot is intact
        left = _litter(tmp_path)
        assert len(left) == 2 and all(".infinipot-save-" in n for n in left), left  # a scratch folder each
        dead = next(n for n in left if f"-{killed.pid}-" in n)
        potfile.save_pot(target, engine(builtin_tok, seed=3))  # the next save removes the dead one's folder
        now = _litter(tmp_path)
        assert dead not in now and len(now) == 1 and f"-{running.pid}-" in now[0], now  # the live one stays
    finally:
        os.kill(running.pid, signal.SIGKILL)
        running.wait()
    potfile.save_pot(target, engine(builtin_tok, seed=4))
    assert _litter(tmp_path) == []
    assert potfile.read_meta(target)["tensors_sha256"] != before


@pytest.mark.slow
def test_two_saves_of_one_pot_at_once_both_finish(builtin_tok, tmp_path):
    """Two processes saving the same pot file at the same moment: each writes its own scratch folder, the file
    is replaced whole by one and then the other; it is a valid pot, and nothing is left beside it."""
    target = tmp_path / "good.pot"
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {TESTS!r})
        from transformers import AutoTokenizer
        from infinipot_cli.pot import potfile
        from infinipot_cli.runtime.loading import builtin_model_path
        from test_save_litter import engine
        tok = AutoTokenizer.from_pretrained(str(builtin_model_path()))
        eng = engine(tok, int(sys.argv[1]))
        for _ in range(3):
            potfile.save_pot({str(target)!r}, eng)
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code, str(seed)], stderr=subprocess.PIPE) for seed in (5, 6)]
    for p in procs:
        assert p.wait(timeout=300) == 0, p.stderr.read().decode()[-2000:]
    meta = potfile.read_meta(target)
    potfile.check_pot(target)  # data and checksum agree: one writer's file, whole
    assert meta["tokens_read"] == 300 and _litter(tmp_path) == []


def test_only_scratch_folders_of_dead_saves_are_removed(tmp_path):
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()  # a process that has ended: its pid names a dead save
    name = f".x.pot.infinipot-save-{done.pid}-abc"
    (tmp_path / name).mkdir()
    (tmp_path / ".tmpabcdef").write_text("someone else's")
    (tmp_path / "keep.infinipot-save-1-abc").mkdir()  # not hidden: not ours
    mine = tmp_path / f".y.pot.infinipot-save-{os.getpid()}-q"
    mine.mkdir()  # this process is alive and the folder is new: left alone
    removed = potfile.remove_stale_saves(tmp_path)
    assert removed == [name] and sorted(os.listdir(tmp_path)) == sorted([".tmpabcdef", "keep.infinipot-save-1-abc",
                                                                         mine.name])
