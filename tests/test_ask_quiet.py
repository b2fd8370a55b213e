"""`-q` hides only the live display: `ask -q` shows the answer's evidence on stderr as `chat -q` does (and as
`ask` without -q does, line for line); --json keeps it in the object, stderr quiet."""

from __future__ import annotations

import io
import json

from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.cli.display import Display
from test_pot_cache import document, tiny  # noqa: F401 - the tiny model folder fixture

SMALL = ["--pot-size", "128", "--keep", "64", "--chunk", "64", "--max-new-tokens", "4"]


def evidence(stderr: str) -> list[str]:
    lines = stderr.splitlines()
    start = lines.index("evidence:")
    return lines[start:start + 1] + [ln for ln in lines[start + 1:] if ln.startswith("  [")]


def test_ask_quiet_shows_the_evidence_as_without_quiet(tiny, tmp_path):  # noqa: F811
    doc = document(tmp_path / "book.txt", seed=2)
    args = ["ask", doc, "Who keeps the lamp?", "-m", tiny] + SMALL
    quiet = CliRunner().invoke(app, args + ["-q"])
    loud = CliRunner().invoke(app, args)
    assert quiet.exit_code == 0 and loud.exit_code == 0, quiet.stderr + loud.stderr
    assert quiet.stdout == loud.stdout and quiet.stdout.strip()
    shown = evidence(quiet.stderr)
    assert len(shown) >= 2 and shown == evidence(loud.stderr)
    assert "tok/s" not in quiet.stderr and "tok/s" in loud.stderr  # the live display's summary: only without -q
    # with --json the evidence is in the object, not on stderr
    js = CliRunner().invoke(app, args + ["-q", "--json"])
    assert js.exit_code == 0 and json.loads(js.stdout)["evidence"] and "evidence:" not in js.stderr


def test_a_result_line_is_shown_in_every_mode():
    for mode in ("quiet", "plain"):
        buf = io.StringIO()
        d = Display(mode, stream=buf)
        d.result("evidence:")
        d.message("pot saved to x.pot")  # a progress note: -q hides it
        assert buf.getvalue().splitlines()[0] == "evidence:"
        assert ("pot saved" in buf.getvalue()) is (mode == "plain")
