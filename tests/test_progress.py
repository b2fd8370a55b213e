"""Read progress follows the tokens forwarded: the marks between the fractions a source reports, and a real read
whose reported progress is never ahead of its forwarded share."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from infinipot_cli.app import app

STORY = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs", "lighthouse.txt")


def invoke(args, **kw):
    return CliRunner().invoke(app, args, **kw)


def test_progress_follows_the_tokens_forwarded():
    from infinipot_cli.pot.reader import _ProgressMarks

    m = _ProgressMarks()
    for fed, f in ((100, 0.3), (200, 0.9)):
        m.reached(f)
        m.add(fed)
    assert m.at(0) == 0.0 and m.at(200) == 0.9 and m.at(500) == 0.9
    assert m.at(50) == pytest.approx(0.15) and m.at(150) == pytest.approx(0.6)


def test_progress_is_not_ahead_of_the_read(builtin, story_part, monkeypatch, tmp_path):
    """Each progress value reported for a text source is at most the share of its tokens forwarded (+ a piece)."""
    from infinipot_cli.pot import reader

    seen = []
    real = reader.read_source

    def spy(engine, tok, src, rec, label="", skip_tokens=0, progress=None):
        def p(f):
            seen.append((f, engine.tokens_read))
            progress(f)
        return real(engine, tok, src, rec, label=label, skip_tokens=skip_tokens, progress=p)

    monkeypatch.setattr("infinipot_cli.pot.reader.read_source", spy)
    r = invoke(["read", story_part, "--save-pot", str(tmp_path / "p.pot"), "--pot-size", "512", "--keep", "256", "-q"])
    assert r.exit_code == 0, r.stderr
    total = seen[-1][1]
    assert seen[-1][0] == pytest.approx(1.0, abs=0.02)
    for f, forwarded in seen[:-1]:
        assert f <= forwarded / total + 0.1, (f, forwarded, total)
