"""Ctrl-C checkpoints and save targets: an interrupt at any moment leaves a consistent pot that saves and loads;
--save-pot refuses folders, devices, pipes and missing/read-only folders before reading; write errors are one
clear line; fp32 KV is stored as bf16 and old fp32 pots still load."""

from __future__ import annotations

import errno
import os
import stat

import pytest
import torch

from infinipot_cli.pot import potfile
from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.errors import InfinipotError, UsageError
from infinipot_cli.pot.potfile import check_save_target, load_pot, read_meta, save_pot

from tiny_models import VOCAB, make_model

HEADER = [1, 2, 3, 4]
CATALYST = [11, 12, 13, 14, 15]


class _Tok:
    """Just enough of a tokenizer for the engine and the pot file (ids are bytes)."""

    def decode(self, ids, skip_special_tokens=False):
        return "".join(chr(32 + i % 90) for i in ids)

    def batch_decode(self, batch):
        return [self.decode(b) for b in batch]

    def get_vocab(self):
        return {f"t{i}": i for i in range(VOCAB)}

    def __len__(self):
        return VOCAB


@pytest.fixture(scope="module")
def model():
    return make_model("llama")


def _doc(n=400, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(20, VOCAB, (n,), generator=g).tolist()


def _engine(model):
    eng = Engine(model, _Tok(), PotConfig(size=96, keep=48, chunk=32), catalyst_ids=CATALYST)
    eng.pin(HEADER)
    return eng


def _consistent(eng: Engine) -> None:
    S = len(eng.pot)
    assert eng.pot.layer_lengths() == [S] * eng.pot.num_layers
    for name in ("src", "tok", "nov", "acc"):
        t = getattr(eng.pot, name)
        assert (t is None) if name == "acc" and not eng.policy.needs_acc else t.shape[-1] == S, name
    assert eng.tokens_read + len(eng.pending) == eng._fed


def _raise_on_call(module, n):
    """A forward hook that raises KeyboardInterrupt on the module's n-th call (as a Ctrl-C would)."""
    calls = {"n": 0}

    def hook(mod, args, out):
        calls["n"] += 1
        if calls["n"] == n:
            raise KeyboardInterrupt

    return module.register_forward_hook(hook)


# ---- 1. interrupts inside a forward pass or a distillation --------------------------------------------
@pytest.mark.parametrize("where", ["layer1", "norm"])
@pytest.mark.parametrize("nth", [2, 5, 9])
def test_interrupt_in_a_forward_saves_a_consistent_pot(tmp_path, model, where, nth):
    eng = _engine(model)
    module = model.model.layers[1] if where == "layer1" else model.model.norm
    handle = _raise_on_call(module, nth)
    doc = _doc()
    try:
        with pytest.raises(KeyboardInterrupt):
            for i in range(0, len(doc), 50):
                eng.feed(doc[i:i + 50], where=f"line {i}")
            eng.finish()
    finally:
        handle.remove()
    _consistent(eng)  # before the fix: layer 0 held the interrupted chunk, the metadata did not
    path = tmp_path / "p.pot"
    save_pot(path, eng)
    eng2, meta = load_pot(path, model, _Tok())
    _consistent(eng2)
    assert meta["entries"] == len(eng.pot) and eng2.tokens_read == eng.tokens_read
    # the pot reads on from where it stopped: the interrupted tokens are still pending, nothing was lost
    eng.finish()
    eng2.pending = list(eng2.pending)
    eng2.finish()
    assert eng.tokens_read == eng2.tokens_read


def test_interrupt_inside_a_distillation_leaves_the_pot_undistilled(tmp_path, model, monkeypatch):
    eng = _engine(model)
    calls = {"n": 0}
    real = eng.pot.rerotator.apply

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:  # after layer 0 was re-rotated, before layer 1
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(eng.pot.rerotator, "apply", flaky)
    with pytest.raises(KeyboardInterrupt):
        eng.feed(_doc(300))
    assert eng.cycles == 0 and len(eng.pot) > eng.cfg.keep  # not distilled: the pot as it was before
    _consistent(eng)
    save_pot(tmp_path / "d.pot", eng)
    _consistent(load_pot(tmp_path / "d.pot", model, _Tok())[0])


# ---- 2-3. save targets --------------------------------------------------------------------------------
def test_special_files_are_refused(tmp_path):
    for dev in ("/dev/null", "/dev/full"):
        if os.path.exists(dev) and stat.S_ISCHR(os.stat(dev).st_mode):
            with pytest.raises(UsageError, match="is a device"):
                check_save_target(dev)
            assert stat.S_ISCHR(os.stat(dev).st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is a pipe"):
        check_save_target(fifo)
    with pytest.raises(UsageError, match="is a folder"):
        check_save_target(tmp_path)
    with pytest.raises(UsageError, match="does not exist"):
        check_save_target(tmp_path / "nowhere" / "p.pot")
    assert check_save_target(tmp_path / "new.pot") == tmp_path / "new.pot"


def test_read_only_folder_is_refused(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setattr(potfile.os, "access", lambda p, mode: False)  # root ignores permission bits
    with pytest.raises(UsageError, match="is not writable"):
        check_save_target(ro / "p.pot")


def test_symlink_is_written_through(tmp_path, model):
    eng = _engine(model)
    eng.feed(_doc(100))
    real = tmp_path / "real.pot"
    link = tmp_path / "link.pot"
    link.symlink_to(real)
    save_pot(link, eng)
    assert link.is_symlink() and real.is_file()
    assert read_meta(link)["entries"] == len(eng.pot)
    dev_link = tmp_path / "null.pot"
    dev_link.symlink_to("/dev/null")
    with pytest.raises(UsageError, match="is a device"):
        save_pot(dev_link, eng)


def test_disk_full_says_so(tmp_path, model, monkeypatch):
    eng = _engine(model)
    eng.feed(_doc(100))

    def to_dev_full(tensors, tmp, metadata=None):
        with open("/dev/full", "wb") as f:  # the real device: ENOSPC on write
            f.write(b"x" * 100_000)
            f.flush()

    if os.path.exists("/dev/full") and stat.S_ISCHR(os.stat("/dev/full").st_mode):
        monkeypatch.setattr(potfile, "save_file", to_dev_full)
        with pytest.raises(InfinipotError, match="no space left on device"):
            save_pot(tmp_path / "p.pot", eng)

    class SafetensorError(Exception):
        pass

    def rust_error(tensors, tmp, metadata=None):
        raise SafetensorError("Error while serializing: IoError(Os { code: 28, kind: StorageFull, "
                              "message: \"No space left on device\" }) (os error 28)")

    monkeypatch.setattr(potfile, "save_file", rust_error)
    with pytest.raises(InfinipotError, match="no space left on device"):
        save_pot(tmp_path / "p.pot", eng)

    def short(tensors, tmp, metadata=None):  # a silent short write
        with open(tmp, "wb") as f:
            f.write((200).to_bytes(8, "little") + b"{")

    monkeypatch.setattr(potfile, "save_file", short)
    with pytest.raises(InfinipotError, match="incomplete"):
        save_pot(tmp_path / "p.pot", eng)

    def eio(tensors, tmp, metadata=None):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(potfile, "save_file", eio)
    with pytest.raises(InfinipotError, match="Input/output error"):
        save_pot(tmp_path / "p.pot", eng)
    assert [p.name for p in tmp_path.iterdir()] == []  # no temp files left


def test_cli_checks_the_target_before_reading(tmp_path):
    from typer.testing import CliRunner

    from infinipot_cli.app import app

    doc = tmp_path / "d.txt"
    doc.write_text("Some text.\n")
    r = CliRunner().invoke(app, ["read", str(doc), "--save-pot", str(tmp_path / "no" / "p.pot"), "-m",
                                 str(tmp_path / "no-such-model")])
    assert r.exit_code == 2 and "does not exist" in r.output  # not a model error: checked first
    r = CliRunner().invoke(app, ["read", str(doc), "--save-pot", "/dev/null", "-m", str(tmp_path / "no-such-model")])
    assert r.exit_code == 2 and "is a device" in r.output


# ---- 17. the KV stored as bf16 -------------------------------------------------------------------------
def test_fp32_kv_is_stored_as_bf16_and_old_pots_load(tmp_path, model):
    eng = _engine(model)
    eng.feed(_doc(300))
    small, exact = tmp_path / "small.pot", tmp_path / "exact.pot"
    n_small = save_pot(small, eng)
    n_exact = save_pot(exact, eng, compact=False)  # the format before: the fp32 KV as it is
    assert n_small < 0.75 * n_exact
    assert read_meta(small)["kv_dtype"] == "bfloat16" and read_meta(small)["dtype"] == "float32"
    for path, tol in ((exact, 0.0), (small, 1e-2)):
        eng2, _ = load_pot(path, model, _Tok())
        for a, b in zip(eng.pot.cache.layers, eng2.pot.cache.layers):
            assert b.keys.dtype == torch.float32
            assert torch.allclose(a.keys, b.keys, rtol=tol, atol=tol) and torch.allclose(a.values, b.values, rtol=tol, atol=tol)
        assert torch.equal(eng.pot.tok, eng2.pot.tok)
    from infinipot_cli.cli.pot_report import inspect_pot

    info = inspect_pot(small)
    assert info["file_bytes"] == n_small and info["kv_dtype"] == "bfloat16"
