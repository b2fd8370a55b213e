"""A man page's key points start with what the command is (its NAME line), and every point is a whole sentence:
no piece of one, an option's description with its option, and no word left broken by a line-end hyphen."""

from __future__ import annotations

import pytest

from infinipot_cli.answer import keypoints as kp

# A GNU-style page (as `man frob | col -b` prints it): options on a line of their own, their descriptions in
# lower case under them; the author's name hyphenated at a line end (U+2010, as groff writes it).
FROB = """FROB(1)                          User Commands                         FROB(1)

NAME
       frob - adjust the frobnication level of a widget

SYNOPSIS
       frob [OPTION]... WIDGET...

DESCRIPTION
       Frob sets how strongly each widget is frobnicated.  Widgets keep their
       level across restarts, because frob writes the level into the widget's
       own store.

       -l LEVEL, --level=LEVEL

              set the frobnication level; a level above nine makes the widget
              glow in the dark.

       -s, --separate

              consider widgets as separate rather than as a  single,  continuous
              long row of widgets sharing one frobnication level.

       -q, --quiet

              print nothing unless a widget refuses the new level.

EXIT STATUS
       Exit status is zero when every widget accepted the level, and two when a
       widget was unplugged during the frobnication.

AUTHOR
       Written by Ada Quill, Tom Brandt, Ken Pizarro, and the long‐standing
       widget team led by Grace Hop\u2010
       per at the frobnication works.

SEE ALSO
       The full documentation for frob is maintained as a Texinfo manual.  If
       the info and frob programs are properly installed at your site, the
       command

              info frob

       should give you access to the complete manual of the frobnication tool.
"""


@pytest.fixture(scope="module")
def points(builtin_tok, tmp_path_factory):
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source
    from tiny_models import make_model_for

    path = tmp_path_factory.mktemp("man") / "frob.1.txt"
    path.write_text(FROB)
    P = Prompts(builtin_tok)
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    read_source(eng, builtin_tok, open_source(str(path)), SourceRecord(path=str(path), format="text"))
    return kp.document_key_points(eng)


def test_a_man_page_starts_with_what_the_command_is(points):
    first = points[0]
    assert first["text"] == "frob - adjust the frobnication level of a widget", points
    assert first["section"] == "NAME" and first["line"] == 4, first
    assert [p["section"] for p in points] == ["NAME", "DESCRIPTION", "EXIT STATUS", "AUTHOR", "SEE ALSO"], points


def test_every_point_is_a_whole_sentence(points):
    whole = " ".join(FROB.split())
    for p in points[1:]:
        text = p["text"]
        assert text[:1].isupper() or text.startswith(("-", "frob ")), text  # no piece of a sentence
        assert text.endswith((".", "!", "?")), text
        assert text.replace("Hopper", "Hop\u2010 per") in whole or text.split(": ", 1)[0].startswith("-"), text
    texts = [p["text"] for p in points]
    assert not any(t.startswith("should give you access") for t in texts), texts
    assert "The full documentation for frob is maintained as a Texinfo manual." in texts, texts


def test_an_options_description_keeps_its_option():
    prev = "       -s, --separate\n\n\t     "
    text = "consider widgets as separate rather than as a single, continuous long row."
    assert kp._whole(text, prev, None) == (f"-s, --separate: {text}", 1)
    for head in ("-l LEVEL, --level=LEVEL", "-i[SUFFIX], --in-place[=SUFFIX]", "--debug", "-n, --quiet, --silent"):
        assert kp._whole("do it.", head, None) == (f"{head}: do it.", 1), head
    assert kp._whole("should give you access to the manual.", "info frob", None) is None
    named = (0, "frob - adjust the frobnication level of a widget")
    assert kp._whole("frob writes the level.", "Widgets keep it.", named) == ("frob writes the level.", 0)
    assert kp._whole("frob writes the level.", "because", named) is None  # the end of a sentence begun before


def test_a_line_end_hyphen_is_joined_unless_the_word_has_one(points):
    author = next(p["text"] for p in points if p["section"] == "AUTHOR")
    assert "Grace Hopper at the frobnication works" in author and "Hop\u2010" not in author, author
    assert "long\u2010standing" in author  # a hyphen inside a line stays
    assert kp.join_hyphens("the command-\n    line tools", lambda w: w == "command-line") == "the command-line tools"
    assert kp.join_hyphens("infor-\n  mation and Mey\u2010\n ering") == "information and Meyering"
    assert kp.join_hyphens("soft\u00ad\nware", lambda w: True) == "software"
    assert kp.join_hyphens("see page-\n  2 and X-\n  Ray") == "see page-\n  2 and X-\n  Ray"  # not a broken word
