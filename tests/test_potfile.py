"""Pot files: exact round trips, refusals of bad files, atomic writes, inspect."""

from __future__ import annotations

import json
import os

import pytest
import torch

from infinipot_cli.pot import potfile
from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.errors import InfinipotError, InputError
from infinipot_cli.cli.pot_report import inspect_pot, render_inspect
from infinipot_cli.pot.potfile import load_pot, question_mismatch, read_meta, save_pot

CATALYST = [11, 12, 13, 14, 15]
HEADER = [1, 2, 3, 4]


@pytest.fixture(scope="module")
def tok(builtin_tok):
    return builtin_tok


def _tiny(tok, seed=0, **kw):
    from transformers import AutoModelForCausalLM, LlamaConfig

    from infinipot_cli.runtime.attention import register_attention

    torch.manual_seed(seed)
    args = dict(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    args.update(kw)
    model = AutoModelForCausalLM.from_config(LlamaConfig(**args), attn_implementation=register_attention("sdpa"))
    return model.eval()


@pytest.fixture(scope="module")
def model(tok):
    return _tiny(tok)


def _ids(n, seed, vocab):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(100, vocab, (n,), generator=g).tolist()


def _engine(model, tok, n=400):
    eng = Engine(model, tok, PotConfig(size=96, keep=48, chunk=32), catalyst_ids=CATALYST)
    eng.pin(HEADER)
    ids = _ids(n, 1, len(tok))
    for i, label in enumerate(["p. 1", "p. 2", "p. 3", "p. 4"]):
        eng.feed(ids[i * n // 4:(i + 1) * n // 4], where=label)
    return eng


SOURCES = [{"path": "book.txt", "format": "text", "size": 1234, "sha256": "ab" * 32, "tokens": 400, "units": 4,
            "stopped_at": None}]


@pytest.fixture(scope="module")
def saved(tmp_path_factory, model, tok):
    """A pot file saved from a fresh engine: (path, engine state snapshot not needed)."""
    path = tmp_path_factory.mktemp("pots") / "book.pot"
    eng = _engine(model, tok)
    save_pot(path, eng, {"sources": SOURCES, "model": "tiny-llama",
                         "catalyst": {"kind": "question", "text": "Who wrote the letter?"}})
    return path, eng


def _assert_same_state(a: Engine, b: Engine):
    assert len(a.pot.cache.layers) == len(b.pot.cache.layers)
    for la, lb in zip(a.pot.cache.layers, b.pot.cache.layers):
        assert torch.equal(la.keys, lb.keys) and torch.equal(la.values, lb.values)
    for name in ("src", "tok", "nov", "acc"):
        x, y = getattr(a.pot, name), getattr(b.pot, name)
        assert (x is None and y is None) if name == "acc" and x is None else torch.equal(x, y), name
    assert torch.equal(a.prev_hidden, b.prev_hidden)
    assert (a.tokens_read, a.cycles, a._fed, a.where, a.pending, a.provenance, a.catalyst) == \
           (b.tokens_read, b.cycles, b._fed, b.where, b.pending, b.provenance, b.catalyst)
    assert (a.pot.n_pinned, a.pot.n_distilled, a.pot.peak_entries) == \
           (b.pot.n_pinned, b.pot.n_distilled, b.pot.peak_entries)


# ---- 1. round trip ----------------------------------------------------------------------------------
def test_round_trip_is_exact(tmp_path, model, tok):
    eng = _engine(model, tok)
    assert eng.cycles > 0 and eng.pending  # distilled several times, some tokens still pending
    path = tmp_path / "a.pot"
    n = save_pot(path, eng, {"sources": SOURCES, "model": "tiny-llama"}, compact=False)  # exact: fp32 KV
    assert n == path.stat().st_size > 0
    assert [p.name for p in tmp_path.iterdir()] == ["a.pot"]

    eng2, meta = load_pot(path, model, tok, expect_model_name="tiny-llama")
    assert meta["model"] == "tiny-llama" and meta["sources"] == SOURCES
    _assert_same_state(eng, eng2)

    prompt = _ids(10, 2, len(tok))
    ta, tb = [], []
    eng.on_event = lambda e: ta.append(e.text) if e.kind == "token" else None
    eng2.on_event = lambda e: tb.append(e.text) if e.kind == "token" else None
    assert eng.answer(prompt, "summary", max_new_tokens=8) == eng2.answer(prompt, "summary", max_new_tokens=8)
    assert ta == tb and len(ta) == 8
    _assert_same_state(eng, eng2)

    more = _ids(150, 3, len(tok))
    eng.feed(more, where="p. 5")
    eng2.feed(more, where="p. 5")
    eng.finish()
    eng2.finish()
    _assert_same_state(eng, eng2)
    assert eng.answer(prompt, "summary", max_new_tokens=6) == eng2.answer(prompt, "summary", max_new_tokens=6)


def test_pot_from_an_older_version_keeps_its_selection(tmp_path, monkeypatch, model, tok):
    """Options missing from a saved config (the pot predates them) load with the paper's values, not today's
    defaults; a question catalyst gets its focus rows back (scoring/capture.py)."""
    from infinipot_cli.pot.prompts import Prompts

    eng = _engine(model, tok)
    cat, focus = Prompts(tok).catalyst("question", "Who wrote the letter?")
    eng.set_catalyst(cat, focus)
    import dataclasses

    old_fields = ("segment", "relevance", "final_keep", "reencode", "recall", "nuc_sample")  # a pot can predate them
    monkeypatch.setattr(PotConfig, "as_dict", lambda self: {k: v for k, v in dataclasses.asdict(self).items()
                                                            if k not in old_fields})
    path = tmp_path / "old.pot"
    save_pot(path, eng, {"sources": SOURCES, "model": "tiny-llama",
                         "catalyst": {"kind": "question", "text": "Who wrote the letter?"}})
    monkeypatch.undo()
    assert "segment" not in read_meta(path)["config"]
    old, _ = load_pot(path, model, tok)
    assert (old.cfg.segment, old.cfg.relevance, old.cfg.share, old.cfg.final_keep, old.cfg.reencode) == (
        0, False, True, 0, False)
    assert old.cfg.nuc_sample is False  # read before the sample existed: with the whole vocabulary
    assert old.catalyst == cat and old.catalyst_focus == focus is not None


def test_save_pot_before_anything_read(tmp_path, model, tok):
    eng = Engine(model, tok, PotConfig(size=96, keep=48, chunk=32), catalyst_ids=CATALYST)
    save_pot(tmp_path / "empty.pot", eng)
    eng2, meta = load_pot(tmp_path / "empty.pot", model, tok)
    assert len(eng2.pot) == 0 and eng2.prev_hidden is None and meta["catalyst"]["kind"] == "general"
    eng2.pin(HEADER)
    eng2.feed(_ids(100, 4, len(tok)))
    eng2.finish()
    assert eng2.tokens_read == 100


# ---- 2. refusals ------------------------------------------------------------------------------------
def _header(data: bytes) -> tuple[int, dict]:
    n = int.from_bytes(data[:8], "little")
    return n, json.loads(data[8:8 + n])


def _rewrite_meta(src, dst, fn):
    data = src.read_bytes()
    n, header = _header(data)
    meta = json.loads(header["__metadata__"]["infinipot"])
    fn(meta)
    header["__metadata__"]["infinipot"] = json.dumps(meta)
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    dst.write_bytes(len(raw).to_bytes(8, "little") + raw + data[8 + n:])


def test_refuses_bad_files(tmp_path, saved, model, tok):
    path, _ = saved
    data = path.read_bytes()

    def refused(p, *words, m=model):
        with pytest.raises(InputError) as ei:
            load_pot(p, m, tok)
        msg = str(ei.value)
        assert "\n" not in msg
        for w in words:
            assert w in msg, msg
        return msg

    refused(tmp_path / "missing.pot", "not found")
    refused(tmp_path, "folder")
    (tmp_path / "garbage.pot").write_bytes(b"this is not a pot at all\n" * 40)
    refused(tmp_path / "garbage.pot", "not an infinipot pot file")
    (tmp_path / "tiny.pot").write_bytes(b"abc")
    refused(tmp_path / "tiny.pot", "not an infinipot pot file")
    (tmp_path / "half.pot").write_bytes(data[: len(data) // 2])
    refused(tmp_path / "half.pot", "truncated")
    n, _ = _header(data)
    (tmp_path / "cut-header.pot").write_bytes(data[: 8 + n // 2])
    refused(tmp_path / "cut-header.pot", "truncated")

    tampered = bytearray(data)
    mid = 8 + n + (len(data) - 8 - n) // 2
    for i in range(mid, mid + 4):
        tampered[i] ^= 0x5A
    (tmp_path / "tampered.pot").write_bytes(bytes(tampered))
    refused(tmp_path / "tampered.pot", "corrupt", "checksum")
    with pytest.raises(InputError, match="checksum"):
        inspect_pot(tmp_path / "tampered.pot")

    _rewrite_meta(path, tmp_path / "v99.pot", lambda m: m.update(format_version=99))
    refused(tmp_path / "v99.pot", "format 99", "upgrade")
    _rewrite_meta(path, tmp_path / "vx.pot", lambda m: m.update(format_version="one"))
    refused(tmp_path / "vx.pot", "unknown pot format version")
    _rewrite_meta(path, tmp_path / "meta.pot", lambda m: m.update(tokens_read=5))
    refused(tmp_path / "meta.pot", "metadata does not match its checksum")

    from safetensors.torch import save_file
    save_file({"x": torch.zeros(3)}, str(tmp_path / "plain.safetensors"))
    refused(tmp_path / "plain.safetensors", "not an infinipot pot")

    other = _tiny(tok, num_hidden_layers=3)
    msg = refused(path, "another model", "tiny-llama", m=other)
    assert "-m tiny-llama" in msg
    refused(path, "different weights", m=_tiny(tok, seed=1))

    for p in ("missing.pot", "garbage.pot", "half.pot", "v99.pot"):
        with pytest.raises(InputError):
            read_meta(tmp_path / p)
    load_pot(path, model, tok)  # the original is still fine


# ---- 3. atomic writes -------------------------------------------------------------------------------
def test_failed_save_keeps_previous_pot(tmp_path, monkeypatch, saved, model, tok):
    _, eng = saved
    path = tmp_path / "book.pot"
    save_pot(path, eng, {"model": "tiny-llama"})
    before = path.read_bytes()
    eng2 = _engine(model, tok, n=200)  # a different pot

    real_save = potfile.save_file

    def half_then_interrupt(tensors, filename, metadata=None):
        real_save(tensors, filename, metadata=metadata)
        with open(filename, "r+b") as f:
            f.truncate(os.path.getsize(filename) // 2)
        raise KeyboardInterrupt

    monkeypatch.setattr(potfile, "save_file", half_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        save_pot(path, eng2)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.pot"]
    monkeypatch.setattr(potfile, "save_file", real_save)

    def no_space(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(potfile.os, "replace", no_space)
    with pytest.raises(InfinipotError, match="no space left on device"):
        save_pot(path, eng2)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.pot"]

    save_pot(path, eng2)  # and a successful save replaces it
    assert path.read_bytes() != before and read_meta(path)["tokens_read"] == eng2.tokens_read
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.pot"]


# ---- 4. read_meta / inspect / question_mismatch -----------------------------------------------------
def test_read_meta_and_inspect(saved, tok):
    from rich.console import Console

    path, eng = saved
    meta = read_meta(path)
    assert meta["format_version"] == 1 and meta["model"] == "tiny-llama"
    assert meta["config"] == {"size": 96, "keep": 48, "alpha": 0.5, "method": "infinipot", "chunk": 32,
                              "share": True, "share_from": 0.5, "relevance": True, "segment": 48,
                              "final_keep": 512, "reencode": True, "spread": 0, "nuc_sample": True, "recall": 1024,
                              "retrieve": "auto"}
    assert meta["catalyst"] == {"kind": "question", "text": "Who wrote the letter?", "tokens": len(CATALYST)}
    assert meta["tokens_read"] == eng.tokens_read and meta["cycles"] == eng.cycles
    assert meta["entries"] == len(eng.pot) and meta["n_pinned"] == len(HEADER)
    assert meta["provenance"] == [[0, "p. 1"], [100, "p. 2"], [200, "p. 3"], [300, "p. 4"]]
    assert meta["sources"] == SOURCES and meta["fed"] == 400 and meta["pending"] == len(eng.pending)
    assert meta["dtype"] == "float32" and meta["layers"] == 2 and meta["kv_heads"] == 2 and meta["head_dim"] == 16

    info = inspect_pot(path, tok)
    json.dumps(info)  # JSON-serializable
    assert info["tokens_read"] == eng.tokens_read and info["file_bytes"] == path.stat().st_size
    strip = info["strip"]
    assert strip["bins"] == 60 and len(strip["kept"]) == len(strip["heads"]) == len(strip["where"]) == 60
    assert all(0 <= h <= k <= 1 for k, h in zip(strip["kept"], strip["heads"]))
    assert strip["where"][0] == "p. 1" and strip["where"][-1] == "p. 4"

    src = eng.pot.src
    union = src[src >= 0].unique()
    assert info["remembered"]["tokens"] == union.numel()
    assert info["passages"] and len(info["passages"]) <= 12
    starts = [p["start"] for p in info["passages"]]
    assert starts == sorted(starts)
    kept = set(union.tolist())
    for p in info["passages"]:
        assert all(i in kept for i in range(p["start"], p["end"]))
        assert p["where"] in {"p. 1", "p. 2", "p. 3", "p. 4"} and isinstance(p["text"], str)
        assert 0 < p["heads"] <= 1
    # top=... large: every span; together they are exactly the union of kept positions
    every = inspect_pot(path, tok, top=10_000)["passages"]
    assert sum(p["tokens"] for p in every) == union.numel()
    # every passage is labelled with the page it starts on (pages are 100 tokens each, see _engine)
    assert [p["where"] for p in every] == [f"p. {p['start'] // 100 + 1}" for p in every]
    assert every[-1]["end"] <= eng.tokens_read

    assert inspect_pot(path, bins=1000)["strip"]["bins"] == eng.tokens_read
    quick = inspect_pot(path, verify=False)
    assert quick["passages"][0]["text"] is None
    assert quick["strip"] == strip and [p["start"] for p in quick["passages"]] == starts

    console = Console(record=True, width=100)
    render_inspect(info, console)
    out = console.export_text()
    assert "tiny-llama" in out and "coverage" in out and "p. 4" in out
    assert any(c in out for c in "▁▂▃▄▅▆▇█")


def test_question_mismatch():
    q = {"catalyst": {"kind": "question", "text": "Who wrote the  letter?"}}
    assert question_mismatch(q, "  who wrote the letter? ") is None
    warn = question_mismatch(q, "Where is the house?")
    assert warn and "Who wrote the  letter?" in warn and "\n" not in warn
    assert question_mismatch({"catalyst": {"kind": "general", "text": None}}, "anything") is None
    assert question_mismatch({}, "anything") is None


def test_strip_line():
    from infinipot_cli.cli.pot_report import strip_line

    assert strip_line([0, 0.01, 0.5, 1.0]) == " ▁▄█"


def test_accumulated_attention_only_for_the_policy_that_ranks_by_it(tmp_path, monkeypatch, model, tok):
    """H2O's per-entry attention sum exists in the pot (and its file) only for h2o; a pot file of an older
    version, holding it for every method, still loads."""
    from safetensors import safe_open

    from infinipot_cli.pot.engine import Engine as Eng

    plain = _engine(model, tok)
    assert plain.pot.acc is None
    path = tmp_path / "plain.pot"
    save_pot(path, plain, {"sources": SOURCES, "model": "tiny-llama"}, compact=False)
    with safe_open(str(path), framework="pt") as f:
        assert "acc" not in f.keys()

    h2o = Eng(model, tok, PotConfig.resolve("h2o", {"size": 96, "keep": 48, "chunk": 32}), catalyst_ids=CATALYST)
    h2o.pin(HEADER)
    h2o.feed(_ids(300, 1, len(tok)), where="p. 1")
    h2o.finish()
    assert h2o.cycles > 0 and h2o.pot.acc.shape == h2o.pot.src.shape and float(h2o.pot.acc.sum()) > 0
    path = tmp_path / "h2o.pot"
    save_pot(path, h2o, {"sources": SOURCES, "model": "tiny-llama"}, compact=False)
    back, _ = load_pot(path, model, tok)
    _assert_same_state(h2o, back)

    state = Eng.state  # an older version wrote the (zero) sums of every method's pot
    monkeypatch.setattr(Eng, "state", lambda self: (lambda t, f: ({**t, "acc": torch.zeros_like(t["nov"])}, f))(
        *state(self)))
    path = tmp_path / "old.pot"
    save_pot(path, plain, {"sources": SOURCES, "model": "tiny-llama"}, compact=False)
    monkeypatch.undo()
    with safe_open(str(path), framework="pt") as f:
        assert "acc" in f.keys()
    old, _ = load_pot(path, model, tok)
    assert old.pot.acc is None
    _assert_same_state(plain, old)
