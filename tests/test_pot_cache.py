"""The pot cache (pot_cache.py): a second command on a document answers from its cached pot without reading it;
a changed document, --no-cache, a damaged entry read again; the budget evicts the least recently used; stores are
atomic (two at once leave one complete pot; an interrupted read leaves none). Through the CLI, on a tiny
random-weight Llama with the built-in tokenizer (fast: the mechanics, not the answers' quality)."""

from __future__ import annotations

import json
import os
import random
import threading

import pytest
import torch
from typer.testing import CliRunner

from infinipot_cli.pot import engine as engine_mod
from infinipot_cli.pot import pot_cache, potfile
from infinipot_cli.app import app

SMALL = ["--pot-size", "128", "--keep", "64", "--chunk", "64", "--max-new-tokens", "4", "-q", "--json"]
ROOMY = ["--pot-size", "256", "--keep", "128", "--chunk", "64", "--max-new-tokens", "4", "-q", "--json"]  # summaries
WORDS = ("keeper lamp tower island storm harbour boat rope winter light stair bell tide rock gull wind ledger "
         "supply north south coast night morning oil glass shutter signal captain crew").split()


@pytest.fixture(scope="module")
def tiny(builtin_tok, tmp_path_factory):
    """A tiny random Llama saved as a model folder (-m), with the built-in model's tokenizer."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(builtin_tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                      bos_token_id=builtin_tok.bos_token_id, eos_token_id=builtin_tok.eos_token_id)
    folder = tmp_path_factory.mktemp("tiny-model")
    AutoModelForCausalLM.from_config(cfg).save_pretrained(folder)
    builtin_tok.save_pretrained(folder)
    return str(folder)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache folder of this test's own, on; every read stored however quick."""
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", "1G")
    monkeypatch.setattr(pot_cache, "MIN_READ_S", 0.0)
    return tmp_path / "cache" / "pots"


@pytest.fixture
def feeds(monkeypatch):
    """How many times a document piece was fed to an engine (0: nothing read)."""
    n = {"calls": 0}
    real = engine_mod.Engine.feed

    def counting(self, ids, where=""):
        n["calls"] += 1
        return real(self, ids, where)

    monkeypatch.setattr(engine_mod.Engine, "feed", counting)
    return n


def document(path, seed=0, lines=30) -> str:
    rnd = random.Random(seed)
    text = "".join(" ".join(rnd.choice(WORDS) for _ in range(10)).capitalize() + ".\n" for _ in range(lines))
    path.write_text(text)
    return str(path)


def run(args, tiny, input=None):
    r = CliRunner().invoke(app, args + ["-m", tiny], input=input)
    return r, (json.loads(r.stdout) if r.exit_code == 0 and r.stdout.strip() else None)


def pots(folder) -> list:
    return sorted(p.name for p in folder.glob("*.pot")) if folder.exists() else []


def leftovers(folder) -> list:
    return [p.name for p in folder.iterdir() if not p.name.endswith(".pot")] if folder.exists() else []


def test_second_ask_answers_from_the_cache_as_load_pot_would(tiny, cache, feeds, tmp_path):
    doc = document(tmp_path / "book.txt")
    saved = str(tmp_path / "book.pot")
    r, first = run(["ask", doc, "Who keeps the lamp?", "--save-pot", saved] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert first["cache"]["hit"] is False and first["cache"]["stored"] is True
    assert feeds["calls"] > 0 and pots(cache) == [first["cache"]["key"] + ".pot"]
    r, uncached = run(["ask", doc, "Who keeps the lamp?", "--no-cache"] + SMALL, tiny)
    assert r.exit_code == 0 and uncached["answer"] == first["answer"]  # storing does not change the first answer
    assert uncached.get("evidence") == first.get("evidence")

    feeds["calls"] = 0
    r, second = run(["ask", doc, "Where is the boat?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert feeds["calls"] == 0  # nothing read
    c = second["cache"]
    assert c["hit"] is True and c["key"] == first["cache"]["key"] and c["tokens_read"] == first["tokens_read"]
    assert c["age_s"] >= 0 and c["read_s"] > 0
    assert second["tokens_read"] == first["tokens_read"] and second["timings"]["read_s"] == 0
    assert second["sources"][0]["path"] == doc

    r, loaded = run(["ask", "--load-pot", saved, "Where is the boat?", "--max-new-tokens", "4", "-q", "--json"], tiny)
    assert r.exit_code == 0, r.stderr
    assert second["answer"] == loaded["answer"] and second.get("evidence") == loaded.get("evidence")

    # the line on stderr without -q
    r, _ = run(["ask", doc, "Where is the boat?"] + [a for a in SMALL if a != "-q"], tiny)
    assert "answering from the pot cached" in r.stderr and "--no-cache to read again" in r.stderr


def test_a_changed_byte_reads_again_and_no_cache_reads(tiny, cache, feeds, tmp_path):
    path = tmp_path / "notes.txt"
    doc = document(path, seed=1)
    r, first = run(["ask", doc, "What rings?"] + SMALL, tiny)
    assert r.exit_code == 0 and first["cache"]["stored"], r.stderr
    data = bytearray(path.read_bytes())
    data[100] = ord("X") if data[100] != ord("X") else ord("Y")
    path.write_bytes(bytes(data))
    feeds["calls"] = 0
    r, changed = run(["ask", doc, "What rings?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert feeds["calls"] > 0 and changed["cache"]["hit"] is False
    assert changed["cache"]["key"] != first["cache"]["key"] and len(pots(cache)) == 2

    before = {p: p.stat().st_mtime_ns for p in cache.glob("*.pot")}
    feeds["calls"] = 0
    r, fresh = run(["ask", doc, "What rings?", "--no-cache"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert feeds["calls"] > 0 and fresh["cache"] == {"hit": False, "key": None, "stored": False, "why": "--no-cache"}
    assert {p: p.stat().st_mtime_ns for p in cache.glob("*.pot")} == before  # the cache left alone


def test_quick_reads_are_not_stored(tiny, cache, tmp_path, monkeypatch):
    monkeypatch.setattr(pot_cache, "MIN_READ_S", 1e9)
    r, out = run(["ask", document(tmp_path / "short.txt"), "What rings?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert out["cache"]["stored"] is False and "under" in out["cache"]["why"] and pots(cache) == []


def test_the_budget_drops_the_least_recently_used(tiny, cache, feeds, tmp_path, monkeypatch):
    docs = [document(tmp_path / f"d{i}.txt", seed=10 + i) for i in range(3)]
    r, a = run(["ask", docs[0], "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    size = (cache / (a["cache"]["key"] + ".pot")).stat().st_size
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", str(int(size * 2.5)))  # room for two
    r, b = run(["ask", docs[1], "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0 and len(pots(cache)) == 2, r.stderr
    os.utime(cache / (a["cache"]["key"] + ".pot"), (1, 1))
    os.utime(cache / (b["cache"]["key"] + ".pot"), (2, 2))
    r, again = run(["ask", docs[0], "Which rope?"] + SMALL, tiny)  # a is used again: b is now the oldest
    assert r.exit_code == 0 and again["cache"]["hit"], r.stderr
    r, c = run(["ask", docs[2], "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert pots(cache) == sorted([a["cache"]["key"] + ".pot", c["cache"]["key"] + ".pot"])
    # a pot larger than the whole budget is not kept, and the others stay (tests/test_cache_budget.py)
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", "1K")
    r, d = run(["ask", document(tmp_path / "d4.txt", seed=20), "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0 and d["cache"]["stored"] is False and "budget" in d["cache"]["why"], r.stderr
    assert pots(cache) == sorted([a["cache"]["key"] + ".pot", c["cache"]["key"] + ".pot"])
    # 0: the cache is off (neither looked up nor stored into)
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", "0")
    kept = pots(cache)
    r, off = run(["ask", docs[2], "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 0 and off["cache"]["hit"] is False and pots(cache) == kept
    monkeypatch.setenv("INFINIPOT_CACHE_BUDGET", "lots")
    r, _ = run(["ask", docs[2], "Which bell?"] + SMALL, tiny)
    assert r.exit_code == 2 and "INFINIPOT_CACHE_BUDGET" in r.stderr


def test_a_truncated_entry_is_dropped_and_read_again(tiny, cache, feeds, tmp_path):
    doc = document(tmp_path / "book.txt", seed=3)
    r, first = run(["ask", doc, "Who keeps the lamp?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    entry = cache / (first["cache"]["key"] + ".pot")
    with open(entry, "r+b") as f:
        f.truncate(entry.stat().st_size // 2)
    feeds["calls"] = 0
    r, again = run(["ask", doc, "Who keeps the lamp?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    assert feeds["calls"] > 0 and again["cache"]["hit"] is False and again["cache"]["stored"] is True
    assert r.stderr.count("dropped a damaged cached pot") == 1
    assert again["answer"] == first["answer"]
    potfile.check_pot(entry)  # stored whole again

    # an entry whose metadata names another key (written for other content) is dropped too
    r, other = run(["ask", document(tmp_path / "other.txt", seed=9), "Who keeps the lamp?"] + SMALL, tiny)
    assert r.exit_code == 0, r.stderr
    (cache / (other["cache"]["key"] + ".pot")).replace(entry)
    feeds["calls"] = 0
    r, third = run(["ask", doc, "Who keeps the lamp?"] + SMALL, tiny)
    assert r.exit_code == 0 and feeds["calls"] > 0 and third["cache"]["hit"] is False, r.stderr
    assert "dropped a damaged cached pot (its key does not match its name)" in r.stderr
    assert pots(cache) == [entry.name] and potfile.read_meta(entry)["cache"]["key"] == entry.stem


def test_an_interrupted_read_leaves_no_entry(tiny, cache, tmp_path, monkeypatch):
    calls = {"n": 0}
    real = engine_mod.Engine.feed

    def flaky(self, ids, where=""):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real(self, ids, where)

    monkeypatch.setattr(engine_mod.Engine, "feed", flaky)
    r, _ = run(["ask", document(tmp_path / "book.txt", seed=4, lines=150), "Who?"] + SMALL, tiny)
    assert r.exit_code == 130
    assert pots(cache) == [] and leftovers(cache) == []


def test_two_stores_of_one_key_at_once_leave_one_complete_pot(tiny, cache, tmp_path, monkeypatch):
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.documents import open_source
    from infinipot_cli.cli.display import Display
    from infinipot_cli.runtime.loading import load_model
    from infinipot_cli.session import Job, Session

    doc = document(tmp_path / "book.txt", seed=5)
    lm = load_model(tiny)
    job = Job(kind="ask", sources=[doc], question="Who?", pot=PotConfig(size=128, keep=64, chunk=64))
    display = Display(mode="quiet")
    stores = []
    for _ in range(2):
        c = pot_cache.PotCache.plan(job)
        opened = [open_source(doc)]
        assert c.find(lm, opened, display, Session.resume) is None
        s = Session.start(lm, job.pot, job.reading_catalyst())
        s.read(opened[0])
        s.read_s = 10.0
        stores.append((c, s, opened))
    both = threading.Barrier(2)
    real = potfile.save_file

    def save_together(tensors, path, metadata=None):  # both temp files written before either replaces the entry
        both.wait(timeout=60)
        real(tensors, path, metadata=metadata)
        both.wait(timeout=60)

    monkeypatch.setattr(potfile, "save_file", save_together)
    threads = [threading.Thread(target=c.store, args=(s, o, display)) for c, s, o in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(c.stored for c, _, _ in stores) and stores[0][0].key == stores[1][0].key
    assert pots(cache) == [stores[0][0].key + ".pot"] and leftovers(cache) == []
    meta, _ = potfile.check_pot(cache / pots(cache)[0])
    assert meta["cache"]["key"] == stores[0][0].key


def test_questions_use_any_read_of_the_document_summaries_only_their_own(tiny, cache, feeds, tmp_path):
    doc = document(tmp_path / "guide.txt", seed=6)
    r, summ = run(["summarize", doc] + ROOMY, tiny)
    assert r.exit_code == 0 and summ["cache"]["stored"], r.stderr
    feeds["calls"] = 0
    r, asked = run(["ask", doc, "Which tide?"] + ROOMY, tiny)  # a question: the summary's pot serves
    assert r.exit_code == 0 and asked["cache"]["hit"] and asked["cache"]["key"] == summ["cache"]["key"]
    assert feeds["calls"] == 0
    r, again = run(["summarize", doc] + ROOMY, tiny)
    assert r.exit_code == 0 and again["cache"]["hit"] and feeds["calls"] == 0

    other = document(tmp_path / "other.txt", seed=7)
    r, q = run(["ask", other, "Which tide?"] + ROOMY, tiny)
    assert r.exit_code == 0 and q["cache"]["stored"]
    r, s = run(["summarize", other] + ROOMY, tiny)  # a summary does not use a question's pot: it reads
    assert r.exit_code == 0 and s["cache"]["hit"] is False and s["cache"]["stored"] and feeds["calls"] > 0
    # the paper's selection answers from the pot's KV: another question reads again
    r, p1 = run(["ask", other, "Which tide?", "--method", "infinipot-paper"] + ROOMY, tiny)
    r, p2 = run(["ask", other, "Which gull?", "--method", "infinipot-paper"] + ROOMY, tiny)
    assert p1["cache"]["stored"] and p2["cache"]["hit"] is False and p2["cache"]["key"] != p1["cache"]["key"]
    r, p3 = run(["ask", other, "Which tide?", "--method", "infinipot-paper"] + ROOMY, tiny)
    assert p3["cache"]["hit"] and p3["cache"]["key"] == p1["cache"]["key"]


def test_stdin_is_stored_and_found_by_the_file_with_its_bytes(tiny, cache, feeds, tmp_path):
    path = tmp_path / "piped.txt"
    doc = document(path, seed=8)
    r, piped = run(["ask", "-", "Which gull?"] + SMALL, tiny, input=path.read_bytes())
    assert r.exit_code == 0 and piped["cache"]["stored"], r.stderr
    feeds["calls"] = 0
    r, again = run(["ask", "-", "Which gull?"] + SMALL, tiny, input=path.read_bytes())  # kept on disk, looked up
    assert r.exit_code == 0 and again["cache"]["hit"] is True and feeds["calls"] == 0
    feeds["calls"] = 0
    r, by_file = run(["ask", doc, "Which gull?"] + SMALL, tiny)
    assert r.exit_code == 0 and by_file["cache"]["hit"] and feeds["calls"] == 0
    assert by_file["sources"][0]["path"] == doc


def test_stdin_from_a_file_is_hashed_before_it_is_read(tmp_path):
    import hashlib
    import subprocess
    import sys

    path = tmp_path / "doc.txt"
    document(path, seed=40)
    code = "from infinipot_cli.pot.pot_cache import stdin_digest; import sys; print(stdin_digest()); print(len(sys.stdin.read()))"
    with open(path, "rb") as f:
        out = subprocess.run([sys.executable, "-c", code], stdin=f, capture_output=True, text=True).stdout.split()
    assert out == [hashlib.sha256(path.read_bytes()).hexdigest(), str(len(path.read_text()))]  # stdin not moved
    piped = subprocess.run([sys.executable, "-c", code], input=path.read_text(), capture_output=True, text=True)
    assert piped.stdout.split()[0] == "None"


def test_cache_command_lists_and_removes(tiny, cache, tmp_path):
    keys = []
    for i in range(2):
        r, out = run(["ask", document(tmp_path / f"doc{i}.txt", seed=30 + i), "Who?"] + SMALL, tiny)
        assert r.exit_code == 0, r.stderr
        keys.append(out["cache"]["key"])
    r = CliRunner().invoke(app, ["cache", "--json"])
    assert r.exit_code == 0, r.stderr
    listed = json.loads(r.stdout)
    assert sorted(e["key"] for e in listed["entries"]) == sorted(keys)
    e = listed["entries"][0]
    assert e["sources"][0].endswith(".txt") and e["tokens_read"] > 0 and e["size"] > 0 and e["model"]
    r = CliRunner().invoke(app, ["cache"])
    assert r.exit_code == 0 and "2 cached pots" in r.stdout and "doc0.txt" in r.stdout
    r = CliRunner().invoke(app, ["cache", "--remove", keys[0][:10]])
    assert r.exit_code == 0 and pots(cache) == [keys[1] + ".pot"]
    r = CliRunner().invoke(app, ["cache", "--remove", "nope"])
    assert r.exit_code == 2 and "no cached pot" in r.stderr
    r = CliRunner().invoke(app, ["cache", "--clear"])
    assert r.exit_code == 0 and "removed 1 cached pot" in r.stdout and pots(cache) == []
