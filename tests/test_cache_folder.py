"""The cache folder ($INFINIPOT_CACHE): set to a file or a read-only folder, a command fails at once with one line
naming the variable and exit 2 (a usage error); a new cache folder does not lose what the default cache holds —
the converted model and the compiled answer step are looked for there too (read only; what is built goes to the
cache in force) — and `infinipot models` says which folder its compiled step comes from, or that none is built
and how to build it."""

from __future__ import annotations

import json
import os

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.runtime import catalogue, compiled_step, decode_step, exact_ops
from infinipot_cli.runtime import loading as model_mod
from helpers import one_line, perturbed_model

STORY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs", "lighthouse.txt")


@pytest.fixture
def caches(tmp_path, monkeypatch):
    """A new $INFINIPOT_CACHE and an empty default cache (XDG_CACHE_HOME): (in force, default)."""
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path / "new"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "no-ollama"))
    monkeypatch.delenv("INFINIPOT_DECODE", raising=False)
    return tmp_path / "new", tmp_path / "xdg" / "infinipot"


@pytest.fixture
def no_model(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the check")
    monkeypatch.setattr(model_mod, "load_model", refuse)
    monkeypatch.setattr(model_mod, "load_tokenizer", refuse)


@pytest.mark.parametrize("command", [["ask", STORY, "q"], ["summarize", STORY, "--json"], ["read", STORY,
                                     "--save-pot", "x.pot"], ["models"], ["models", "--compile"], ["cache"]])
def test_a_file_is_a_usage_error_naming_the_variable(command, tmp_path, monkeypatch, no_model):
    f = tmp_path / "not-a-folder"
    f.write_text("a user's file\n")
    for value in (f, f / "sub"):
        monkeypatch.setenv("INFINIPOT_CACHE", str(value))
        err = one_line(CliRunner().invoke(app, command), 2)
        assert err.startswith(f"infinipot: error: INFINIPOT_CACHE={value} is a file, not a folder"), err
        assert "Error" not in err and "errno" not in err.lower()
    assert f.read_text() == "a user's file\n"


def test_a_read_only_folder_is_a_usage_error_where_it_must_be_written(tmp_path, monkeypatch, no_model):
    ro = tmp_path / "ro"
    ro.mkdir()
    monkeypatch.setenv("INFINIPOT_CACHE", str(ro / "cache"))  # to be made in a folder that cannot be written
    real = os.access
    monkeypatch.setattr(catalogue.os, "access", lambda p, mode, **kw: False if str(p) == str(ro) else real(p, mode,
                                                                                                      **kw))
    for command in (["ask", STORY, "q"], ["models", "--compile"], ["cache", "--clear"]):
        err = one_line(CliRunner().invoke(app, command), 2)
        assert f"INFINIPOT_CACHE={ro / 'cache'} is read-only ({ro}, where it would be created, is)" in err, err
    monkeypatch.setenv("INFINIPOT_CACHE", str(ro))
    err = one_line(CliRunner().invoke(app, ["ask", STORY, "q", "--json"]), 2)
    assert f"INFINIPOT_CACHE={ro} is read-only: point INFINIPOT_CACHE at a folder you can write to" in err
    assert CliRunner().invoke(app, ["cache"]).exit_code == 0  # listing only reads


def test_models_says_where_the_compiled_step_is_or_how_to_build_it(caches):
    here, default = caches
    r = CliRunner().invoke(app, ["models"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert f"no compiled answer step is built in {here / 'compiled'}" in r.stdout
    assert "infinipot models --compile" in r.stdout
    built = default / "compiled"
    built.mkdir(parents=True)
    (built / "decode-step-0123.so").write_bytes(b"")
    (built / "exact-ops-0123.so").write_bytes(b"")
    rt = json.loads(CliRunner().invoke(app, ["models", "--json"]).stdout)["runtime"]
    assert rt["compiled_step"] and rt["compiled_in"] == str(built) and rt["compiled_for"] == str(here / "compiled")
    r = CliRunner().invoke(app, ["models"], env={"COLUMNS": "250"})
    assert f"compiled answer step: {built} (the default cache; {here / 'compiled'} has none)" in r.stdout


def test_the_compiled_step_is_found_in_the_default_cache(caches):
    here, default = caches
    step = decode_step.for_model(perturbed_model("llama"))
    assert compiled_step.built_in(step) is None
    for path in [*compiled_step.library_paths(step, where=default / "compiled").values(),
                 exact_ops.library_path(default / "compiled")]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert compiled_step.built_in(step) == default / "compiled"
    assert compiled_step.folder() == here / "compiled"  # what is built goes to the cache in force
    for path in [*compiled_step.library_paths(step).values(), exact_ops.library_path(here / "compiled")]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
    assert compiled_step.built_in(step) == here / "compiled"  # the cache in force first


def test_the_converted_model_is_found_in_the_default_cache(caches, monkeypatch):
    here, default = caches

    def converted(root):
        folder = root / "models" / catalogue.BUILTIN.folder
        folder.mkdir(parents=True)
        (folder / "infinipot.json").write_text(json.dumps({"format": catalogue.CONVERTED_FORMAT}))
        return folder

    def no_conversion(*a, **k):
        raise AssertionError("converted again")

    monkeypatch.setattr(model_mod, "_convert_gguf", no_conversion)
    there = converted(default)
    assert model_mod.builtin_model_path() == there
    assert model_mod.builtin_model_path() == there and not (here / "models").exists()  # nothing written here
    mine = converted(here)
    assert model_mod.builtin_model_path() == mine
    # an older conversion format is not used: converted again, into the cache in force
    (mine / "infinipot.json").write_text(json.dumps({"format": -1}))
    (there / "infinipot.json").write_text(json.dumps({"format": -1}))
    with pytest.raises(model_mod.ModelError, match="converted again"):
        model_mod.builtin_model_path()
