"""`infinipot bench`: small runs of both commands, checking outputs exist and are well formed (not timed).

Uses the built-in model with tiny lengths; `--threads 1` keeps runs quick on a busy 2-core machine.
"""

import json

import pytest
from typer.testing import CliRunner

from infinipot_cli.evaluate.cli import bench_app
from infinipot_cli.errors import UsageError
from infinipot_cli.evaluate.haystack import (Placement, builtin_units, check_haystack, file_units, haystack_units,
                                            python_docs_units, token_pieces)
from infinipot_cli.evaluate.needles import KINDS, answer_has, make_needle
from infinipot_cli.evaluate.report import parse_lengths

PNG = b"\x89PNG\r\n\x1a\n"
TRIAL_FIELDS = {"method", "length", "depth", "trial", "answer", "correct", "timings", "peak_entries", "cycles",
                "kv_bytes", "needle", "expect", "question"}
TIMING_FIELDS = {"forward", "nuc", "cap", "select", "rerotate", "answer", "read_s", "answer_s"}


def _png_ok(path):
    data = path.read_bytes()
    return len(data) > 1000 and data.startswith(PNG)


def test_parse_lengths():
    assert parse_lengths("4k,16k,1m, 3000") == [4096, 16384, 1 << 20, 3000]


def test_builtin_haystack_is_varied_and_deterministic():
    a = [u for _, u in zip(range(400), builtin_units(3))]
    assert a == [u for _, u in zip(range(400), builtin_units(3))]
    assert a != [u for _, u in zip(range(400), builtin_units(4))]
    sentences = {u.strip() for u in a}
    assert len(sentences) > 300  # not the same sentence repeated
    assert sum("\n\n" in u for u in a) > 20  # paragraphs


def test_needle_kinds_vary_by_seed():
    for kind in KINDS:
        ns = {make_needle(kind, s).text for s in range(10)}
        assert len(ns) > 3
        n = make_needle(kind, 0)
        assert n.expect.lower() in n.text.lower() and n.check(f" {n.expect.upper()}.")


def test_token_pieces_exact_length_and_depth(builtin):
    tok = builtin.tokenizer
    needle = make_needle("passkey", 1)
    for depth in (0.0, 0.5, 1.0):
        pl = Placement()
        pieces = list(token_pieces(builtin_units(1), tok, 3000, depth, needle.text, piece=512, placement=pl))
        flat = [t for p in pieces for t in p]
        assert len(flat) == 3000 and all(len(p) <= 512 for p in pieces)
        assert needle.expect in tok.decode(flat[pl.needle_start:pl.needle_start + pl.needle_tokens])
        assert abs(pl.depth_actual - depth) < 0.05


def test_file_haystack_repeats(tmp_path, builtin):
    f = tmp_path / "hay.txt"
    f.write_text("A short text. It has two sentences.\n")
    flat = [t for p in token_pieces(file_units(f), builtin.tokenizer, 500) for t in p]
    assert len(flat) == 500
    assert builtin.tokenizer.decode(flat).count("two sentences") > 10


def test_file_haystack_starts_where_the_seed_says(tmp_path):
    f = tmp_path / "long.txt"
    f.write_text("".join(f"Line number {i} of the long text.\n" for i in range(5000)))
    first = {s: "".join(u for _, u in zip(range(3), file_units(f, s))) for s in ("a", "b", "c")}
    assert len(set(first.values())) == 3                       # three seeds, three different stretches
    assert all(v.lstrip().startswith("Line number") for v in first.values())  # at a line start, not mid-word
    assert "".join(u for _, u in zip(range(3), file_units(f, "a"))) == first["a"]  # deterministic
    assert "".join(u for _, u in zip(range(1), file_units(f))).startswith("Line number 0 ")  # no seed: the start
    # it wraps around: more units than the file holds, from anywhere
    assert sum(1 for _, u in zip(range(20000), file_units(f, "b")) if "Line number 0 " in u) >= 1


def test_named_haystacks():
    docs = "".join(u for _, u in zip(range(200), python_docs_units(0)))
    assert len(docs) > 5000 and "statement" in docs                 # real English prose about Python
    assert docs != "".join(u for _, u in zip(range(200), python_docs_units(1)))
    assert next(haystack_units(None, 0)) == next(builtin_units(0))
    assert next(haystack_units("python-docs", 0)) == next(python_docs_units(0))
    check_haystack("python-docs")
    check_haystack(None)
    with pytest.raises(UsageError):
        check_haystack("no/such/file.txt")


def test_bench_needle(tmp_path, builtin):
    out = tmp_path / "needle"
    r = CliRunner().invoke(bench_app, ["needle", "--lengths", "1k", "--depths", "0.5", "--trials", "1",
                                       "--methods", "infinipot,streaming", "--pot-size", "512", "--keep", "256",
                                       "--threads", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "Needle in a haystack" in r.stdout and "infinipot" in r.stdout and "streaming" in r.stdout
    doc = json.loads((out / "needle.json").read_text())
    assert doc["complete"] and doc["config"]["pot_size"] == 512
    assert [t["method"] for t in doc["trials"]] == ["infinipot", "streaming"]
    for t in doc["trials"]:
        assert TRIAL_FIELDS <= set(t), set(TRIAL_FIELDS) - set(t)
        assert TIMING_FIELDS <= set(t["timings"])
        assert t["length"] == 1024 and t["depth"] == 0.5
        assert isinstance(t["answer"], str) and isinstance(t["correct"], bool)
        assert t["correct"] == answer_has(t["answer"], t["expect"])
        assert 0 < t["peak_entries"] <= 512 and t["cycles"] >= 1 and t["kv_bytes"] > 0
    assert {(c["method"], c["n"]) for c in doc["summary"]} == {("infinipot", 1), ("streaming", 1)}
    for m in ("infinipot", "streaming"):
        assert _png_ok(out / f"needle-{m}.png")


def test_bench_needle_custom_needle_and_bad_options(tmp_path):
    r = CliRunner().invoke(bench_app, ["needle", "--needle", "The code word is heron.", "--question", "What?",
                                       "--out", str(tmp_path)])
    assert r.exit_code == 2 and "go together" in r.output
    r = CliRunner().invoke(bench_app, ["needle", "--methods", "nope", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "unknown method" in r.output
    r = CliRunner().invoke(bench_app, ["needle", "--pot-size", "512", "--keep", "512", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "--keep" in r.output


def test_bench_speed(tmp_path):
    out = tmp_path / "speed"
    r = CliRunner().invoke(bench_app, ["speed", "--lengths", "1k", "--methods", "infinipot,plain",
                                       "--pot-size", "512", "--keep", "256", "--gen-tokens", "4", "--threads", "1",
                                       "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "Read speed and memory" in r.stdout
    assert "1 threads" in r.stdout and "generation over 4 tokens" in r.stdout  # the header line
    doc = json.loads((out / "speed.json").read_text())
    assert doc["complete"]
    runs = {x["method"]: x for x in doc["runs"]}
    assert set(runs) == {"infinipot", "plain"}
    for m, x in runs.items():
        assert not x.get("error") and not x["skipped"], x
        assert x["length"] == 1024 and x["read_tok_s"] > 0
        for k in ("forward", "nuc", "cap", "select", "rerotate", "display", "read_s"):
            assert k in x["timings"]
        assert x["peak_rss_mb"] > 100 and x["kv_bytes"] > 0 and 0 < x["peak_entries"] <= 512
        assert x["kv_peak_bytes"] == x["peak_entries"] * x["kv_per_token"]
    assert runs["infinipot"]["cycles"] >= 1 and runs["infinipot"]["timings"]["nuc"] > 0
    # the display share is measured when infinipot_cli.display exists, else recorded as 0 with a note
    assert runs["infinipot"]["timings"]["display"] > 0 or "display" in runs["infinipot"]["note"]
    assert runs["plain"]["timings"]["nuc"] == 0 and runs["plain"]["cycles"] == 0
    assert _png_ok(out / "speed.png")


def test_speed_prefill_skips_past_positions():
    """Prefill past the model's positions is skipped (OOD) before any forward."""
    from types import SimpleNamespace

    from infinipot_cli.evaluate.speed import SpeedConfig, measure

    model = SimpleNamespace(config=SimpleNamespace(max_position_embeddings=8192))
    tok = SimpleNamespace(chat_template=None, bos_token_id=None,
                          encode=lambda s, add_special_tokens=False: [1] * len(s.split()))
    rec = measure(SimpleNamespace(model=model, tokenizer=tok), SpeedConfig(methods=["prefill"], lengths=[1 << 20]),
                  "prefill", 1 << 20)
    assert rec["skipped"].startswith("OOD")


def test_streaming_token_by_token(builtin):
    """streaming-tbt: one token per forward, one eviction per token once the pot is full (in-process, short)."""
    from infinipot_cli.evaluate.speed import SpeedConfig, measure

    cfg = SpeedConfig(methods=["streaming-tbt"], lengths=[200], pot_size=128, keep=64, gen_tokens=2)
    rec = measure(builtin, cfg, "streaming-tbt", 200)
    assert rec["length"] == 200 and rec["peak_entries"] <= 128
    assert rec["cycles"] >= 200 - 128  # after the pot fills, every token evicts one entry


def test_bench_speed_bad_model_fails_early(tmp_path):
    r = CliRunner().invoke(bench_app, ["speed", "--lengths", "1k", "--model", str(tmp_path / "nope"),
                                       "--out", str(tmp_path)])
    assert r.exit_code == 1 and "not found" in r.output
    assert not (tmp_path / "speed.json").exists()


def test_needle_table_and_heatmap_show_ood(tmp_path):
    from rich.console import Console

    from infinipot_cli.evaluate.needle import summarize
    from infinipot_cli.evaluate.plots import needle_heatmap
    from infinipot_cli.evaluate.report import needle_table

    trials = [{"method": "full", "length_target": 4096, "depth": 0.5, "skipped": None, "correct": True},
              {"method": "full", "length_target": 65536, "depth": 0.5, "skipped": "OOD: too long", "correct": None}]
    summary = summarize(trials)
    con = Console(record=True, width=120)
    con.print(needle_table(summary, [0.5]))
    text = con.export_text()
    assert "OOD" in text and "1/1" in text
    assert _png_ok(needle_heatmap(summary, "full", [4096, 65536], [0.5], tmp_path / "h.png"))
