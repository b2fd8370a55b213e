"""bench ruler: RULER's task generators and metrics (no model), the record's causes, the tables and the plot."""

import re
import uuid

import pytest

from infinipot_cli.errors import UsageError
from infinipot_cli.evaluate import ruler_tasks as rt
from infinipot_cli.evaluate.ruler import averages, cause, encode_document, markdown, summarize


def count(text: str) -> int:  # a stand-in tokenizer: one token per word-ish piece
    return len(re.findall(r"\w+|[^\w\s]", text))


def frame(question: str, prefix: str) -> int:
    return 40 + count(question) + count(prefix)


@pytest.mark.parametrize("task", list(rt.TASKS))
def test_every_task_is_deterministic_fits_its_length_and_holds_its_answer(task):
    a = rt.generate(task, 4096, seed=3, index=1, count=count, frame=frame)
    b = rt.generate(task, 4096, seed=3, index=1, count=count, frame=frame)
    c = rt.generate(task, 4096, seed=4, index=1, count=count, frame=frame)
    assert (a.document, a.question, a.answer_prefix, a.outputs) == (b.document, b.question, b.answer_prefix, b.outputs)
    assert a.document != c.document
    total = count(a.document) + frame(a.question, a.answer_prefix) + a.max_new_tokens
    assert total <= 4096
    assert total > 4096 * 0.7  # sized to the length, not far under it
    assert a.outputs and all(o in a.document for o in a.outputs)
    for needle in a.needles:
        assert needle in a.document


def test_niah_needles_keys_values_and_the_singular_question():
    s = rt.generate("niah_single_3", 4096, seed=0, index=0, count=count, frame=frame)
    assert s.document.startswith("A special magic uuid is hidden within the following text.")
    key = re.search(r"for (\S+) mentioned", s.question).group(1)
    assert re.fullmatch(r"[a-z]+(?:[ '-][a-z]+)*-[a-z]+(?:[ '-][a-z]+)*", key)
    assert s.question == f"What is the special magic uuid for {key} mentioned in the provided text?"
    assert s.answer_prefix == f"The special magic uuid for {key} mentioned in the provided text is"
    value = s.outputs[0]
    assert uuid.UUID(value).version == 4
    assert f"One of the special magic uuids for {key} is: {value}." in s.document

    mv = rt.generate("niah_multivalue", 4096, seed=0, index=0, count=count, frame=frame)
    assert mv.question.startswith("What are all the special magic numbers for ")
    assert len(mv.outputs) == 4 and all(re.fullmatch(r"\d{7}", v) for v in mv.outputs)
    mq = rt.generate("niah_multiquery", 4096, seed=0, index=0, count=count, frame=frame)
    assert len(mq.outputs) == 4 and ", and " in mq.question

    mk2 = rt.generate("niah_multikey_2", 4096, seed=0, index=0, count=count, frame=frame)
    lines = mk2.document.split("\n")[1:]
    assert len(lines) > 100 and all(ln.startswith("One of the special magic numbers for ") for ln in lines)
    mk3 = rt.generate("niah_multikey_3", 4096, seed=0, index=0, count=count, frame=frame)
    assert uuid.UUID(re.search(r"for (\S+) mentioned", mk3.question).group(1)).version == 4

    noise = rt.generate("niah_single_1", 4096, seed=0, index=0, count=count, frame=frame)
    assert noise.document.count(rt.NOISE) == noise.units


def test_needle_depths_are_rulers_and_spread_over_samples():
    assert rt.DEPTHS[:4] == [0, 3, 5, 8] and rt.DEPTHS[-1] == 100 and len(rt.DEPTHS) == 40
    where = []
    for i in range(6):
        s = rt.generate("niah_single_2", 4096, seed=0, index=i, count=count, frame=frame)
        where.append(s.document.find(s.needles[0]) / len(s.document))
    assert max(where) - min(where) > 0.3


def test_variable_chain_and_its_worked_example():
    s = rt.generate("vt", 4096, seed=1, index=0, count=count, frame=frame)
    value = re.search(r"value (\d+)", s.question).group(1)
    names = s.outputs
    assert len(names) == 5 and all(re.fullmatch(r"[A-Z]{5}", n) for n in names)
    assert f"VAR {names[0]} = {value}" in s.document
    for a, b in zip(names, names[1:]):
        assert f"VAR {b} = VAR {a}" in s.document
    example, task = s.document.split("\n" + rt.VT_INTRO, 1)
    assert example.startswith(rt.VT_INTRO) and "Question: Find all variables" in example
    assert count(example) <= 520 and "12345" not in example
    assert s.answer_prefix == ("According to the chain(s) of variable assignment in the text above, 5 variables "
                               f"are assigned the value {value}, they are:")


def test_common_and_frequent_words_counts():
    s = rt.generate("cwe", 4096, seed=0, index=0, count=count, frame=frame)
    listed = re.findall(r"\d+\. (\S+)", s.document.split("\n" + rt.CWE_INTRO, 1)[1])
    freq = {w: listed.count(w) for w in set(listed)}
    assert all(freq[w] == 30 for w in s.outputs) and len(s.outputs) == 10
    assert all(n == 3 for w, n in freq.items() if w not in s.outputs)
    f = rt.generate("fwe", 4096, seed=0, index=0, count=count, frame=frame)
    words = f.document[len(rt.FWE_INTRO):].split()
    top = sorted(set(words), key=words.count, reverse=True)
    assert top[0] == "..." and top[1:4] == f.outputs


def test_metrics_are_rulers():
    assert rt.string_match_all("The numbers are 123 and 456.", ["123", "456", "789"]) == pytest.approx(2 / 3)
    assert rt.string_match_all("ABC def", ["abc", "DEF"]) == 1.0  # case-insensitive
    assert rt.string_match_part("only 456", ["123", "456"]) == 1.0
    assert rt.string_match_part("none", ["123", "456"]) == 0.0
    assert rt.score("string_match_all", "  a\x01b ", ["a\nb"]) == 1.0  # control characters become line breaks
    assert abs(rt.zeta(2.0) - 3.141592653589793 ** 2 / 6) < 1e-9


def test_tasks_parse_and_the_qa_tasks_are_named_as_left_out():
    assert rt.parse_tasks("all") == list(rt.TASKS)
    assert rt.parse_tasks("niah_multi") == ["niah_multikey_1", "niah_multikey_2", "niah_multikey_3",
                                            "niah_multivalue", "niah_multiquery"]
    with pytest.raises(UsageError, match="SQuAD"):
        rt.parse_tasks("qa_1")


def test_sentences_split_like_a_sentence_tokenizer():
    assert rt.sentences('He said "go." Then 3 left. e.g. this stays') == ['He said "go."', "Then 3 left. e.g. this stays"]


def test_spans_of_values_in_tokens(builtin_tok):
    s = rt.generate("niah_multivalue", 4096, seed=0, index=0)
    ids, spans = encode_document(builtin_tok, s)
    values = [sp for sp in spans if sp["kind"] == "value"]
    assert {sp["text"] for sp in values} == set(s.outputs)
    for sp in values:
        assert sp["text"] in builtin_tok.decode(ids[sp["start"]:sp["stop"]])


def test_causes_tables_and_plot(tmp_path):
    assert cause("123", "It is 123.", "It is 123.", 1.0, False) == "ok"
    assert cause("123", "The document does not seem to say.", "It is 123.", 1.0, False) == "withheld"
    assert cause("123", "x", "x", 1.0, True) == "cut short"
    assert cause("123", "x", "x", 1.0, False) == "not answered"
    assert cause("123", "x", "x", 0.5, False) == "partial"
    assert cause("123", "x", "x", 0.0, False) == "not seen"
    recs = [{"task": t, "length_target": 4096, "method": "infinipot", "flow": "direct", "score": sc, "skipped": None,
             "causes": {"v": "ok"}} for t, sc in (("vt", 1.0), ("cwe", 0.5))]
    recs.append({"task": "vt", "length_target": 8192, "method": "full", "flow": "direct", "score": None,
                 "skipped": "OOD: too long"})
    summ = summarize(recs)
    assert averages(summ)[("infinipot", 4096)] == 75.0
    assert averages(summ)[("full", 8192)] is None
    md = markdown(summ, recs, ["vt", "cwe"], [4096, 8192])
    assert "| 4k | 100.0 | 50.0 | 75.0 |" in md and "OOD" in md
    from infinipot_cli.evaluate.plots import ruler_plot

    assert ruler_plot(averages(summ), tmp_path / "r.png").stat().st_size > 1000
