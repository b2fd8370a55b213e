"""`infinipot inspect` into a pipe or a file: one line per fact, never wrapped at 80 columns, no trailing
spaces; "1 span", not "1 spans"."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.pot.config import PotConfig
from infinipot_cli.pot.engine import Engine
from infinipot_cli.pot.potfile import save_pot
from tiny_models import make_model_for

LONG = "https://example.org/" + "a-very-long-path-segment/" * 6 + "notes.txt"


@pytest.fixture(scope="module")
def pot(tmp_path_factory, builtin_tok):
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(), catalyst_ids=[11, 12])
    eng.pin([1, 2, 3])
    eng.feed(builtin_tok.encode("The keeper climbed the hundred and twelve steps to the lamp room every night. " * 6),
             where="line 1")
    eng.finish()
    path = tmp_path_factory.mktemp("inspect") / "one.pot"
    save_pot(path, eng, {"sources": [{"path": LONG, "format": "text", "tokens": eng.tokens_read}]})
    return path


def test_piped_inspect_is_not_wrapped(pot):
    r = CliRunner().invoke(app, ["inspect", str(pot)])
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.split("\n")
    assert all(line == line.rstrip() for line in lines), [line for line in lines if line != line.rstrip()]
    source = next(line for line in lines if line.startswith("source"))
    assert LONG in source and len(source) > 80  # one line, however long
    holds = next(line for line in lines if line.startswith("holds "))
    assert "KV " in holds and holds.endswith("iB")  # the size not split from its unit


def test_one_span_is_singular(pot):
    r = CliRunner().invoke(app, ["inspect", str(pot)])
    remembers = next(line for line in r.stdout.split("\n") if line.startswith("remembers"))
    assert remembers.endswith("in 1 span"), remembers
