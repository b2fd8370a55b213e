"""--keep is declared once (config.py) and means what it says: 0 (or less) is refused like any value too small,
never taken for the default; not given, C is half the pot; the reading commands and `bench` take the same flag
with the same check, before any model loads."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.errors import UsageError
from infinipot_cli.pot.config import PotConfig, cli_knobs
from infinipot_cli.runtime import loading as model_mod
from helpers import one_line

STORY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs", "lighthouse.txt")


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("the model was loaded before the check")
    monkeypatch.setattr(model_mod, "load_model", refuse)


@pytest.mark.parametrize("value", ["0", "-3"])
@pytest.mark.parametrize("command", [["ask", STORY, "q"], ["summarize", STORY], ["chat", STORY],
                                     ["bench", "needle", "-l", "4k"]])
def test_keep_zero_or_less_is_refused_as_too_small(command, value):
    err = one_line(CliRunner().invoke(app, command + ["--keep", value]))
    assert f"--keep must be at least 1, not {value}" in err, err


def test_not_given_keep_is_half_the_pot_and_a_pot_too_small_names_its_size():
    assert PotConfig().validate().keep == 1024
    assert PotConfig(size=100).validate().keep == 50
    assert PotConfig(size=100, keep=1).validate().keep == 1  # the smallest C there is
    with pytest.raises(UsageError, match="--keep must be at least 1, not 0"):
        PotConfig(keep=0).validate()
    with pytest.raises(UsageError, match="--pot-size 1 is too small: it keeps half of itself, 0 entries"):
        PotConfig(size=1).validate()
    # a pot's saved settings hold C as it was read with: the same config again
    assert PotConfig.from_saved(PotConfig(size=100).validate().as_dict()).keep == 50


def test_the_declaration_gives_help_and_type():
    keep = next(f for f in cli_knobs() if f.name == "keep")
    assert keep.metadata["kind"] is int and keep.metadata["lo"] == 1 and keep.metadata["shown"] == "half the pot"
    r = CliRunner().invoke(app, ["ask", "--help"], env={"COLUMNS": "200"})
    assert r.exit_code == 0 and "Default: half the pot." in r.stdout
