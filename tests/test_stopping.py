"""Answers that end (stopping.py): loops stop, a question's answer ends at its first sentence with content,
decimals and abbreviations do not end it, a summary is not cut at its first sentence; the engine honours
`should_stop`; the built-in model answers the demo question and stops."""

import os

import pytest

from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.evaluate.needles import answer_has
from infinipot_cli.answer.stopping import Stopper, StopStream
from tiny_models import make_model

SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_docs")
LOOP = ("The combination of the blue vault in the harbour office is 4 8  The combination of the blue vault in "
        "the harbour office is 4 8  The combination of the blue vault")


def q(text, prefix=""):
    s = Stopper("question", prefix=prefix)
    return s.should_stop([], text), s.trim(text)


# ---- loops ----------------------------------------------------------------------------------------
def test_a_loop_stops_before_it_repeats():
    assert q(LOOP) == (True, "The combination of the blue vault in the harbour office is 4 8")
    assert Stopper("summary").trim(LOOP) == "The combination of the blue vault in the harbour office is 4 8"
    assert q("4 8 4 8 4 8 4 8 4 8")[1] == "4 8"
    assert q("the the the the the the the the")[1] == "the"
    assert q("The answer" + "\n" * 20)[1] == "The answer"
    assert q("Ilse Brandt" + " ." * 12)[1] == "Ilse Brandt"


def test_no_loop_no_stop():
    for text in ["The keeper of the lighthouse was a man who kept the light", "It was 1,000,000 or 100000000 men",
                 "The pass key is 11111"]:
        assert q(text) == (False, text)


# ---- the first sentence ---------------------------------------------------------------------------
@pytest.mark.parametrize("text, answer", [
    ("The keeper's cat was called Biscuit. She was a ginger cat", "The keeper's cat was called Biscuit."),
    ("The version is 4.19.0. It came out", "The version is 4.19.0."),
    ("It costs 48 crowns.\nA return ticket", "It costs 48 crowns."),
    ("Dr. Amara Okafor led the survey. She", "Dr. Amara Okafor led the survey."),
    ("The survey was led by Dr. Amara Okafor. She", "The survey was led by Dr. Amara Okafor."),
    ("J. R. R. Tolkien wrote it. He", "J. R. R. Tolkien wrote it."),
    ("Yes. The keeper was Tobias Fenwick. He", "Yes. The keeper was Tobias Fenwick."),  # "Yes." alone: no content
    ("What is the pass key? The pass key is 48213. Remember it", "What is the pass key? The pass key is 48213."),
    ('He wrote "the light is out." Then he', 'He wrote "the light is out."'),
    ("The room is No. 5 on the left. It", "The room is No. 5 on the left."),
    ("Ilse Brandt runs it\n\nThe inn has", "Ilse Brandt runs it"),
])
def test_question_ends_at_first_sentence(text, answer):
    assert q(text) == (True, answer)


@pytest.mark.parametrize("text", [
    "The version is 4.19.0 and it was released in May",   # dots inside a number
    "It costs 4.50 crowns a night",
    "The inn, e.g. the Copper Kettle, has",               # an abbreviation before a lower-case word
    "The pass key is 48213.",                             # undecided until the next token
    "The facts are:\n\n1. one thing",                     # a list after a colon
    "Is it the keeper? Or the",                           # a question mark is no answer
])
def test_not_an_end_yet(text):
    assert q(text) == (False, text)


def test_answer_prefix_counts_as_content():
    assert q("Biscuit. She was", prefix="The keeper's cat was named") == (True, "Biscuit.")
    assert q("Biscuit. She was") == (False, "Biscuit. She was")


def test_summary_is_not_cut_at_its_first_sentence():
    s = Stopper("summary")
    text = "The story follows a lighthouse keeper. He lives alone with his cat. A storm wrecks a ship."
    assert not s.should_stop([], text) and s.trim(text) == text


def test_a_list_that_repeats_an_item_ends_before_it():
    s = Stopper("question", prefix="The special magic numbers for x are")
    text = ":\n\n- 4731444\n- 3219037\n- 9909392\n- 9909392\n- 4731444\n"
    assert s.trim(text) == ":\n\n- 4731444\n- 3219037\n- 9909392"
    assert s.trim("1. tar\n2. gzip\n3. Tar.\n") == "1. tar\n2. gzip"
    assert s.trim(":\n\n1. 1084503\n2. 5725836\n3. 5725836") == ":\n\n1. 1084503\n2. 5725836"  # the last line, at the end
    assert not s.should_stop([], "- 4731444\n- 47314")  # an item not yet finished
    assert not s.should_stop([], "- 47\n- 4731444\n") and not s.should_stop([], "see:\n- a b\n- a c\n")


# ---- streaming writes exactly the trimmed answer --------------------------------------------------
@pytest.mark.parametrize("text, mode", [(LOOP, "question"), (" The keeper's cat was called Biscuit. She was", "question"),
                                        ("A summary. Of two sentences" + "\n" * 14, "summary"),
                                        (":\n- 4731444\n- 3219037\n- 4731444\n- 3219037\n- 1", "question")])
def test_stream_writes_exactly_the_trimmed_answer(text, mode):
    stopper, out = Stopper(mode), []
    stream = StopStream(stopper, out.append)
    words = text.split(" ")
    for i, w in enumerate(words):
        stream((" " if i else "") + w)
        assert stopper.trim(text).strip().startswith("".join(out))  # never a character the end takes back
        if stopper.should_stop([], stream.raw):
            break
    final = stream.finish()
    assert "".join(out) == final == stopper.trim(text).strip()


# ---- the bench's check ------------------------------------------------------------------------------
def test_answer_has_whole_words_any_punctuation():
    assert answer_has(" Ilse Brandt's inn.", "Ilse Brandt")
    assert answer_has("It is 48,213.", "48213")
    assert answer_has("in the sea-buckthorn", "sea buckthorn")
    assert answer_has("is 4  8", "4 8")
    assert not answer_has("in 17430", "1743")
    assert not answer_has("anything", "")


# ---- the engine honours should_stop -------------------------------------------------------------------
class IdTok:
    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))


def test_engine_stops_when_asked_and_pot_is_left_as_it_was():
    eng = Engine(make_model("llama"), IdTok(), PotConfig(size=128, keep=64, chunk=16, final_keep=0, reencode=False),
                 catalyst_ids=[20, 21, 22])
    eng.pin(list(range(3, 9)))
    eng.feed(list(range(40, 90)))
    eng.finish()
    n = len(eng.pot)
    seen = []
    out = eng.answer([30, 31, 32], "summary", max_new_tokens=10, stop_ids=set(),
                     should_stop=lambda g, t: seen.append((list(g), t)) or len(g) >= 3)
    assert len(seen) == 3 and [len(g) for g, _ in seen] == [1, 2, 3]
    assert seen[-1][1] == " ".join(map(str, seen[-1][0])) and out == seen[-1][1]
    assert len(eng.pot) == n
    assert len(eng.answer([30, 31, 32], "summary", max_new_tokens=10, stop_ids=set()).split()) == 10


# ---- the built-in model: the demo question ends -----------------------------------------------------
@pytest.mark.slow  # a real answer through the stopper also runs in test_cli (ask streams through it)
def test_builtin_demo_question_answers_and_ends(builtin):
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source

    P = Prompts(builtin.tokenizer)
    question = "What was the keeper's cat called?"
    cat, focus = P.catalyst("question", question)
    eng = Engine(builtin.model, builtin.tokenizer, PotConfig(size=1024, keep=512), catalyst_ids=cat,
                 catalyst_focus=focus)
    eng.pin(P.header_ids())
    src = open_source(os.path.join(SAMPLES, "lighthouse.txt"), "auto")
    read_source(eng, builtin.tokenizer, src, SourceRecord(path=src.path, format=src.format, size=src.size_bytes))
    prompt, pf = P.ask(question)
    stopper, gen = Stopper("question"), []
    raw = eng.answer(prompt, "question", max_new_tokens=64, stop_ids=P.stop_ids(), focus=pf,
                     should_stop=lambda g, t: gen.append(len(g)) or stopper.should_stop(g, t))
    answer = stopper.trim(raw)
    assert "biscuit" in answer.lower()
    assert len(gen) < 64                        # it ended on its own, well before the budget
    assert not stopper.loop_cut(raw)            # no loop
    assert answer.endswith(".") and answer.count(". ") == 0
