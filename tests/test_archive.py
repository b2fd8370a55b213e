"""The archive of evicted sentences (archive.py) and recall at ask time (read once, ask later)."""

from __future__ import annotations

import pytest
import torch

from infinipot_cli.pot.archive import Archive
from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.pot.potfile import load_pot, save_pot
from infinipot_cli.pot.prompts import Prompts

FILLER = ("The gardener waters the tomato seedlings in the sheltered greenhouse. "
          "A retired physicist sketches the faint galaxy from the hilltop observatory. "
          "The cook stirs a pot of lentil soup in the small kitchen. "
          "The skipper trims the mainsail in the narrow channel while the crew coils rope. ")
FACT = "The spare key to the signal box is hidden in the blue biscuit tin. "
QUESTION = "Where is the spare key to the signal box hidden?"


@pytest.fixture(scope="module")
def tok(builtin_tok):
    return builtin_tok


@pytest.fixture(scope="module")
def model(tok):
    from transformers import AutoModelForCausalLM, LlamaConfig

    from infinipot_cli.runtime.attention import register_attention

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096)
    return AutoModelForCausalLM.from_config(cfg, attn_implementation=register_attention("sdpa")).eval()


def _doc(tok, copies=6, fact_at=1):
    parts = [FILLER] * copies
    parts.insert(fact_at, FACT)
    return tok.encode("".join(parts), add_special_tokens=False)


def _read(model, tok, ids, events=None, size=160, keep=80):
    P = Prompts(tok)
    cat, focus = P.catalyst("general")
    eng = Engine(model, tok, PotConfig(size=size, keep=keep, chunk=32), catalyst_ids=cat, catalyst_focus=focus,
                 on_event=events)
    eng.pin(P.header_ids()[:16])
    for i in range(0, len(ids), 50):
        eng.feed(ids[i:i + 50])
    eng.finish()
    return eng


def test_evicted_entries_are_archived_once_each(model, tok):
    ids = _doc(tok)
    eng = _read(model, tok, ids)
    assert eng.cycles >= 3 and len(eng.archive) > 5
    held = eng.pot.src[0, 0]
    held = held[held >= 0].tolist()
    archived = []
    for i in range(len(eng.archive)):
        s, seg = eng.archive.segment(i)
        assert seg == ids[s:s + len(seg)]                  # token ids at their document positions
        archived += range(s, s + len(seg))
    # every document token is either in the pot or in the archive, exactly once
    assert sorted(archived + held) == list(range(len(ids)))
    assert eng.archive.tokens == len(archived) and eng.archive.ids().dtype == torch.int32


def test_archive_is_saved_and_loaded_with_the_pot(model, tok, tmp_path):
    eng = _read(model, tok, _doc(tok))
    path = tmp_path / "p.pot"
    save_pot(path, eng, {"catalyst": {"kind": "general", "text": None}})
    loaded, meta = load_pot(path, model, tok)
    assert meta["archive"] == {"segments": len(eng.archive), "tokens": eng.archive.tokens}
    assert torch.equal(loaded.archive.ids(), eng.archive.ids())
    assert [loaded.archive.segment(i) for i in range(len(loaded.archive))] == \
        [eng.archive.segment(i) for i in range(len(eng.archive))]
    # a pot with nothing evicted (as pots written before the archive) has no archive tensors and still loads
    small = _read(model, tok, _doc(tok)[:40])
    save_pot(tmp_path / "s.pot", small, {})
    loaded, meta = load_pot(tmp_path / "s.pot", model, tok)
    assert len(loaded.archive) == 0 and meta["archive"]["tokens"] == 0


def test_recall_ranks_the_sentence_with_the_questions_words_first(tok):
    a = Archive(max_segment=48)
    ids = _doc(tok, copies=4, fact_at=2)
    from infinipot_cli.pot.scoring.segments import BoundaryTable, unit_starts

    src = torch.arange(len(ids))
    a.add(src, torch.tensor(ids), unit_starts(src[None], torch.tensor([ids]), BoundaryTable(tok))[0])
    best = a.rank(tok, QUESTION)[0][1]
    assert tok.decode(a.segment(best)[1]).strip() == FACT.strip()
    chosen = a.candidates(tok, QUESTION, budget=60)
    assert best in chosen and sum(a.segment(i)[1].__len__() for i in chosen) <= 60
    starts = [a.segment(i)[0] for i in chosen]
    assert starts == sorted(starts) and (best - 1 in chosen or best + 1 in chosen)  # with a neighbour


def test_recall_keeps_the_pot_bounded_and_brings_the_fact_back(model, tok):
    ids = _doc(tok, copies=8, fact_at=1)
    seen = []
    eng = _read(model, tok, ids, events=lambda ev: seen.append(ev.entries))
    fact_ids = tok.encode(" " + FACT.strip(), add_special_tokens=False)[1:]
    fact_at = next(i for i in range(len(ids)) if ids[i:i + len(fact_ids)] == fact_ids)
    P = Prompts(tok)
    prompt, focus = P.ask(QUESTION)
    assert not eng.question_known(prompt, focus)
    eng.cfg.reencode = False
    n_before, answered_from = len(eng.pot), []
    eng.answer(prompt, "question", max_new_tokens=4, focus=focus,
               on_text=lambda t: answered_from or answered_from.append(eng.pot.src[0, 0].clone()))
    assert eng.recalled > 0
    assert max(seen) <= 160 and eng.pot.peak_entries <= 160     # M entries at most, recall included
    kept = answered_from[0]                                     # the pot the answer was written from
    assert bool(((kept >= fact_at) & (kept < fact_at + len(fact_ids))).any())
    assert len(eng.pot) == n_before                             # and the pot is as read again afterwards


def test_no_recall_when_the_pot_was_read_with_the_question(model, tok):
    P = Prompts(tok)
    cat, cfocus = P.catalyst("question", QUESTION)
    prompt, focus = P.ask(QUESTION, answer_prefix="It is hidden in")
    eng = Engine(model, tok, PotConfig(size=160, keep=80), catalyst_ids=cat, catalyst_focus=cfocus)
    assert eng.question_known(prompt, focus)


@pytest.mark.slow  # the recall mechanics run on a tiny model above; this is the real-model CLI path
def test_ask_from_a_loaded_pot_never_opens_the_source(tmp_path, builtin):
    """`read DOC --save-pot` then `ask --load-pot` with the document gone: the answer comes from pot + archive."""
    import json

    from typer.testing import CliRunner

    from infinipot_cli.app import app

    doc = tmp_path / "doc.txt"
    doc.write_text(FILLER * 3 + FACT + FILLER * 12)
    pot = tmp_path / "p.pot"
    opts = ["--pot-size", "384", "--keep", "192", "-q"]
    r = CliRunner().invoke(app, ["read", str(doc), "--save-pot", str(pot), *opts])
    assert r.exit_code == 0, r.output
    doc.unlink()
    r = CliRunner().invoke(app, ["ask", "--load-pot", str(pot), QUESTION, "--json", "--max-new-tokens", "20", "-q"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["pot"]["peak_entries"] <= 384
    assert "blue" in out["answer"].lower(), out["answer"]


def test_new_needle_kinds_state_their_answer():
    from infinipot_cli.evaluate.needles import KINDS, make_needle

    assert {"year", "quantity", "role"} <= set(KINDS)
    for kind in ("year", "quantity", "role"):
        for seed in range(20):
            n = make_needle(kind, seed)
            assert n.expect in n.text and n.text.endswith(".") and n.question.endswith("?")
            assert n.answer_prefix and n.expect not in n.answer_prefix
        if kind == "quantity":  # the number comes with its unit
            assert any(f"{n.expect} {u}" in n.text for u in ("litres", "metres", "kilograms", "kilometres"))



@pytest.mark.slow  # the recall mechanics run on a tiny model above; this is the real-model CLI path
def test_bench_needle_read_then_ask_flow(tmp_path, builtin):
    """`bench needle --flow direct,read-then-ask`: both rows on the same cell, side by side, with held shares."""
    from typer.testing import CliRunner

    from infinipot_cli.evaluate.cli import bench_app
    from test_bench import run_small_needle

    r, doc = run_small_needle(tmp_path / "needle", "--depths", "0.3", "--kinds", "year", "--flow",
                              "direct,read-then-ask")
    assert "read-then-ask" in r.stdout
    assert [t["flow"] for t in doc["trials"]] == ["direct", "read-then-ask"]
    direct, later = doc["trials"]
    assert direct["needle"] == later["needle"] and direct["length"] == later["length"] == 1024
    assert direct["recalled"] == 0                       # the question was known while reading: nothing to recall
    assert later["archive_tokens"] > 0 and later["held_read"] is not None and later["held"] is not None
    assert {c["method"] for c in doc["summary"]} == {"infinipot", "infinipot · read-then-ask"}
    r = CliRunner().invoke(bench_app, ["needle", "--flow", "later", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--flow" in r.output
