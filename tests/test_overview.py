"""What `summarize` prints after its key points is whole sentences: no chat filler, no list fragments, no
sentence cut off, no code; an ordinary word ("You", "Instead") is no name the document lacks."""

from __future__ import annotations

import pytest

from infinipot_cli.answer.summary import SupportedSentences, flaw

DOC = "The parser is case sensitive. Comments begin with two dashes and end at the line's end."


@pytest.mark.parametrize("sentence,why", [
    ("It covers various features, including spell checking,", "fragment"),   # cut off
    ("- Summary", "fragment"),                                                # a list heading
    ("How does it work:", "fragment"),
    ("To declare a type you would write:", "fragment"),                       # ends before its example
    ("The definition reads Example { } DEFINITIONS.", "fragment"),            # code, its braces emptied
    ("I hope this helps.", "filler"),
    ("Let me know if you have any other questions.", "filler"),
    ("Here is a short summary of the manual.", "filler"),
    ("A summary of the document ends with a brief description of the main points covered.", "filler"),
    ("The parser is case sensitive.", None),
    ("gzip compresses files.", None),
])
def test_flaws(sentence, why):
    assert flaw(sentence) == why


def test_only_whole_sentences_are_printed():
    out = []
    s = SupportedSentences(out.append, DOC, "Overview: ")
    for delta in ["It covers various features, including spell checking,\n- Summary\nHow does it work:\n",
                  "The parser is case\nsensitive, so comments", " begin with two dashes.\nI hope this helps. ",
                  "Comments end at the line's end. Finally"]:
        s(delta)
    text = s.finish()
    assert text == "The parser is case sensitive, so comments begin with two dashes. Comments end at the line's end."
    assert "".join(out) == "Overview: " + text
    assert [t["reason"] for t in s.trimmed] == ["fragment", "fragment", "fragment", "filler", "fragment"]


def test_ordinary_words_are_no_names():
    s = SupportedSentences(None, DOC, "")
    s("You can write comments with two dashes. Instead, the parser ends them at the line's end. "
      "Overall, the parser is case sensitive. Frobnix wrote the parser.")
    assert s.finish().count(".") == 3
    assert s.dropped == [{"text": "Frobnix wrote the parser.", "unsupported": ["Frobnix"]}]


def test_list_items_become_sentences():
    s = SupportedSentences(None, DOC, "")
    s("Key facts:\n- The parser is case sensitive.\n* Comments begin with two dashes.\n1. Comments end at the line's end.\n")
    assert s.finish() == ("The parser is case sensitive. Comments begin with two dashes. Comments end at the line's "
                          "end.")


# ---- the default: key points only with the built-in model (docs/results/summary.md, "The overview") -----------
def _session(builtin_tok, name):
    from types import SimpleNamespace

    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.session import Session
    from tiny_models import make_model_for

    lm = SimpleNamespace(name=name, model=make_model_for(builtin_tok), tokenizer=builtin_tok)
    s = Session.start(lm, PotConfig(size=256, keep=128, spread=16).validate())
    text = " ".join(f"Part {k} of the manual explains how the frob tool sets level {k} on a widget." for k in range(40))
    s.read_tokens([builtin_tok.encode(text)])
    calls = []
    real = s.engine.answer
    s.engine.answer = lambda *a, **k: calls.append(1) or real(*a, **k)
    return s, calls


def test_the_builtin_model_writes_no_overview_unless_asked(builtin_tok):
    from infinipot_cli.runtime.loading import BUILTIN_NAME

    s, calls = _session(builtin_tok, BUILTIN_NAME)
    out = []
    ans = s.summarize(max_new_tokens=8, on_text=out.append)
    assert calls == [] and ans.summary.overview == "" and ans.summary.key_points
    assert ans.text.startswith("Key points:\n- ") and "Overview:" not in ans.text and not "".join(out).endswith("\n")
    s.summarize(max_new_tokens=8, overview=True)
    assert calls == [1]


def test_another_model_writes_its_overview(builtin_tok):
    s, calls = _session(builtin_tok, "some-bigger-model")
    s.summarize(max_new_tokens=8)
    assert calls == [1]
    s.summarize(max_new_tokens=8, overview=False)
    assert calls == [1]


@pytest.mark.parametrize("flag,expect", [([], None), (["--overview"], True), (["--no-overview"], False)])
def test_the_overview_flag(monkeypatch, tmp_path, flag, expect):
    from typer.testing import CliRunner

    from infinipot_cli import session as session_mod
    from infinipot_cli.app import app

    seen = []

    def fake_run(job, display, on_text=None):
        seen.append(job.overview)
        raise KeyboardInterrupt
    monkeypatch.setattr(session_mod, "run", fake_run)
    doc = tmp_path / "a.txt"
    doc.write_text("A note.")
    r = CliRunner().invoke(app, ["summarize", str(doc), "-q"] + flag)
    assert r.exit_code == 130 and seen == [expect]
