"""`infinipot bench`: small runs of both commands, checking outputs exist and are well formed (not timed).

Uses the built-in model with tiny lengths; `--threads 1` keeps runs quick on a busy 2-core machine.
"""

import json
import sys
from pathlib import Path

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


def run_small_needle(out, *args: str):
    """`bench needle` on one 1K cell with a 512/256 pot and one thread, plus `args`: (CLI result, needle.json)."""
    r = CliRunner().invoke(bench_app, ["needle", "--lengths", "1k", "--pot-size", "512", "--keep", "256",
                                       "--threads", "1", "--out", str(out), *args])
    assert r.exit_code == 0, r.output
    return r, json.loads((out / "needle.json").read_text())


@pytest.mark.bench  # the needle bench end to end on the built-in model; its parts: the tests below
def test_bench_needle(tmp_path, builtin):
    out = tmp_path / "needle"
    r, doc = run_small_needle(out, "--depths", "0.5", "--trials", "1", "--methods", "infinipot,streaming")
    assert "Needle in a haystack" in r.stdout and "infinipot" in r.stdout and "streaming" in r.stdout
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


def test_bench_takes_the_pot_knobs_of_the_reading_commands():
    """The bench's pot options are config.py's knobs: the same flags, defaults and meaning as `infinipot ask`
    (--keep defaults to half the pot), passed on to the speed worker only when given."""
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.evaluate.needle import NeedleConfig
    from infinipot_cli.evaluate.speed import SpeedConfig, worker_command

    cfg = SpeedConfig(methods=["infinipot"], lengths=[1000], pot={"size": 512})
    assert (cfg.describe()["pot_size"], cfg.describe()["keep"]) == (512, 256)
    assert cfg.pot_config("infinipot") == PotConfig.resolve("infinipot", {"size": 512})
    assert cfg.pot_config("streaming-tbt").keep == 511 and cfg.pot_config("plain").method == "plain"
    cmd = worker_command(cfg, "infinipot", 1000)
    assert cmd[cmd.index("--pot-size") + 1] == "512" and "--keep" not in cmd and "--chunk" not in cmd
    assert NeedleConfig(["infinipot+final_keep=128"], [1000], [0.5]).pot_config("infinipot+final_keep=128") == \
        PotConfig.resolve("infinipot+final_keep=128")
    r = CliRunner().invoke(bench_app, ["speed", "--help"])
    assert all(flag in r.output for flag in ("--pot-size", "--keep", "--nuc-ratio", "--chunk", "--final-keep"))


def _weights_mib(dtype: str) -> float:
    """The built-in model's weights in `dtype`, in MiB (from the converted file's header: nothing loaded)."""
    import math

    import torch
    from safetensors import safe_open

    from infinipot_cli.runtime.loading import builtin_model_path

    with safe_open(str(Path(builtin_model_path()) / "model.safetensors"), "pt") as f:
        n = sum(math.prod(f.get_slice(k).get_shape()) for k in f.keys())
    return n * torch.empty(0, dtype=getattr(torch, dtype)).element_size() / 2**20


@pytest.mark.bench
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
        # memory: the pot holds at most M entries; the process holds at least the model's weights (MiB)
        assert 0 < x["peak_entries"] <= 512 and 0 < x["kv_bytes"] <= 512 * x["kv_per_token"]
        weights = _weights_mib(x["dtype"])
        assert weights <= x["load_rss_mb"] <= x["peak_rss_mb"]
        if sys.platform.startswith("linux"):  # the read's own peak: the model is resident, the load's peak is not
            assert weights <= x["read_rss_mb"] <= x["peak_rss_mb"]
        assert x["kv_peak_bytes"] == x["peak_entries"] * x["kv_per_token"]
    assert runs["infinipot"]["cycles"] >= 1 and runs["infinipot"]["timings"]["nuc"] > 0
    # the display share is measured when infinipot_cli.cli.display exists, else recorded as 0 with a note
    assert runs["infinipot"]["timings"]["display"] > 0 or "display" in runs["infinipot"]["note"]
    # plain: the engine's own schedule, cropping where it would distill, with no NuC and no scoring
    assert runs["plain"]["timings"]["nuc"] == 0 and runs["plain"]["timings"]["cap"] == 0
    assert runs["plain"]["cycles"] >= 1
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


@pytest.mark.bench
def test_streaming_token_by_token(builtin):
    """streaming-tbt: one token per forward, one eviction per token once the pot is full (in-process, short)."""
    from infinipot_cli.evaluate.speed import SpeedConfig, measure

    cfg = SpeedConfig(methods=["streaming-tbt"], lengths=[200], pot={"size": 128, "keep": 64}, gen_tokens=2)
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


# ---- bench speed on accelerators, presets, synthetic models ------------------------------------------

cuda = pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def tiny_synthetic():
    from infinipot_cli.evaluate.synthetic import load_synthetic

    return load_synthetic("tiny-llama", "cpu", "float32")


def test_speed_methods_accept_presets():
    """`bench speed --methods infinipot-paper` is a method like any other (a preset of infinipot)."""
    from infinipot_cli.evaluate.report import parse_methods
    from infinipot_cli.evaluate.speed import SPEED_METHODS

    assert parse_methods("infinipot-paper,plain,infinipot+segment=8", SPEED_METHODS) == [
        "infinipot-paper", "plain", "infinipot+segment=8"]
    with pytest.raises(UsageError):
        parse_methods("infinipot-nope", SPEED_METHODS)


def test_speed_preset_measures_on_a_synthetic_model(tiny_synthetic):
    """A preset runs through `measure` (in-process, tiny synthetic model): it distils, and no GPU figure on the CPU."""
    from infinipot_cli.evaluate.speed import SpeedConfig, measure

    cfg = SpeedConfig(methods=["infinipot-paper"], lengths=[600], pot={"size": 256, "keep": 128, "chunk": 128}, gen_tokens=2)
    rec = measure(tiny_synthetic, cfg, "infinipot-paper", 600)
    assert not rec["skipped"] and rec["length"] == 600 and rec["cycles"] >= 2
    assert rec["peak_entries"] <= 256 and rec["gpu_peak_mb"] is None


def test_synthetic_configs_are_the_real_architectures():
    """The 7-9B entries carry the published shapes; their parameter counts (on the meta device) match."""
    from infinipot_cli.evaluate.synthetic import build_config, param_count

    c = build_config("llama-8b")
    assert (c.model_type, c.hidden_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads,
            c.intermediate_size, c.vocab_size, c.max_position_embeddings) == (
        "llama", 4096, 32, 32, 8, 14336, 128256, 131072)
    rp = c.rope_parameters
    assert (rp["rope_type"], rp["rope_theta"], rp["factor"], rp["low_freq_factor"], rp["high_freq_factor"],
            rp["original_max_position_embeddings"]) == ("llama3", 500000.0, 8.0, 1.0, 4.0, 8192)
    q = build_config("qwen2-7b")
    assert (q.model_type, q.hidden_size, q.num_hidden_layers, q.num_attention_heads, q.num_key_value_heads,
            q.intermediate_size, q.vocab_size, q.rope_parameters["rope_theta"]) == (
        "qwen2", 3584, 28, 28, 4, 18944, 152064, 1e6)
    g = build_config("gemma2-9b")
    assert (g.model_type, g.hidden_size, g.num_hidden_layers, g.num_attention_heads, g.num_key_value_heads, g.head_dim,
            g.intermediate_size, g.vocab_size, g.sliding_window, g.attn_logit_softcapping,
            g.final_logit_softcapping) == ("gemma2", 3584, 42, 16, 8, 256, 14336, 256000, 4096, 50.0, 30.0)
    assert abs(param_count("llama-8b") / 8.03e9 - 1) < 0.01
    assert abs(param_count("qwen2-7b") / 7.62e9 - 1) < 0.01
    assert abs(param_count("gemma2-9b") / 9.24e9 - 1) < 0.01


def test_synthetic_model_is_built_in_the_target_dtype():
    """Weights are created in the asked dtype on the asked device (no fp32 copy first); the rotary table stays
    fp32; the built-in tokenizer's ids fit the vocab and a forward runs."""
    import torch

    from infinipot_cli.evaluate.synthetic import load_synthetic

    lm = load_synthetic("tiny-llama", "cpu", "bfloat16")
    assert {p.dtype for p in lm.model.parameters()} == {torch.bfloat16}
    assert all(p.device.type == "cpu" for p in lm.model.parameters())
    assert lm.model.model.rotary_emb.inv_freq.dtype == torch.float32
    assert len(lm.tokenizer) <= lm.model.config.vocab_size and lm.name == "synthetic:tiny-llama"
    ids = lm.tokenizer.encode("The lighthouse keeper read all night.", add_special_tokens=False)
    out = lm.model(input_ids=torch.tensor([ids]))
    assert out.logits.shape == (1, len(ids), lm.model.config.vocab_size) and torch.isfinite(out.logits.float()).all()


def test_bench_speed_synthetic_flags(tmp_path):
    r = CliRunner().invoke(bench_app, ["speed", "--synthetic", "llama-80b", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "unknown configuration 'llama-80b'" in r.output and "Traceback" not in r.output
    r = CliRunner().invoke(bench_app, ["speed", "--synthetic", "tiny-llama", "--model", "x", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "not both" in r.output
    assert not (tmp_path / "speed.json").exists()


def test_prefill_estimate_on_the_cpu_counts_the_attention_map(tiny_synthetic):
    from infinipot_cli.evaluate.speed import prefill_fits

    assert prefill_fits(tiny_synthetic.model, 2048) is None
    assert prefill_fits(tiny_synthetic.model, 1 << 24).startswith("OOM")  # 2^48 map entries x 4 heads


def test_device_helpers_are_no_ops_on_the_cpu():
    from infinipot_cli.runtime.devices import free_bytes, peak_mb, reset_peak, sync

    for dev in ("cpu", None):
        sync(dev)
        reset_peak(dev)
        assert peak_mb(dev) is None and free_bytes(dev) is None


@cuda
def test_cuda_speed_records_gpu_peak_and_prefill_runs():
    """On CUDA: GPU peak memory next to RSS, and prefill of 128K tokens is estimated without the n^2 map."""
    from infinipot_cli.evaluate.speed import SpeedConfig, measure, prefill_fits
    from infinipot_cli.evaluate.synthetic import load_synthetic

    lm = load_synthetic("tiny-llama", "cuda", "bfloat16")
    assert prefill_fits(lm.model, 128 * 1024) is None
    cfg = SpeedConfig(methods=["infinipot"], lengths=[600], pot={"size": 256, "keep": 128, "chunk": 128}, gen_tokens=2)
    rec = measure(lm, cfg, "infinipot", 600)
    assert rec["gpu_peak_mb"] > 0 and rec["cycles"] >= 2
    assert rec["timings"]["read_s"] >= rec["timings"]["forward"] > 0


@cuda
def test_cuda_load_model_goes_straight_to_the_device():
    from infinipot_cli.runtime.loading import load_model

    lm = load_model(None, "cuda", "bfloat16")
    assert all(p.device.type == "cuda" for p in lm.model.parameters())


def test_bench_needle_synthetic(tmp_path):
    """`bench needle --synthetic tiny-llama` runs the loop end to end (random weights: the answer is not judged)."""
    out = tmp_path / "needle"
    r = CliRunner().invoke(bench_app, ["needle", "--synthetic", "tiny-llama", "--lengths", "600", "--depths", "0.5",
                                       "--pot-size", "256", "--keep", "128", "--chunk", "128", "--max-new-tokens", "4",
                                       "--threads", "1", "--out", str(out)])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "needle.json").read_text())
    assert doc["model"] == "synthetic:tiny-llama" and len(doc["trials"]) == 1 and doc["trials"][0]["cycles"] >= 2
    r = CliRunner().invoke(bench_app, ["needle", "--synthetic", "nope", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown configuration" in r.output


def test_speed_table_shows_gpu_peak_only_for_gpu_runs():
    from rich.console import Console

    from infinipot_cli.evaluate.report import speed_header, speed_table

    run = {"method": "infinipot", "length_target": 1024, "length": 1024, "skipped": None, "read_tok_s": 100.0,
           "timings": {"read_s": 1.0, "forward": 0.5}, "ttft_s": 0.1, "gen_tok_s": 50.0, "peak_rss_mb": 900.0,
           "kv_bytes": 2**20, "kv_peak_bytes": 2**21, "model": "m", "device": "cpu", "dtype": "float32", "threads": 2,
           "gen_tokens": 4}

    def text(runs):
        con = Console(width=250, record=True)
        con.print(speed_table(runs))
        return con.export_text()

    assert "GPU peak MiB" not in text([run])
    gpu = {**run, "device": "cuda:0", "gpu_peak_mb": 17000.0, "gpu_name": "NVIDIA H100"}
    t = text([gpu, {"method": "prefill", "length_target": 1 << 20, "skipped": "OOM: needs ~99 GiB"}])
    assert "GPU peak MiB" in t and "17,000" in t and "OOM" in t
    assert "cuda:0 (NVIDIA H100)" in speed_header([gpu])


def test_speed_reports_the_time_to_a_complete_answer():
    from rich.console import Console

    from infinipot_cli.evaluate.report import speed_table
    from infinipot_cli.evaluate.speed import complete_answer_s

    times = complete_answer_s(0.5, 60.0)  # the first token, then 29 / 299 more at 60 tok/s
    assert times == {"30": round(0.5 + 29 / 60, 2), "300": round(0.5 + 299 / 60, 2)}
    assert complete_answer_s(0.5, None) is None
    run = {"method": "plain", "length_target": 1024, "length": 1024, "skipped": None, "read_tok_s": 100.0,
           "timings": {"read_s": 1.0}, "ttft_s": 0.5, "gen_tok_s": 60.0, "peak_rss_mb": 900.0, "kv_bytes": 2**20,
           "kv_peak_bytes": 2**21, "complete_answer_s": times}
    con = Console(width=250, record=True)
    con.print(speed_table([run]))
    assert "1.0 / 5.5" in con.export_text()


def test_synthetic_refuses_what_memory_cannot_hold(monkeypatch):
    """An 8B model in fp32 on a small host: one clear error before anything is allocated."""
    from infinipot_cli.evaluate import synthetic

    monkeypatch.setattr(synthetic, "_available", lambda dev: 8 * 2**30)
    with pytest.raises(UsageError, match=r"llama-8b: its weights need ~29.9 GiB in float32 on cpu, 8.0 GiB"):
        synthetic.load_synthetic("llama-8b", "cpu", "float32")


def test_benches_without_their_extra_say_so_in_one_line():
    """matplotlib is the benches' extra (`infinipot-cli[bench]`): without it a bench fails with one line, exit 2,
    and the product's commands never import it."""
    import subprocess

    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from infinipot_cli.app import main\n"
            "sys.argv = ['infinipot', 'bench', 'needle', '-l', '1k', '-t', '1', '--out', sys.argv[1], '-q']\n"
            "main()")
    r = subprocess.run([sys.executable, "-c", code, "/nonexistent/out"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        'infinipot: error: the benches draw their figures with matplotlib: pip install "infinipot-cli[bench]" '
        "(make setup installs it)"]
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "import infinipot_cli.app, infinipot_cli.session, infinipot_cli.cli.commands\n"
            "assert not any(m.startswith('infinipot_cli.evaluate.plots') for m in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120).returncode == 0
