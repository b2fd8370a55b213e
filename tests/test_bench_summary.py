"""`bench summary`: its measures on known texts, the corpus loader, the head/tail cuts and bad input."""

import json

from typer.testing import CliRunner

from infinipot_cli.app import app
from infinipot_cli.evaluate.summary import _cut, load_corpus, markdown_table
from infinipot_cli.evaluate.summary_metrics import coverage, degeneration, measure, unsupported

DOC = ("Chapter 1. Parsing. The asn1_parser2tree function reads a definitions file.\n\n"
       "Chapter 2. Licence. The GNU Free Documentation License (FDL), version 1.3, of 2008.")
PARTS = [{"title": "1 Parsing", "terms": ["asn1_parser2tree", "definitions"]},
         {"title": "2 Licence", "terms": ["FDL", "Documentation"]},
         {"title": "Index", "terms": []}]


def test_coverage_counts_parts_with_a_distinctive_term():
    c = coverage("It explains the FDL, the FDL and the FDL.", PARTS)
    assert (c["covered"], c["parts"], c["share"]) == (1, 2, 0.5)  # the index has no terms: not counted
    assert c["per_part"][1]["hits"] == ["FDL"]
    assert coverage("asn1_parser2tree reads Definitions; see the fdl.", PARTS)["covered"] == 2
    assert coverage("undefined terms", PARTS)["covered"] == 0  # whole words only


def test_degeneration():
    d = degeneration("It covers the FDL, the FDL, and the FDL, the FDL.")
    assert d["max_3gram"] == 2 and d["worst_3gram"] == "the fdl the" and d["distinct_2"] < 0.8
    assert degeneration("One two three four.") == {"max_3gram": 1, "worst_3gram": "", "distinct_2": 1.0}


def test_unsupported_numbers_and_names():
    u = unsupported("The FDL version 1.3 of 2008 and version 2.0 by the X Desktop Group (XG).", DOC)
    assert u["numbers"] == ["2.0"]
    assert u["names"] == ["Desktop", "Group", "X", "XG"]
    assert unsupported("The Parsing chapter.", DOC)["count"] == 0
    m = measure("The FDL.", DOC, PARTS)
    assert m["words"] == 2 and m["unsupported"]["count"] == 0


def test_cut_keeps_provenance():
    pieces = [([1, 2, 3], "page 1"), ([4, 5], "page 2"), ([6, 7, 8], "page 3")]
    assert _cut(pieces, 4, tail=False) == [([1, 2, 3], "page 1"), ([4], "page 2")]
    assert _cut(pieces, 4, tail=True) == [([5], "page 2"), ([6, 7, 8], "page 3")]


def test_corpus_loader_and_table(tmp_path):
    (tmp_path / "d.txt").write_text(DOC)
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"id": "d", "path": "d.txt", "kind": "text", "parts": PARTS}]))
    docs = load_corpus(corpus, ["d"])
    assert docs[0]["path"] == str(tmp_path / "d.txt")
    row = {"doc": "d", "kind": "text", "tokens": 40, "method": "head", "read_s": 1.0, "summary_s": 2.0, "ratio": 2.0,
           **measure("The FDL.", DOC, PARTS)}
    table = markdown_table([row, {"doc": "d", "kind": "text", "tokens": 40, "method": "whole", "skipped": "long"}])
    assert "| d | text | 40 | head | 1/2 | – | – | 0 | 1.0 | 0 | 2 | 1.0 | 2.0 | 2.0 |" in table
    assert "– (long)" in table


def test_bad_corpus_is_a_usage_error(tmp_path):
    bad = tmp_path / "c.json"
    bad.write_text("{not json")
    r = CliRunner().invoke(app, ["bench", "summary", "--corpus", str(bad)])
    assert r.exit_code == 2 and "cannot read" in r.output
    bad.write_text(json.dumps([{"id": "a", "path": "a.txt", "parts": []}]))
    r = CliRunner().invoke(app, ["bench", "summary", "--corpus", str(bad), "--docs", "zz"])
    assert r.exit_code == 2 and "not in the corpus" in r.output
    r = CliRunner().invoke(app, ["bench", "summary", "--corpus", str(bad), "--methods", "nope"])
    assert r.exit_code == 2


# ---- the bench summarizes as `infinipot summarize` does -------------------------------------------------------

def _lm(tok, name):
    import torch

    from infinipot_cli.runtime.loading import LoadedModel
    from tiny_models import make_model_for

    return LoadedModel(model=make_model_for(tok), tokenizer=tok, name=name, path="", device=torch.device("cpu"),
                       dtype=torch.float32, attn_implementation="sdpa", load_s=0.0)


def _document(tmp_path):
    import random

    rnd = random.Random(5)
    words = ("parser tree module reads writes file option value error table index list entry name record key "
             "field cache pot token model answer summary section chapter").split()
    paras = [f"Chapter {i + 1}. " + " ".join(" ".join(rnd.choice(words) for _ in range(12)).capitalize() + "."
                                            for _ in range(6)) for i in range(8)]
    path = tmp_path / "doc.txt"
    path.write_text("\n\n".join(paras))
    return path


def test_the_bench_row_is_what_summarize_prints(builtin_tok, tmp_path, monkeypatch):
    import io

    from infinipot_cli import session as session_mod
    from infinipot_cli.pot.config import SUMMARY_SPREAD, PotConfig
    from infinipot_cli.cli.display import Display
    from infinipot_cli.evaluate.summary import SummaryBenchConfig, document_pieces, run_one
    from infinipot_cli.runtime.loading import BUILTIN_NAME
    from infinipot_cli.pot.prompts import Prompts

    from infinipot_cli.answer import summary as summary_mod

    wrote = []  # the overview setting of each summary written
    real = summary_mod.write_summary
    monkeypatch.setattr(summary_mod, "write_summary", lambda *a, **kw: wrote.append(kw["overview"]) or real(*a, **kw))
    path = _document(tmp_path)
    doc = {"id": "doc", "path": str(path), "kind": "text", "parts": PARTS}
    cfg = SummaryBenchConfig(methods=["infinipot", "head"], pot_size=384, keep=192, chunk=96, max_new_tokens=24)
    for name in (BUILTIN_NAME, "tiny"):  # the built-in model: no overview by default (Session.summarize); others: one
        lm = _lm(builtin_tok, name)
        pieces, text = document_pieces(builtin_tok, str(path))
        row = run_one(lm, Prompts(builtin_tok), doc, pieces, text, "infinipot", cfg)
        monkeypatch.setattr(session_mod, "_load_model", lambda job, display, checked: lm)
        job = session_mod.Job(kind="summarize", sources=[str(path)], cache=False, max_new_tokens=cfg.max_new_tokens,
                              pot=PotConfig(method="infinipot", size=384, keep=192, chunk=96, spread=SUMMARY_SPREAD))
        shipped = session_mod.run(job, Display(mode="quiet", stream=io.StringIO())).answer
        assert row["summary"] == shipped.text and row["key_points"] == shipped.summary.key_points
        assert row["key_points"] and all(p["source"] == str(path) for p in row["key_points"])
        assert wrote[-2:] == [name != BUILTIN_NAME] * 2  # the bench's and summarize's: Session.summarize's default
        if name == BUILTIN_NAME:
            assert row["overview"] == "" and "overview_only" not in row  # no overview to measure
    head = run_one(lm, Prompts(builtin_tok), doc, pieces, text, "head", cfg)  # a cut of the pieces, read as tokens
    assert head["read_tokens"] < row["read_tokens"] and "coverage" in head
    assert all(p["source"] == str(path) for p in head["key_points"] or [])
