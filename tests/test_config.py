"""The pot configuration is declared once (config.py): specs, presets, CLI flags, validation and metadata."""

import dataclasses

import pytest

from infinipot_cli.cli.commands import READING_OPTIONS, Options, _options, pot_config
from infinipot_cli.pot.config import PAPER_OPTIONS, PotConfig, cli_knobs, spec_options, split_method_spec
from infinipot_cli.errors import UsageError


def opts(**kw):
    """_options as the CLI calls it: every reading option, None/defaults unless given."""
    base = {name: None for name, _, _ in READING_OPTIONS}
    base.update(format="auto", json_out=False, quiet=False, max_new_tokens=64)
    base.update(kw)
    return _options(**base)


def test_defaults_and_paper_preset():
    d = PotConfig()
    assert (d.size, d.keep, d.alpha, d.segment, d.relevance, d.share, d.share_from, d.final_keep, d.reencode) == (
        2048, 1024, 0.5, 48, True, True, 0.5, 512, True)
    assert PotConfig(size=1024).keep == 512                # --keep defaults to half the pot
    assert split_method_spec("infinipot-paper") == ("infinipot", PAPER_OPTIONS)
    assert split_method_spec("infinipot-paper+final_keep=512+alpha=0") == (
        "infinipot", {**PAPER_OPTIONS, "final_keep": 512, "alpha": 0.0})
    assert split_method_spec("infinipot+relevance=off+segment=16") == ("infinipot", {"relevance": False, "segment": 16})
    cfg = PotConfig.resolve("infinipot-paper", dict(size=96, keep=48))
    assert (cfg.method, cfg.share, cfg.segment, cfg.reencode, cfg.size) == ("infinipot", False, 0, False, 96)
    for bad in ("infinipot+spam=3", "infinipot+span=32", "infinipot+relevance=maybe", "infinipot+segment=x"):
        with pytest.raises(UsageError):
            split_method_spec(bad)


def test_one_declaration_per_knob():
    names = {f.name for f in dataclasses.fields(PotConfig)}
    assert set(spec_options()) <= names                       # the spec parser's options are declared fields
    flags = [f.metadata["flag"] for f in cli_knobs()]
    assert flags == ["--pot-size", "--keep", "--nuc-ratio", "--chunk", "--final-keep"]
    assert {f.name for f in cli_knobs()} <= {n for n, _, _ in READING_OPTIONS}  # every flag reaches the CLI
    for f in dataclasses.fields(PotConfig):
        assert f.metadata["help"]                             # and --help has a line for it
    block = PotConfig().policy_block()
    assert set(block) == {"name", *spec_options()}            # --json's policy block lists every option


@pytest.mark.parametrize("kw, flag", [({"size": 0}, "--pot-size"), ({"keep": 4096}, "--keep"),
                                      ({"alpha": 1.5}, "--nuc-ratio"), ({"chunk": 0}, "--chunk"),
                                      ({"final_keep": -1}, "--final-keep"),
                                      ({"method": "infinipot+share_from=1.5"}, "share_from"),
                                      ({"method": "nope"}, "method")])
def test_validation_names_the_option(kw, flag):
    with pytest.raises(UsageError, match=flag):
        opts(**kw)


def test_cli_flags_override_the_preset_and_are_refused_with_a_loaded_pot(monkeypatch):
    d = pot_config(Options())
    assert (d.segment, d.relevance, d.share, d.share_from, d.keep) == (48, True, True, 0.5, 1024)
    assert pot_config(opts(size=1024)).keep == 512         # --pot-size alone is valid
    assert pot_config(opts(method="infinipot-paper", final_keep=256)).final_keep == 256
    assert pot_config(opts(method="infinipot-paper")).reencode is False
    assert pot_config(opts(method="infinipot-paper+reencode=on")).reencode is True
    saved = PotConfig().validate().as_dict()  # a pot read with the defaults
    monkeypatch.setattr("infinipot_cli.pot.potfile.read_meta", lambda path: {"config": saved})
    for kw in ({"size": 1024}, {"method": "streaming"}, {"keep": 100}):
        with pytest.raises(UsageError, match="cannot change a loaded pot"):
            opts(load_pot="x.pot", **kw)
    o = opts(load_pot="x.pot", size=2048, keep=1024, method="infinipot")  # the settings it has: accepted
    assert o.pot == {} and o.method is None


def test_saved_settings_without_an_option_take_the_papers_value():
    old = PotConfig.from_saved({"size": 96, "keep": 48, "method": "infinipot", "span": 32, "pool": 3})
    assert (old.size, old.segment, old.relevance, old.reencode) == (96, 0, False, False)
    assert PotConfig.from_saved(PotConfig().as_dict()) == PotConfig()
