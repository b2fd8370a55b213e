"""Code in a web page stays code: a <pre> block, or a block of inline <code> alone, is written indented, so none of
its lines becomes a heading of the page's outline (a C "#  define" line read as a Markdown heading put itself in
front of every evidence passage of a usage example)."""

from __future__ import annotations

import pytest

from infinipot_cli.answer import outline as ol
from infinipot_cli.documents import html_to_blocks, open_source

CODE = """#include &lt;stdio.h&gt;
#include "frob.h"

#if defined(MSDOS) || defined(OS2)
#  include &lt;fcntl.h&gt;
#  define SET_RAW_MODE(file) setmode(fileno(file), O_BINARY)
#else
#  define SET_RAW_MODE(file)
#endif

#define CHUNK 16384
"""

PAGE = f"""<html><body>
<h2>Frob Usage Example</h2>
<p>This page walks through a small program that frobnicates its input. The program reads standard input and
writes the result to standard output.</p>
<pre><b>{CODE}</b></pre>
<p>The buffer size is set by CHUNK. Larger buffers are faster, but use more memory on small machines.</p>
<p><code>#  define VERBOSE 1</code></p>
<p>Turning VERBOSE on prints one line per block. The line shows the block's size and its running checksum.</p>
<pre>
# Options
#  define QUIET
</pre>
<p>Nothing else needs configuring; the defaults suit most uses of the tool.</p>
</body></html>
"""


def test_pre_and_code_blocks_are_flagged_and_headings_are_not():
    blocks = html_to_blocks("<body><h1>Title <code>x()</code></h1><pre>#  define A 1</pre>"
                            "<p><code>#  define B 2</code></p><p>Call <code>f()</code> first.</p></body>")
    assert [(b.text, b.heading, b.code) for b in blocks] == [
        ("Title x()", 1, False), ("#  define A 1", 0, True), ("# define B 2", 0, True),
        ("Call f() first.", 0, False)]


def test_code_lines_of_a_page_are_indented_in_its_text(tmp_path):
    p = tmp_path / "example.html"
    p.write_text(PAGE)
    text = "\n".join(x.text for x in open_source(str(p)).passages())
    lines = text.split("\n")
    for code in ("#  define SET_RAW_MODE(file) setmode(fileno(file), O_BINARY)", "#include <stdio.h>",
                 "# define VERBOSE 1", "# Options", "#endif"):
        assert "    " + code in lines, code
    assert not [line for line in lines if line.startswith("#")]
    assert "Frob Usage Example" in lines and any(line.startswith("This page walks") for line in lines)


def test_a_page_that_starts_with_code_keeps_its_first_line_indented(tmp_path):
    p = tmp_path / "code-first.html"
    p.write_text("<html><body><pre>#  define FIRST 1\nint x;</pre><p>Then prose follows here.</p></body></html>")
    first = next(open_source(str(p)).passages())
    assert first.text.startswith("    #  define FIRST 1\n    int x;")


def test_no_code_line_is_a_heading_of_plain_text():
    for line in ("#  define SET_RAW_MODE(file) setmode(fileno(file), O_BINARY)", "#  include <fcntl.h>",
                 "# include \"frob.h\"", "#ifdef WIN32", "#else", "#endif", "#if defined(MSDOS) || defined(OS2)",
                 "#  undef VERBOSE", "#pragma once"):
        assert ol.heading_of(line) is None, line
        assert ol.code_line(line), line
    assert ol.heading_of("# Installing") == "Installing" and ol.heading_of("## Define your terms") == "Define your terms"
    texts = ["# Intro\n", "Set the mode.\n", "#if defined(MSDOS)\n",
             "#  define SET_RAW_MODE(file) setmode(fileno(file))\n", "#endif\n", "Then run it.\n", "\n", "# Usage\n",
             "Run it.\n"]
    assert [p.title for p in ol.from_text(list(range(0, 90, 10)), texts)] == ["Intro", "Usage"]


@pytest.fixture(scope="module")
def read_page(builtin_tok, tmp_path_factory):
    """The page read into an unbounded pot of a tiny model over the built-in tokenizer (the engine's provenance,
    units and outline on real text)."""
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source
    from tiny_models import make_model_for

    path = tmp_path_factory.mktemp("html") / "example.html"
    path.write_text(PAGE)
    P = Prompts(builtin_tok)
    eng = Engine(make_model_for(builtin_tok), builtin_tok, PotConfig(method="full").validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    read_source(eng, builtin_tok, open_source(str(path)), SourceRecord(path=str(path), format="html"))
    return eng


def test_no_line_of_code_heads_a_part_of_the_page(read_page):
    """The page has one heading (<h2>): too few for parts by label, so its text's heading lines are looked for
    (retrieve.headings, outline.from_text); a code line is none of them."""
    import torch

    from infinipot_cli.answer import evidence as ev
    from infinipot_cli.answer import retrieve

    src, seg, texts = ev.document_units(read_page)
    K = len(texts)
    first = torch.full((K,), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, src, "amin")
    heads = {int(h) for h in retrieve.headings(read_page, first, texts).tolist() if h >= 0}
    for h in heads:
        assert "define" not in texts[h] and "#" not in texts[h], texts[h]
    for part in ol.from_text(first.tolist(), texts):
        assert "define" not in part.title and "Options" not in part.title, part
