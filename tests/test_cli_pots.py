"""Pots through the CLI: save/load gives the same answer, interrupted reads resume, inspect, warnings (a document
that changes while read); a damaged pot is found before the model loads; --load-pot accepts the settings it has."""

import json
import os

import pytest
from typer.testing import CliRunner

from infinipot_cli.pot import engine as engine_mod
from infinipot_cli.runtime import loading as model_mod
from infinipot_cli.app import app
from helpers import one_line

LOADED = ["--max-new-tokens", "16", "-q", "--json"]  # a loaded pot keeps its own settings
FAST = ["--pot-size", "512", "--keep", "256"] + LOADED


def invoke(args):
    return CliRunner().invoke(app, args)


def test_load_pot_answers_exactly_as_in_process(builtin, story_part, tmp_path):
    pot = str(tmp_path / "story.pot")
    q = "How many steps lead to the lamp room?"
    first = invoke(["ask", story_part, q, "--save-pot", pot] + FAST)
    assert first.exit_code == 0, first.stderr
    again = invoke(["ask", "--load-pot", pot, q] + LOADED)
    assert again.exit_code == 0, again.stderr
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert a["answer"] == b["answer"] and a["answer"]
    assert b["tokens_read"] == a["tokens_read"] and b["pot"]["cycles"] == a["pot"]["cycles"]
    # asking another question of a CaP-Q pot warns
    other = invoke(["ask", "--load-pot", pot, "Who kept the lighthouse?", "--json"])
    assert other.exit_code == 0
    assert "another question" in other.stderr or "distilled for" in other.stderr
    # inspect
    ins = invoke(["inspect", pot, "--json"])
    assert ins.exit_code == 0, ins.stderr
    info = json.loads(ins.stdout)
    assert info["tokens_read"] == a["tokens_read"]
    text = " ".join(p.get("text", "") for p in info["passages"])
    assert len(text) > 100


def test_interrupted_read_saves_and_resumes(story_pot, story_part, tmp_path, monkeypatch):
    _, whole = story_pot  # the same part read whole with the same settings

    part = str(tmp_path / "part.pot")
    calls = {"n": 0}
    real_feed = engine_mod.Engine.feed

    def flaky_feed(self, ids, where=""):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return real_feed(self, ids, where)

    monkeypatch.setattr(engine_mod.Engine, "feed", flaky_feed)
    r = invoke(["read", story_part, "--save-pot", part] + FAST)
    assert r.exit_code == 130
    assert os.path.exists(part)
    monkeypatch.setattr(engine_mod.Engine, "feed", real_feed)

    ins = json.loads(invoke(["inspect", part, "--json"]).stdout)
    src = ins["sources"][0]
    assert src["stopped_at"] is not None and 0 < src["stopped_at"] < whole["tokens_read"]

    resumed = str(tmp_path / "resumed.pot")
    r = invoke(["read", "--load-pot", part, story_part, "--save-pot", resumed] + LOADED)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["tokens_read"] == whole["tokens_read"]
    assert out["sources"][0]["stopped_at"] is None
    # reading the same source again into a complete pot is skipped with a warning
    r = invoke(["read", "--load-pot", resumed, story_part, "--save-pot", resumed] + LOADED)
    assert r.exit_code == 0 and "already in the pot" in r.stderr


def test_bad_pot_file_exit_2(tmp_path):
    bad = tmp_path / "bad.pot"
    bad.write_bytes(b"not a pot at all")
    r = invoke(["ask", "--load-pot", str(bad), "q", "-q"])
    assert r.exit_code == 2 and "infinipot: error:" in r.stderr
    r = invoke(["ask", "--load-pot", str(bad), "q", "--pot-size", "512"])  # the damaged pot is named first
    assert r.exit_code == 2 and "not an infinipot pot file" in r.stderr
    r = invoke(["inspect", str(bad)])
    assert r.exit_code == 2


@pytest.fixture(scope="module")
def story_pot(builtin, story_part, tmp_path_factory):
    """The story's first part read into a 512-entry pot (several distillations), and `read --json`'s object (the
    pot is not to be changed: a test that damages it takes a copy)."""
    pot = tmp_path_factory.mktemp("story") / "p.pot"
    r = invoke(["read", story_part, "--save-pot", str(pot)] + FAST)
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["pot"]["cycles"] >= 2 and out["sources"][0]["stopped_at"] is None
    return pot, out


def test_a_damaged_pot_is_found_before_the_model_loads(story_pot, tmp_path, monkeypatch):
    pot = tmp_path / "p.pot"
    data = bytearray(story_pot[0].read_bytes())
    data[-100] ^= 0xFF  # flip bits in the tensor data: the header still parses
    pot.write_bytes(bytes(data))

    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the checksum check")
    monkeypatch.setattr(model_mod, "load_model", refuse)
    err = one_line(invoke(["ask", "--load-pot", str(pot), "What was the cat called?", "-q"]))
    assert "checksum" in err


def test_load_pot_accepts_the_settings_it_already_has(story_pot):
    pot, _ = story_pot
    r = invoke(["ask", "--load-pot", str(pot), "What was the cat called?", "--pot-size", "512", "--keep", "256",
                "-q", "--max-new-tokens", "8", "--json"])
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["pot"]["size"] == 512
    err = one_line(invoke(["ask", "--load-pot", str(pot), "q", "--pot-size", "1024", "-q"]))
    assert "--pot-size 1024 (the pot has 512)" in err


def test_a_document_that_changes_while_read_is_flagged(builtin, story_part, tmp_path, monkeypatch):
    doc = tmp_path / "log.txt"
    doc.write_text(open(story_part).read())
    real, calls = engine_mod.Engine.feed, {"n": 0}

    def feed_and_append(self, ids, where=""):
        calls["n"] += 1
        if calls["n"] == 2:
            with open(doc, "a") as f:
                f.write("a new line written by another program\n")
        return real(self, ids, where)

    monkeypatch.setattr(engine_mod.Engine, "feed", feed_and_append)
    r = invoke(["read", str(doc), "--save-pot", str(tmp_path / "p.pot"), "--pot-size", "512", "--keep", "256", "-q"])
    assert r.exit_code == 0, r.stderr
    assert "changed while it was read" in r.stderr
