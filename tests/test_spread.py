"""A general read keeps a spread of the document (spread.py) and the summary's key points come from every part
of it with their source (keypoints.py), on a tiny model; the pot stays bounded."""

import torch

from infinipot_cli.pot.config import PotConfig
from infinipot_cli.answer.keypoints import key_points, where_fields
from infinipot_cli.pot.scoring.policies.infinipot import InfiniPotPolicy
from infinipot_cli.pot.scoring.policy import SelectionInputs
from infinipot_cli.pot.config import SUMMARY_SPREAD
from infinipot_cli.pot.spread import bins_of, quotas, spread_select
from helpers import PROMPT, doc_ids, run_engine
from tiny_models import make_model


def test_quotas_share_equally_and_fill_the_budget():
    assert quotas([100, 3, 50, 0, 200], 120) == [39, 3, 39, 0, 39]
    assert quotas([10, 10], 100) == [10, 10]
    assert sum(quotas([7, 1, 30, 30], 40)) == 40


def test_spread_select_takes_every_stretch_even_when_scores_favour_the_end():
    n, budget = 400, 80
    src = torch.arange(n).view(1, 1, n)
    ramp = torch.linspace(0, 1, n).view(1, 1, n).expand(2, 2, n).contiguous()  # later = better, both scores
    inp = SelectionInputs(budget=budget, n=n, shape=(2, 2), nov=ramp, cap=ramp.clone(),
                          starts=(torch.arange(n) % 10 == 0).view(1, 1, n))
    pol = InfiniPotPolicy.from_config(PotConfig(segment=10))
    plain = pol.select(inp)[0, 0]
    assert int(plain.min()) >= n - 2 * budget  # without spread: only the end
    got = spread_select(pol, inp, src, n, 4)
    assert got.shape == (2, 2, budget) and bool((got[0, 0].diff() > 0).all())
    per_bin = torch.bincount(bins_of(got[0, 0], n, 4), minlength=4)
    assert per_bin.tolist() == [20, 20, 20, 20]
    assert pol.last_nuc.shape == (2, 2, n)


def spread_of(eng, bins=4):
    src = eng.pot.src[0, 0][eng.pot.src[0, 0] >= 0]
    return torch.bincount(bins_of(src, eng.tokens_read, bins), minlength=bins)


def test_a_general_read_keeps_every_quarter_of_the_document():
    model = make_model("llama")
    ids = doc_ids(1600)
    cfg = dict(size=192, keep=96, chunk=32)
    tail = run_engine(model, ids, PotConfig(spread=0, **cfg))
    spread = run_engine(model, ids, PotConfig(spread=8, **cfg))
    assert len(spread.pot) <= 192 and spread.pot.peak_entries <= 192
    assert spread.cycles == tail.cycles
    s = spread_of(spread)
    assert bool((s > 0).all()), s  # every quarter of the document is still in the pot
    assert int(s[:2].sum()) > int(spread_of(tail)[:2].sum())


def test_a_question_is_not_spread():
    model = make_model("llama")
    ids = doc_ids(900)
    a = run_engine(model, ids, PotConfig(size=192, keep=96, chunk=32, spread=8))
    a.set_catalyst(PROMPT, (0, 2))  # a question's catalyst from now on
    assert not a._spreads(a.catalyst_focus is None)


def test_where_fields():
    assert where_fields("p. 5") == {"page": 5}
    assert where_fields("p. iv · 1 Introduction") == {"page": "iv", "section": "1 Introduction"}
    assert where_fields("a.pdf · p. 3 · Usage") == {"source": "a.pdf", "page": 3, "section": "Usage"}
    assert where_fields("line 120") == {"line": 120}
    assert where_fields("Chapter 2. Users") == {"section": "Chapter 2. Users"}
    assert where_fields("§ Basic Logging") == {"section": "Basic Logging"}


def test_builtin_key_points_cover_the_sample_manual_with_pages(builtin):
    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.engine import Engine
    from infinipot_cli.pot.prompts import Prompts
    from infinipot_cli.pot.reader import SourceRecord, read_source

    P = Prompts(builtin.tokenizer)
    cat, focus = P.catalyst("general")
    eng = Engine(builtin.model, builtin.tokenizer, PotConfig(size=512, keep=256, spread=SUMMARY_SPREAD), catalyst_ids=cat,
                 catalyst_focus=focus)
    eng.pin(P.header_ids())
    src = open_source("sample_docs/manual.pdf")
    read_source(eng, builtin.tokenizer, src, SourceRecord(path=src.path, format=src.format))
    n = len(eng.pot)
    points = key_points(eng, P.summary_ids())
    assert len(eng.pot) == n  # the catalyst's entries were cropped
    assert len(points) >= 3
    assert all(p["text"] and "page" in p for p in points), points
    pages = [p["page"] for p in points]
    assert pages == sorted(pages) and len(set(pages)) >= 3  # in document order, from several pages


def test_a_key_point_does_not_repeat_its_sections_heading():
    from infinipot_cli.answer.keypoints import _drop_heading

    assert _drop_heading("Methods The team reached the island on the survey boat.", "Methods") == \
        "The team reached the island on the survey boat."
    assert _drop_heading("Methods are listed in the appendix of the report.", "Methods") == \
        "Methods are listed in the appendix of the report."
    assert _drop_heading("Anything at all here, long enough.", None) == "Anything at all here, long enough."
