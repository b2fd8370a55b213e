"""The read's own passages (`ask DOC Q`): the question's attention while reading (the CaP-Q relevance record) names
passages of its own, and the model judges their sentences beside the words' where the words cannot decide; a
passage of the read joins the evidence only as the one judged to answer."""

import torch

from infinipot_cli.answer import answering, judge, retrieve
from infinipot_cli.pot.scoring.record import RelevanceRecord


def doc(texts, per=5):
    """(src, seg, texts) of units of `per` tokens each."""
    seg = torch.arange(len(texts)).repeat_interleave(per)
    return torch.arange(seg.numel()), seg, texts


class _Engine:
    """What passage grouping asks of an engine: no section labels."""
    provenance = []


def test_units_pool_the_record_by_its_mean_above_zero():
    rec = RelevanceRecord(question="q")
    rel = torch.zeros(1, 1, 6)
    rec.observe(torch.arange(6), torch.tensor([0.1, 0.3, -0.2, -0.2, 0.9, 0.0]), rel)
    src = torch.arange(8)
    seg = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])    # unit 3: tokens 6, 7, never scored
    u = rec.units(src, seg, 4, 8)
    assert u.shape == (4,) and u[3] == 0
    assert u[2] > u[0] > u[1] > 0                   # means 0.45, 0.2, -0.2, shifted above 0 in order
    assert RelevanceRecord().units(src, seg, 4, 8) is None  # nothing scored: no passages of the read


def test_grouped_passages_take_no_unit_of_the_words_passages():
    texts = [f"Sentence number {i} here. " for i in range(12)]
    d = doc(texts)
    scores = torch.zeros(12)
    scores[[3, 4, 9]] = torch.tensor([3.0, 2.0, 1.0])
    out = retrieve.grouped(_Engine(), d, scores, n=4, skip={2, 3, 4, 5})
    assert [f.top for f in out] == [9]               # 3 and 4 are the words' already; 0-score units never lead
    assert not set(out[0].units) & {2, 3, 4, 5}


PUMA = ["Puma is a simple, fast, multi-threaded web server for Ruby applications. ",
        "Workers are separate processes that each run their own thread pool. ",
        "Run it with the puma command. ",
        "Cluster mode is not supported on Windows, because the operating system lacks fork(2). "]


def test_a_passage_of_the_read_judged_to_answer_comes_first(builtin):
    """The words found only passages that do not answer; the read found the sentence naming fork(2). The model
    judges all of them, and the read's passage leads, with the scores that ranked it; the words' passages follow."""
    lm = builtin
    texts = PUMA
    words_best = retrieve.Found(0, 10, [0, 1], 1, 4.0)
    read_best = retrieve.Found(15, 20, [3], 3, 0.0, read=0.5)
    q = "What missing call rules out running many workers on Microsoft's OS?"
    out = judge.rejudge(lm.model, lm.tokenizer, q, [words_best], doc(texts), [read_best])
    assert [f.top for f in out] == [3, 1]
    assert out[0].read == 0.5 and out[0].judged > out[1].judged and out[0].score == 4.0


def test_a_passage_of_the_read_not_judged_best_is_left_out(builtin):
    lm = builtin
    texts = PUMA
    words_best = retrieve.Found(15, 20, [3], 3, 4.0)     # the words' passage answers: it stays, alone
    read_other = retrieve.Found(10, 15, [2], 2, 0.0, read=0.5)
    q = "What missing call rules out running many workers on Microsoft's OS?"
    assert judge.overlap(q, judge.sentence(texts, 3)) < judge.GATE
    out = judge.rejudge(lm.model, lm.tokenizer, q, [words_best], doc(texts), [read_other])
    assert [f.top for f in out] == [3]


def test_read_passages_rank_by_the_record_and_carry_the_words_score():
    texts = PUMA
    d = doc(texts)
    rec = RelevanceRecord(question="Why is there no cluster mode on Windows?")
    rec.observe(torch.arange(20), torch.tensor([0.0] * 15 + [1.0] * 5), torch.zeros(1, 1, 20))

    class Eng(_Engine):
        tokens_read = 20

    found = [retrieve.Found(0, 5, [0], 0, 1.0)]
    out = answering.read_passages(Eng(), rec, found, d, ())
    assert out[0].top == 3 and out[0].read > 0
    assert out[0].score == float(retrieve.rank(texts, rec.question)[3]) > 0   # "--json" scores.words: the words'
    assert all(0 not in f.units for f in out)
