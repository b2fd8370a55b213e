"""`bench needle --trace`: per-distillation needle diagnostics in needle.json, a retention plot, a stderr summary."""

import json

import pytest
from typer.testing import CliRunner

from infinipot_cli.evaluate.cli import bench_app
from infinipot_cli.evaluate.trace import CATEGORIES, is_punct_text

PNG = b"\x89PNG\r\n\x1a\n"
RECORD_FIELDS = {"cycle", "tokens_read", "final", "needle_read", "entries", "layers", "heads", "needle", "kept",
                 "novelty", "nuc_bar"}
NEEDLE_FIELDS = {"layers", "mean", "heads_any", "covered", "per_token", "by_nuc", "by_cap", "novelty"}
LAYER_FIELDS = {"heads_any", "mean", "min", "max", "covered", "nuc_mean"}


def test_is_punct_text():
    assert is_punct_text(",") and is_punct_text(" .") and is_punct_text("\n\n") and is_punct_text(" ")
    assert not is_punct_text(" the") and not is_punct_text("4") and not is_punct_text("") \
        and not is_punct_text("\ufffd")


@pytest.mark.bench
def test_bench_needle_trace(tmp_path, builtin):
    out = tmp_path / "needle"
    r = CliRunner().invoke(bench_app, ["needle", "--lengths", "1k", "--depths", "0.5", "--trials", "1",
                                       "--methods", "infinipot-paper,streaming,infinipot", "--pot-size", "256", "--keep", "128", "--trace",
                                       # a 100-token answer budget does not fit beside the pot: a final distillation
                                       "--max-new-tokens", "100", "--threads", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "needle.json").read_text())
    assert doc["config"]["trace"] is True
    t, s, product = doc["trials"]
    assert (t["method"], s["method"], product["method"]) == ("infinipot-paper", "streaming", "infinipot")
    trace = t["trace"]
    assert isinstance(trace, list) and len(trace) >= 3
    cycles = [c["cycle"] for c in trace]
    assert cycles == sorted(set(cycles)) and cycles[0] >= 1  # strictly increasing
    reads = [c["tokens_read"] for c in trace]
    assert reads == sorted(reads) and reads[-1] == t["length"]
    # answered from the pot (the paper's configuration): the final distillation (the question as catalyst) is
    # recorded last, and only it is final
    assert trace[-1]["final"] and not any(c["final"] for c in trace[:-1])
    assert trace[-1]["cycle"] == t["cycles"] + 1  # t["cycles"]: the reading's; the answer's own comes after
    assert not trace[0]["needle_read"] and trace[-1]["needle_read"]
    n = t["needle_tokens"]
    for c in trace:
        assert RECORD_FIELDS <= set(c), RECORD_FIELDS - set(c)
        nd = c["needle"]
        assert NEEDLE_FIELDS <= set(nd) and LAYER_FIELDS <= set(nd["layers"])
        L, H = c["layers"], c["heads"]
        lay = nd["layers"]
        assert all(len(lay[k]) == L for k in LAYER_FIELDS)
        assert all(0 <= h <= H for h in lay["heads_any"])
        assert all(0 <= lo <= m <= hi <= n for lo, m, hi in zip(lay["min"], lay["mean"], lay["max"]))
        for share in [nd["heads_any"], nd["covered"], *lay["covered"], *c["kept"].values()]:
            assert 0.0 <= share <= 1.0
        assert set(c["kept"]) == set(CATEGORIES) and abs(sum(c["kept"].values()) - 1.0) < 1e-3
        assert c["kept"]["pinned"] > 0
        assert len(nd["per_token"]) == n and all(0 <= k <= L * H for k in nd["per_token"])
        # every needle entry was kept either by NuC or by CaP
        assert nd["by_nuc"] + nd["by_cap"] == round(nd["mean"] * L * H)
        if not c["needle_read"] and nd["mean"] == 0:
            assert nd["covered"] == 0
    assert any(c["needle"]["mean"] > 0 for c in trace if c["needle_read"])
    assert len(t["needle_pieces"]) == n and t["expect"] in "".join(t["needle_pieces"])
    png = out / f"trace-infinipot-paper-1k-0.5-{t['trial'] + 1}.png"
    assert t["trace_png"] == png.name
    data = png.read_bytes()
    assert len(data) > 1000 and data.startswith(PNG)
    assert "trace infinipot-paper 1k depth 0.5 trial 1" in r.stderr and "kept set:" in r.stderr and "NuC" in r.stderr
    # a policy without NuC: traced too, with no NuC/CaP split
    assert s["trace"] and all(c["needle"]["by_nuc"] is None and c["needle"]["layers"]["nuc_mean"] is None
                              for c in s["trace"])
    assert (out / s["trace_png"]).read_bytes().startswith(PNG)
    assert "trace streaming 1k depth 0.5 trial 1" in r.stderr and "no NuC/CaP split" in r.stderr
    # the product answers from the question's passages of the whole document (answering.py): its pot is traced
    # while reading and no final distillation follows
    reads = [c["tokens_read"] for c in product["trace"]]
    assert reads == sorted(reads) and reads[-1] <= product["length"]
    assert not any(c["final"] for c in product["trace"]) and product["correct"]
