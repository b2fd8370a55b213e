"""Evidence with every answer, honest answers, and the `bench qa` scoring: locations, claims, recall."""

import pytest
import torch

from infinipot_cli.answer import evidence as ev
from infinipot_cli.answer import honesty


# ---- locations ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("label,where", [
    ("p. 12 · 3 Utilities", {"page": "12", "section": "3 Utilities"}),
    ("p. iv", {"page": "iv"}),
    ("ch. 3 · Getting started", {"chapter": 3, "section": "Getting started"}),
    ("§ Chapter 2. Users and Groups", {"section": "Chapter 2. Users and Groups"}),
    ("line 40", {"line": 40}),
    ("notes.txt · line 7", {"line": 7}),
    ("", {}),
])
def test_parse_where(label, where):
    assert ev.parse_where(label) == where


def test_source_of_and_provenance():
    sources = [("a.txt", 10), ("b.pdf", 5)]
    assert [ev.source_of(p, sources) for p in (0, 9, 10, 14)] == ["a.txt", "a.txt", "b.pdf", "b.pdf"]
    prov = [(0, "line 1"), (50, "line 30"), (90, "line 61")]
    assert ev.provenance_at(prov, 49) == (0, "line 1") and ev.provenance_at(prov, 95) == (90, "line 61")


def test_passages_widen_within_the_document_and_stay_short():
    texts = ["Alpha one two.", "Beta three four.", "Gamma five six.", "Delta seven.", "Far away unit."]
    seg = torch.tensor([0, 0, 1, 1, 2, 2, 3, 4])
    src = torch.tensor([0, 1, 2, 3, 4, 5, 6, 100])  # unit 4 is not next to unit 3 in the document
    scores = torch.tensor([0.0, 0.1, 5.0, 0.2, 1.0])
    out = ev.choose(seg, texts, src, scores, max_passages=2, max_words=16)
    assert len(out) == 2
    best, _ = out[0]
    assert 2 in best and all(abs(a - b) == 1 for a, b in zip(best, best[1:]))  # one contiguous stretch
    assert sum(len(texts[k].split()) for k in best) <= 8 + 6
    assert 4 in out[1][0] and 3 not in out[1][0]  # never widened across the gap


def test_the_second_passage_is_where_the_question_points():
    texts = ["Alpha one two.", "Beta three four.", "Gamma five six.", "Delta seven.", "Far away unit."]
    seg = torch.tensor([0, 1, 2, 3, 4])
    src = torch.tensor([0, 10, 20, 30, 40])  # no two units adjacent: no widening
    scores = torch.tensor([0.0, 0.1, 5.0, 0.2, 1.0])  # the answer's choice: 2, then 4, then 3
    asked = torch.tensor([0.0, 2.0, 0.0, 0.0, 0.0])   # the question's words: unit 1
    out = [g for g, _ in ev.choose(seg, texts, src, scores, max_passages=3, asked=asked)]
    assert out == [[2], [1], [4]]
    assert [g for g, _ in ev.choose(seg, texts, src, scores, max_passages=3, asked=torch.zeros(5))] == [[2], [4], [3]]


def test_word_scores_prefer_rare_shared_words():
    s = ev.word_scores(["the operator user had uid 37", "the user list", "nothing here"], "What uid did operator have?")
    assert int(s.argmax()) == 0 and float(s[2]) == 0.0


# ---- honesty -----------------------------------------------------------------------------------------------
DOC = "The operator user had uid 37. Squid runs as user proxy. Use --rcfile file. CVE-2022-1271 was fixed in 1.12-1."


@pytest.mark.parametrize("answer,bad", [
    ("The operator user had uid 41.", ["41"]),
    ("It had uid 37.", []),
    ("Squid runs as the user Amanda.", ["Amanda"]),
    ("Squid runs as user proxy.", []),
    ("The --rcfile option.", []),
    ("The --norc option.", ["--norc"]),
    ("It fixed CVE-2022-1271.", []),
    ("A vulnerability in the GNU Compiler Lite (gcc).", ["Compiler", "Lite"]),  # "gcc": lowercase, unchecked
    ("The \"c\" key.", []),  # nothing checkable: the answer stands
])
def test_unsupported_specifics(answer, bad):
    assert honesty.unsupported(answer, "Which one?", DOC) == bad


def test_a_list_answer_loses_only_its_invented_items():
    doc = "The numbers are 6213473 and 7858859, and the user is proxy."
    guess = ":\n\n* 6213473\n* 4234444\n* 7858859"
    assert honesty.supported_items(guess, "Which numbers?", doc) == ":\n\n* 6213473\n* 7858859"
    assert honesty.supported_items("It is 4234444.", "Which?", doc) is None          # not a list
    assert honesty.supported_items("* 4234444\n* 5555555", "Which?", doc) is None      # nothing left
    assert honesty.supported_items("11. 6213473\n12. 4234444", "Which?", doc) == "11. 6213473"
    assert honesty.supported_items("Uid 41:\n* 6213473\n* 7858859", "Which?", doc) is None  # outside the items
    assert honesty.unsupported("1. 6213473\n12. 7858859", "Which?", doc) == []  # item numbers are no claims
    assert honesty.unsupported("It is 12. Then 6213473.", "Which?", doc) == ["12"]
    assert honesty.unsupported("12. Then 6213473.", "Which?", doc) == ["12"]  # one line: not a list


def test_words_of_the_question_are_not_claims():
    assert honesty.claims("Version 1.12-1 fixed it.", "What did version 1.12-1 fix?") == []


def test_numbers_match_whole():
    assert honesty.found("37", "uid 37.") and not honesty.found("3", "uid 37.")
    assert honesty.found("1,000", "1000 files")


def test_refusals_are_recognised():
    assert honesty.refused(honesty.NOT_SAID) and honesty.refused("The document does not mention it.")
    assert not honesty.refused("proxy")


# ---- the built-in model: both flows ------------------------------------------------------------------------
def _read(lm, path, pot_size=512, keep=256):
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source

    P = Prompts(lm.tokenizer)
    eng = Engine(lm.model, lm.tokenizer, PotConfig(size=pot_size, keep=keep).validate(),
                 catalyst_ids=P.catalyst("general")[0])
    eng.pin(P.header_ids())
    rec = SourceRecord(path=path, format="text")
    read_source(eng, lm.tokenizer, open_source(path, "auto"), rec)
    return P, eng, [(path, rec.tokens)]


@pytest.fixture(scope="module")
def story_read(builtin, story_part):
    """The story's first part (~1,300 tokens) read once into a 512-entry pot (4 distillations, an archive) for this
    module's tests (an answer leaves the pot as read)."""
    return _read(builtin, story_part)


def test_evidence_of_an_answer_in_both_flows(builtin, story_read):
    """The evidence is at most three short passages of the document, each at the line it starts on; a pot
    saved and loaded back (what `ask --load-pot` reads) gives the same evidence."""
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.answer.grounding import ground

    P, eng, sources = story_read
    assert eng.cycles >= 3 and len(eng.archive) > 0
    path = sources[0][0]
    q = "What was the keeper's cat called?"
    prompt, focus = P.ask(q)
    guess = eng.answer(prompt, "question", 24, P.stop_ids(), focus=focus)
    g = ground(eng, prompt, q, guess, sources)
    assert 1 <= len(g.evidence) <= ev.MAX_PASSAGES
    assert sum(len(p.text.split()) for p in g.evidence) <= ev.MAX_WORDS + 3 * 8
    story = open(path, encoding="utf-8").read()
    lines = story.split("\n")
    flat = " ".join(story.split())
    for p in g.evidence:
        assert p.source == path and "line" in p.where
        assert p.text.removesuffix(" …") in flat, p.text  # the document's own words, none split or joined
        assert p.text.split()[0].strip("\"'“") in lines[p.where["line"] - 1], (p.where, p.text)
    js = g.as_json()
    assert set(js["evidence"][0]) >= {"text", "source", "line"}
    # the whole document is recovered from the pot and its archive (the support check reads it)
    assert honesty.document_text(eng).split() == story.split()

    loaded = Engine.from_state(builtin.model, builtin.tokenizer, *eng.state())
    guess2 = loaded.answer(prompt, "question", 24, P.stop_ids(), focus=focus)
    g2 = ground(loaded, prompt, q, guess2, sources)
    assert guess2 == guess and [p.as_json() for p in g2.evidence] == [p.as_json() for p in g.evidence]


def test_an_invented_number_is_withheld(story_read):
    from infinipot_cli.answer.grounding import ground

    P, eng, sources = story_read
    q = "How many steps does the tower have?"
    prompt, focus = P.ask(q)
    eng.answer(prompt, "question", 8, P.stop_ids(), focus=focus)
    g = ground(eng, prompt, q, "The tower has 98765 steps.", sources)  # a guess naming a number not in the text
    assert g.answer == honesty.NOT_SAID and g.guess.startswith("The tower") and g.unsupported == ["98765"]
    assert g.as_json()["guess"] == g.guess and any("98765" in line for line in g.lines())


def test_neighbours_widen_past_a_gap_never_and_into_shown_units_never():
    texts = ["--max-ppsize=N\n", "Specify the size\n", "of the stack.\n", "This defaults to 10000.\n",
             "Currently the maximum value accepted is 100000.\n", "--min-vsize=N\n"]
    seg = torch.tensor([0, 1, 2, 3, 4, 5])
    src = torch.tensor([0, 1, 2, 3, 4, 9])  # unit 5 is not next to unit 4 in the document
    near = ev.Neighbours(src, seg, texts)
    assert near.widen(0, 20) == [0, 1, 2, 3, 4]            # the option's description, to its words
    assert near.widen(4, 40) == [0, 1, 2, 3, 4]            # not across the gap to unit 5
    assert near.widen(0, 20, used={3}) == [0, 1, 2]       # not into what another passage shows
    assert ev.Neighbours(src, seg, texts, part_at=[2]).widen(0, 20) == [0, 1]  # nor a new part


OPTIONS = """R accepts the following command-line options.

--no-environ
Do not read any user file to set environment variables.

--max-ppsize=N
Specify the maximum size of the pointer protection stack as N locations.
This defaults to 10000, but can be increased
to allow large and complicated calculations
to be done.
Currently the maximum value accepted is 100000.

--min-vsize=N
Specify the minimum size of the vector heap.

--quiet
Do not print out the initial copyright and welcome messages.
"""


def test_the_evidence_reaches_past_the_passage_it_was_found_by(builtin, tmp_path):
    """The answer's passage is widened in the document to its share of words, past the lines the passage was
    found by: an option's last line of description ("Currently the maximum value accepted is 100000.", five
    lines under "--max-ppsize=N") is shown with it."""
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.session import Session

    path = tmp_path / "options.txt"
    filler = "".join(f"Line {i} of the appendix about plotting.\n" for i in range(40))
    path.write_text(filler + OPTIONS + filler)
    s = Session.start(builtin, PotConfig(size=512, keep=256))
    s.read(open_source(str(path), "auto"))
    a = s.ask("What is the largest value --max-ppsize accepts?", grounded=True)
    assert any("100000" in p.text for p in a.grounded.evidence), [p.text for p in a.grounded.evidence]
