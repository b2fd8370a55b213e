"""The read's own passage in the evidence (`ask DOC Q`): while the document streams through the pot with the question
as the catalyst, every distillation scores the question's attention over what the pot holds (the CaP-Q relevance
record); the unit it scored highest, outside the passages the words found first, is the last evidence passage shown,
with the score that ranked it. A question asked after the read has no record: its evidence is the words' alone."""

import torch

from infinipot_cli.answer import answering, evidence as ev, retrieve
from infinipot_cli.answer.grounding import Grounded
from infinipot_cli.pot.scoring.record import RelevanceRecord

PUMA = ["Puma is a simple, fast, multi-threaded web server for Ruby applications. ",
        "Workers are separate processes that each run their own thread pool. ",
        "Run it with the puma command. ",
        "Threads are cheap, and each worker has its own. ",
        "Phased restarts replace workers one at a time. ",
        "Cluster mode is not supported on Windows, because the operating system lacks fork(2). "]
PER = 5  # tokens a unit


def doc(texts, per=PER):
    """(src, seg, texts) of units of `per` tokens each."""
    seg = torch.arange(len(texts)).repeat_interleave(per)
    return torch.arange(seg.numel()), seg, texts


class _Engine:
    """What passage grouping asks of an engine: no section labels, every unit's tokens read."""
    provenance = []
    tokens_read = len(PUMA) * PER


def _record(question: str, hot: int) -> RelevanceRecord:
    """A record whose question attended most to unit `hot`."""
    rec = RelevanceRecord(question=question)
    n = len(PUMA) * PER
    score = torch.zeros(n)
    score[hot * PER:(hot + 1) * PER] = 1.0
    rec.observe(torch.arange(n), score, torch.zeros(1, 1, n))
    return rec


def test_units_pool_the_record_by_its_mean_above_zero():
    rec = RelevanceRecord(question="q")
    rec.observe(torch.arange(6), torch.tensor([0.1, 0.3, -0.2, -0.2, 0.9, 0.0]), torch.zeros(1, 1, 6))
    src = torch.arange(8)
    seg = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])    # unit 3: tokens 6, 7, never scored
    u = rec.units(src, seg, 4, 8)
    assert u.shape == (4,) and u[3] == 0
    assert u[2] > u[0] > u[1] > 0                   # means 0.45, 0.2, -0.2, shifted above 0 in order
    assert RelevanceRecord().units(src, seg, 4, 8) is None  # nothing scored: no passage of the read


def test_grouped_passages_take_no_unit_of_the_words_passages():
    texts = [f"Sentence number {i} here. " for i in range(12)]
    scores = torch.zeros(12)
    scores[[3, 4, 9]] = torch.tensor([3.0, 2.0, 1.0])
    out = retrieve.grouped(_Engine(), doc(texts), scores, n=4, skip={2, 3, 4, 5})
    assert [f.top for f in out] == [9]               # 3 and 4 are the words' already; 0-score units never lead
    assert not set(out[0].units) & {2, 3, 4, 5}


def _ranked(question: str) -> retrieve.Passages:
    """PUMA's units ranked by the question's words, as `retrieve.passages` leaves them for `with_read`."""
    d = doc(PUMA)
    heading = retrieve.headings(_Engine(), retrieve.firsts(d), PUMA)
    return retrieve.Passages([], d, heading, retrieve.rank(PUMA, question, heading))


def _words(*tops):
    return [retrieve.Found(t * PER, (t + 1) * PER, [t], t, 4.0 - i) for i, t in enumerate(tops)]


def test_the_read_takes_the_last_place_with_the_scores_that_ranked_it():
    q = "Why is there no cluster mode on Windows?"
    shown = _words(0, 1, 2, 3)
    out = answering.with_read(_Engine(), _record(q, 5), shown, _ranked(q), (), unit=0)
    assert [f.top for f in out] == [0, 1, 2, 5]      # the words' first three kept, in their order
    assert out[-1].read > 0                          # --json scores.read: the record that ranked it
    assert out[-1].score == float(retrieve.rank(PUMA, q)[5]) > 0  # scores.words: its own words' score


def test_fewer_passages_than_shown_gain_the_read_s_beside_them():
    q = "Why is there no cluster mode on Windows?"
    out = answering.with_read(_Engine(), _record(q, 5), _words(0, 1), _ranked(q), (), unit=None)
    assert [f.top for f in out] == [0, 1, 5]


def test_the_words_evidence_stands_where_the_read_cannot_add():
    q = "Why is there no cluster mode on Windows?"
    shown = _words(0, 1, 2, 3)
    # the answer's own unit is in the last passage: it is not replaced
    assert answering.with_read(_Engine(), _record(q, 5), shown, _ranked(q), (), unit=3) == shown
    # nothing scored (a document that never filled the pot)
    assert answering.with_read(_Engine(), RelevanceRecord(question=q), shown, _ranked(q), (), unit=0) == shown
    # the read's best unit is already shown: its next best is taken, none of the kept passages' units
    rec = _record(q, 1)
    out = answering.with_read(_Engine(), rec, shown, _ranked(q), (), unit=0)
    assert [f.top for f in out][:3] == [0, 1, 2] and out[-1].top in (3, 4, 5)


def test_a_passage_of_the_read_is_marked_on_stderr_and_in_json():
    p = ev.Passage(text="Cluster mode is not supported on Windows.", start=0, stop=9, score=1.5,
                   source="puma.md", where={"line": 40}, read=0.0123456)
    assert p.as_json()["scores"] == {"words": 1.5, "read": 0.012346}
    plain = ev.Passage(text="Run it with the puma command.", start=9, stop=12, score=2.0, source="puma.md",
                       where={"line": 3})
    lines = Grounded(answer="fork(2)", guess="", how="extracted", evidence=[plain, p]).lines()
    assert lines[-1].startswith("  [puma.md · line 40] (found while reading) ")
    assert "found while reading" not in lines[-2] and "read" not in plain.as_json()["scores"]


def test_ask_doc_q_shows_the_read_s_passage_and_answers_as_read_once(builtin, tmp_path):
    """The same question, read with it (CaP-Q: the record kept) and read first with the general catalyst: the
    evidence's last passage is the read's in the first only. `retrieve=words` (the honest baseline: the text
    alone) shows none of the read's. (The answers may differ: each read expected its own words while reading,
    scoring/expected.py.)"""
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.session import Catalyst, Session

    path = tmp_path / "lighthouse.txt"
    path.write_text(open("sample_docs/lighthouse.txt", encoding="utf-8").read()[:4000])  # ~1K tokens
    q = "Who looked after the light?"
    answers = []
    asked = Catalyst("question", q)
    for catalyst, ranking in ((asked, "auto"), (Catalyst(), "auto"), (asked, "words")):
        s = Session.start(builtin, PotConfig(size=512, keep=256, retrieve=ranking), catalyst)
        s.expect(q if catalyst.kind == "question" else None)
        s.read(open_source(str(path), "auto"))
        answers.append(s.ask(q, grounded=True, max_new_tokens=32))
    direct, once, words = answers
    assert all(p.read is None for p in words.grounded.evidence)  # retrieve=words: the text alone, no read's passage
    d_ev, o_ev = direct.grounded.evidence, once.grounded.evidence
    assert d_ev[-1].read is not None and d_ev[-1].text not in [p.text for p in o_ev]
    assert all(p.read is None for p in o_ev) and all(p.read is None for p in d_ev[:-1])
