"""What `summarize` prints after its key points is whole sentences: no chat filler, no list fragments, no
sentence cut off, no code; an ordinary word ("You", "Instead") is no name the document lacks."""

from __future__ import annotations

import pytest

from infinipot_cli.summary import SupportedSentences, flaw

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
