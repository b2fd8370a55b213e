"""`infinipot bench`: needle-in-a-haystack accuracy, read speed / memory, real-document questions.

    infinipot bench needle --lengths 4k,16k,64k --depths 0.1,0.5,0.9 --methods infinipot,streaming
    infinipot bench speed  --lengths 2k,8k,32k --methods infinipot,plain,prefill
    infinipot bench qa     --corpus CORPUS --docs gzip-man,tar-man --flows direct,read-then-ask
    infinipot bench summary --corpus corpus.json --docs libtasn1,gzip-man --methods infinipot,head,tail
    infinipot bench ruler  --lengths 4k,8k --tasks all --methods infinipot,full --flow direct,read-then-ask

Tables go to stdout; progress (tokens, tok/s, ETA) to stderr; JSON and PNG files to --out.
The main app mounts this sub-app with `app.add_typer(bench_app, name="bench")`.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Optional

import typer

from ..errors import InfinipotError, UsageError
from ..pot.config import METHODS, PotConfig
from ..cli.knob_options import knob, with_knobs
from ..cli.options import P_IO, P_MODEL, P_POT, device_option, dtype_option, model_option
from . import report
from .haystack import check_haystack

bench_app = typer.Typer(
    name="bench",
    help="Benchmarks: needle-in-a-haystack accuracy (paper Table 4 / Figure 5) and read speed and memory (Figure 7).",
    no_args_is_help=True,
    add_completion=False,
)

ModelOpt, DeviceOpt, DtypeOpt = model_option(), device_option(), dtype_option()
SHORT = {"size": "-M", "keep": "-C"}  # the pot knobs (config.py) take these short flags here too
PotOpt, KeepOpt, ChunkOpt = knob("size", SHORT["size"]), knob("keep", SHORT["keep"]), knob("chunk")


def _sizes(pot_size: int | None, keep: int | None, chunk: int | None) -> PotConfig:
    """The default method's configuration with the sizes given (the declared defaults otherwise)."""
    given = {"size": pot_size, "keep": keep, "chunk": chunk}
    return _check_pot([], {k: v for k, v in given.items() if v is not None})
HaystackOpt = typer.Option(None, "--haystack", metavar="HAYSTACK", help="The haystack: builtin (varied generated prose, the default), "
                                                    "python-docs (real prose: the Python language reference, "
                                                    "shipped with Python) or a text file (from a seed-chosen line, "
                                                    "repeated as needed).")
ThreadsOpt = typer.Option(None, "--threads", min=1, metavar="N", rich_help_panel=P_MODEL, help="torch CPU threads (default: torch's choice).")
SeedOpt = typer.Option(0, "--seed", metavar="N", help="Seed for haystacks and needles.")
SyntheticOpt = typer.Option(None, "--synthetic", metavar="ARCH", rich_help_panel=P_MODEL, help="Measure a real architecture with random weights and the built-in "
                                                      "tokenizer instead of --model: llama-8b (Llama-3.1-8B), qwen2-7b "
                                                      "(Qwen2.5-7B), gemma2-9b (Gemma-2-9B), smollm2-135m (the built-in "
                                                      "model's shape) or tiny-llama. Weights are "
                                                      "created on --device in --dtype (~16 GB for llama-8b in bf16).")


def _fail(e: InfinipotError) -> None:
    typer.echo(f"error: {e}", err=True)
    raise typer.Exit(e.exit_code)


def _check_pot(methods: list[str], knobs: dict) -> PotConfig:
    """Every method's configuration with the knobs given, validated as the reading commands do; the default
    method's, whose sizes the tables and plots name."""
    for m in methods:
        PotConfig.resolve(m, knobs)
    return PotConfig.resolve(None, knobs)


def _load(model, device, dtype, threads):
    from ..runtime.loading import load_model
    from ..runtime.threads import configure

    configure(threads)
    return load_model(model, device, dtype, progress=lambda m: typer.echo(m, err=True))


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _trace_outputs(rec: dict, out: Path, about: str) -> None:
    """--trace: the retention plot of one trial, and its summary on stderr (printed even with --quiet)."""
    from . import plots
    from .progress import fmt_tokens
    from .trace import summary_text

    # trials are counted from 1 here, as in the progress lines (needle.json's `trial` counts from 0)
    flow = "" if rec.get("flow", "direct") == "direct" else f"-{rec['flow']}"
    name = f"trace-{rec['method']}{flow}-{fmt_tokens(rec['length_target'])}-{rec['depth']:g}-{rec['trial'] + 1}.png"
    if rec["trace"]:
        plots.trace_plot(rec, out / name, title=f"{rec['method']} {fmt_tokens(rec['length_target'])} depth "
                                                f"{rec['depth']:g} trial {rec['trial'] + 1} ({about})")
        rec["trace_png"] = name
    typer.echo(summary_text(rec), err=True)


@bench_app.command("needle")
@with_knobs(SHORT)
def needle_cmd(
    lengths: str = typer.Option("4k,8k,16k", "--lengths", "-l", metavar="LENGTHS", help="Haystack lengths in tokens: 4k,16k,64k,256k,1m."),
    depths: str = typer.Option("0.1,0.5,0.9", "--depths", "-d", metavar="DEPTHS", help="Needle depths (0 = start, 1 = end)."),
    trials: int = typer.Option(1, "--trials", "-t", metavar="N", min=1, help="Trials per (length, depth); each draws a new needle."),
    methods: str = typer.Option("infinipot", "--methods", metavar="METHODS", rich_help_panel=P_POT, help=f"Comma-separated: {', '.join(METHODS)}."),
    model: Optional[str] = ModelOpt,
    device: Optional[str] = DeviceOpt,
    dtype: Optional[str] = DtypeOpt,
    haystack: Optional[str] = HaystackOpt,
    kinds: str = typer.Option("all", "--kinds", metavar="KINDS", help="Needle kinds, rotated over cells: passkey (the paper's task), "
                                                     "name, fact, year, quantity (a number with its unit), "
                                                     "role (a person by role), or all."),
    needle: Optional[str] = typer.Option(None, "--needle", metavar="TEXT", help="Your own needle sentence (with --question and --expect)."),
    question: Optional[str] = typer.Option(None, "--question", metavar="TEXT", help="The question that asks for your needle."),
    expect: Optional[str] = typer.Option(None, "--expect", metavar="TEXT", help="Correct = this string appears in the answer (any case)."),
    answer_prefix: Optional[str] = typer.Option(None, "--answer-prefix", metavar="TEXT", help="Start of the answer for your needle, "
                                                                              "e.g. 'The pass key is'."),
    max_new_tokens: int = typer.Option(48, "--max-new-tokens", metavar="N", min=1,
                                        help="Answer length limit (answers end at their first sentence or a loop)."),
    seed: int = SeedOpt,
    threads: Optional[int] = ThreadsOpt,
    synthetic: Optional[str] = typer.Option(None, "--synthetic", metavar="ARCH", rich_help_panel=P_MODEL, help="A synthetic model (see `bench speed "
                                            "--synthetic`): random weights, so answers are wrong; for the loop's "
                                            "mechanics and memory at scale only."),
    out: Path = typer.Option(Path("bench-results/needle"), "--out", "-o", metavar="DIR", rich_help_panel=P_IO, help="Folder for needle.json and the heatmaps."),
    quiet: bool = typer.Option(False, "--quiet", "-q", metavar="", rich_help_panel=P_IO, help="No progress on stderr."),
    flow: str = typer.Option("direct", "--flow", metavar="FLOWS", help="Comma-separated: direct (the question is the catalyst while "
                                                      "reading, as `ask DOC q`), read-then-ask (read with the "
                                                      "general catalyst, then ask from that state, as `read "
                                                      "--save-pot` + `ask --load-pot`); both sit side by side."),
    trace: bool = typer.Option(False, "--trace", metavar="", rich_help_panel=P_IO, help="After every distillation, record where the needle's tokens "
                                                      "are and what fills the pot: a `trace` per trial in needle.json, "
                                                      "trace-<method>-<length>-<depth>-<trial>.png and a summary on "
                                                      "stderr."),
    knobs: dict = None,
) -> None:
    """Needle in a haystack: accuracy per method x length x depth; JSON of every trial; a heatmap per method."""
    from . import plots, report
    from .needle import NeedleConfig, parse_flows, run_needle, summarize
    from .needles import custom_needle, parse_kinds
    from .progress import Progress

    try:
        cfg = NeedleConfig(methods=report.parse_methods(methods, METHODS), lengths=report.parse_lengths(lengths),
                           depths=report.parse_depths(depths), trials=trials, pot=knobs,
                           kinds=parse_kinds(kinds),
                           needle=custom_needle(needle, question, expect, answer_prefix),
                           haystack=haystack or None, seed=seed, max_new_tokens=max_new_tokens,
                           trace=trace, flows=parse_flows(flow))
        pot = _check_pot(cfg.methods, knobs)
        check_haystack(haystack)
        if synthetic:
            from ..runtime.threads import configure
            from .synthetic import check_name, load_synthetic

            check_name(synthetic)
            if model:
                raise UsageError("give --model or --synthetic, not both")
            configure(threads)
            lm = load_synthetic(synthetic, device, dtype, seed=seed, progress=lambda m: typer.echo(m, err=True))
        else:
            lm = _load(model, device, dtype, threads)
        runs = len(cfg.methods) * len(cfg.flows)
        total = len(cfg.lengths) * len(cfg.depths) * cfg.trials * runs
        progress = Progress(sum(cfg.lengths) * len(cfg.depths) * cfg.trials * runs, enabled=not quiet)
        if not quiet:
            typer.echo(f"needle: {total} runs, {lm.name} on {lm.device} ({str(lm.dtype).removeprefix('torch.')}, "
                       f"{torch_threads()} threads), pot {pot.size}/{pot.keep}", err=True)
        out.mkdir(parents=True, exist_ok=True)
        trials_done: list[dict] = []
        t0 = time.perf_counter()

        def doc(done: bool) -> dict:
            return {"command": "needle", "model": lm.name, "device": str(lm.device),
                    "dtype": str(lm.dtype).removeprefix("torch."), "config": cfg.describe(), "complete": done,
                    "elapsed_s": round(time.perf_counter() - t0, 2), "summary": summarize(trials_done),
                    "trials": trials_done}

        def on_trial(rec: dict) -> None:  # rewrite the JSON after every trial: long runs keep partial results
            if rec.get("trace") is not None:
                _trace_outputs(rec, out, f"M={pot.size}, C={pot.keep}, {lm.name}")
            trials_done.append(rec)
            report.write_json(out / "needle.json", doc(False))

        run_needle(lm, cfg, progress, on_trial)
        summary = summarize(trials_done)
        report.write_json(out / "needle.json", doc(True))
        labels = list(dict.fromkeys(c["method"] for c in summary))
        pngs = [plots.needle_heatmap(summary, m, cfg.lengths, cfg.depths,
                                     out / f"needle-{re.sub(r'[^A-Za-z0-9.+=_-]+', '-', m)}.png",
                                     title=f"{m} (M={pot.size}, C={pot.keep})\n{lm.name}") for m in labels]
    except InfinipotError as e:
        _fail(e)
        return
    con = report.console()
    con.print(report.needle_table(summary, cfg.depths))
    con.print(f"trials: {out / 'needle.json'}")
    for p in pngs:
        con.print(f"heatmap: {p}")
    for t in trials_done:
        if t.get("trace_png"):
            con.print(f"trace: {out / t['trace_png']}")


@bench_app.command("ruler")
@with_knobs(SHORT)
def ruler_cmd(
    tasks: str = typer.Option("all", "--tasks", metavar="TASKS", help="Comma-separated RULER tasks (or prefixes, "
                              "e.g. niah): niah_single_1/2/3, niah_multikey_1/2/3, niah_multivalue, "
                              "niah_multiquery, vt, cwe, fwe, or all. RULER's qa_1/qa_2 need SQuAD/HotpotQA "
                              "downloads and are left out."),
    lengths: str = typer.Option("4k,8k,16k,32k", "--lengths", "-l", metavar="LENGTHS",
                                help="Lengths in tokens, RULER's: 4k,8k,16k,32k,64k,128k (the whole input counted "
                                     "with the model's tokenizer, answer budget included)."),
    methods: str = typer.Option("infinipot,full", "--methods", metavar="METHODS", rich_help_panel=P_POT,
                                help=f"Comma-separated: {', '.join(METHODS)}, infinipot-paper (full and snapkv "
                                     "only where the input fits the model's window)."),
    flow: str = typer.Option("direct", "--flow", metavar="FLOWS", help="Comma-separated: direct (the question is "
                             "the catalyst while reading, as `ask DOC q`), read-then-ask (read with the general "
                             "catalyst, then ask, as `read --save-pot` + `ask --load-pot`)."),
    samples: int = typer.Option(1, "--samples", "-n", metavar="N", min=1, help="Samples per (task, length)."),
    seed: int = SeedOpt,
    max_new_tokens: Optional[int] = typer.Option(None, "--max-new-tokens", metavar="N", min=1,
                                                 help="Answer budget (default: RULER's per task: niah 128, vt 30, "
                                                      "cwe 120, fwe 50)."),
    model: Optional[str] = ModelOpt,
    device: Optional[str] = DeviceOpt,
    dtype: Optional[str] = DtypeOpt,
    threads: Optional[int] = ThreadsOpt,
    out: Path = typer.Option(Path("bench-results/ruler"), "--out", "-o", metavar="DIR", rich_help_panel=P_IO,
                             help="Folder for ruler.json, ruler.md and ruler.png."),
    quiet: bool = typer.Option(False, "--quiet", "-q", metavar="", rich_help_panel=P_IO, help="No progress on stderr."),
    knobs: dict = None,
) -> None:
    """RULER's synthetic tasks (needles among needles, several values and keys, UUIDs, variable chains, common
    and frequent words): score per task x length per method and flow, answered as `ask` answers."""
    from . import plots, report
    from .needle import parse_flows
    from .progress import Progress
    from .ruler import RulerConfig, averages, markdown, run_ruler, summarize
    from .ruler_tasks import essay_words, parse_tasks, verbs

    try:
        cfg = RulerConfig(tasks=parse_tasks(tasks), lengths=report.parse_lengths(lengths),
                          methods=report.parse_methods(methods, METHODS), flows=parse_flows(flow), samples=samples,
                          seed=seed, pot=knobs, max_new_tokens=max_new_tokens)
        pot = _check_pot(cfg.methods, knobs)
        essay_words(), verbs()  # the word sources are installed: fail before the model loads
        lm = _load(model, device, dtype, threads)
        runs = len(cfg.methods) * len(cfg.flows) * len(cfg.tasks) * cfg.samples
        progress = Progress(sum(cfg.lengths) * runs, enabled=not quiet)
        if not quiet:
            typer.echo(f"ruler: {runs * len(cfg.lengths)} runs, {lm.name} on {lm.device} "
                       f"({str(lm.dtype).removeprefix('torch.')}, {torch_threads()} threads), pot {pot.size}/{pot.keep}",
                       err=True)
        out.mkdir(parents=True, exist_ok=True)
        records: list[dict] = []
        t0 = time.perf_counter()

        def doc(done: bool) -> dict:
            summary = summarize(records)
            return {"command": "ruler", "model": lm.name, "device": str(lm.device),
                    "dtype": str(lm.dtype).removeprefix("torch."), "config": cfg.describe(), "complete": done,
                    "elapsed_s": round(time.perf_counter() - t0, 2), "summary": summary,
                    "averages": [{"method": m, "length": n, "average": a} for (m, n), a in averages(summary).items()],
                    "records": records}

        def on_record(rec: dict) -> None:  # rewritten after every answer: a long run keeps partial results
            records.append(rec)
            report.write_json(out / "ruler.json", doc(False))

        run_ruler(lm, cfg, progress, on_record)
        final = doc(True)
        report.write_json(out / "ruler.json", final)
        md = markdown(final["summary"], records, cfg.tasks, cfg.lengths)
        report.write_text(out / "ruler.md", md)
        png = plots.ruler_plot(averages(final["summary"]), out / "ruler.png",
                               title=f"RULER ({len(cfg.tasks)} tasks, {cfg.samples} sample(s) each), "
                                     f"M={pot.size}, C={pot.keep}\n{lm.name}")
    except InfinipotError as e:
        _fail(e)
        return
    sys.stdout.write(md)
    sys.stdout.write(f"records: {out / 'ruler.json'}\nplot: {png}\n")


@bench_app.command("speed")
@with_knobs(SHORT)
def speed_cmd(
    lengths: str = typer.Option("2k,8k,32k", "--lengths", "-l", metavar="LENGTHS", help="Document lengths in tokens: 2k,8k,32k,128k."),
    methods: str = typer.Option("infinipot,plain,prefill", "--methods", metavar="METHODS", rich_help_panel=P_POT,
                                help=f"Comma-separated: {', '.join(METHODS)}, plain, prefill, streaming-tbt."),
    model: Optional[str] = ModelOpt,
    device: Optional[str] = DeviceOpt,
    dtype: Optional[str] = DtypeOpt,
    haystack: Optional[str] = HaystackOpt,
    gen_tokens: int = typer.Option(64, "--gen-tokens", metavar="N", min=1, help="Tokens generated after reading, stop tokens "
                                                                   "ignored (TTFT, decode speed over this many)."),
    seed: int = SeedOpt,
    threads: Optional[int] = ThreadsOpt,
    synthetic: Optional[str] = SyntheticOpt,
    out: Path = typer.Option(Path("bench-results/speed"), "--out", "-o", metavar="DIR", rich_help_panel=P_IO, help="Folder for speed.json and speed.png."),
    knobs: dict = None,
) -> None:
    """Read throughput, time split, peak RSS and KV bytes per length; one fresh process per (method, length)."""
    from . import plots, report
    from .speed import PSEUDO, SPEED_METHODS, SpeedConfig, run_speed

    try:
        cfg = SpeedConfig(methods=report.parse_methods(methods, SPEED_METHODS), lengths=report.parse_lengths(lengths),
                          pot=knobs, model=model, device=device, dtype=dtype,
                          haystack=haystack or None, seed=seed, gen_tokens=gen_tokens,
                          threads=threads, synthetic=synthetic or None)
        pot = _check_pot([m for m in cfg.methods if m not in PSEUDO], knobs)
        check_haystack(haystack)
        from ..runtime.loading import pick_device, pick_dtype, resolve_model_path

        pick_dtype(dtype, pick_device(device))  # bad flags fail here, not once per worker
        if synthetic:
            from .synthetic import check_name

            check_name(synthetic)
            if model:
                raise UsageError("give --model or --synthetic, not both")
        # (synthetic: the built-in tokenizer, converted here once rather than in every worker)
        resolve_model_path(None if synthetic else model, progress=lambda m: typer.echo(m, err=True))
    except InfinipotError as e:
        _fail(e)
        return
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    runs: list[dict] = []

    def doc(done: bool) -> dict:
        first = next((r for r in runs if r.get("model")), {})
        return {"command": "speed", "model": first.get("model", model), "device": first.get("device", device),
                "dtype": first.get("dtype", dtype), "config": cfg.describe(), "complete": done,
                "elapsed_s": round(time.perf_counter() - t0, 2), "runs": runs}

    def on_run(rec: dict) -> None:
        runs.append(rec)
        report.write_json(out / "speed.json", doc(False))

    run_speed(cfg, sys.stderr, on_run)
    report.write_json(out / "speed.json", doc(True))
    first = next((r for r in runs if r.get("model")), {})
    png = plots.speed_plot(runs, out / "speed.png",
                           title=f"M={pot.size}, C={pot.keep}, chunk {pot.chunk}, {first.get('model', '')} on {first.get('device', '')}")
    con = report.console()
    con.print(report.speed_header(runs))
    con.print(report.speed_table(runs))
    for line in report.speed_notes(runs):
        con.print(f"note: {line}")
    con.print(f"runs: {out / 'speed.json'}")
    con.print(f"plot: {png}")
    if runs and all(r.get("error") for r in runs):
        raise typer.Exit(1)


@bench_app.command("qa")
def qa_cmd(
    corpus: Path = typer.Option(..., "--corpus", metavar="PATH", rich_help_panel=P_IO, help="A folder with corpus.json (the documents) and questions.json "
                                                      "(questions, acceptable answers, the gold passage)."),
    docs: Optional[str] = typer.Option(None, "--docs", metavar="IDS", help="Comma-separated document ids (default: all)."),
    limit: Optional[int] = typer.Option(None, "--limit", metavar="N", min=1, help="At most this many questions per document."),
    ids: Optional[str] = typer.Option(None, "--ids", metavar="IDS", help="Comma-separated question ids: only these questions."),
    flows: str = typer.Option("direct,read-then-ask", "--flows", metavar="FLOWS",
                              help="Comma-separated: direct (ask DOC Q: one read per question, the question as the "
                                   "catalyst), read-then-ask (one read, saved pot, every question asked from it)."),
    baselines: str = typer.Option("whole,words,retrieve=words", "--baselines", metavar="BASELINES",
                                  help="Comma-separated, or none: whole (the whole document in the model's window, "
                                       "where it fits), words (the best-matching passages by word overlap alone), "
                                       "retrieve=words (read-then-ask with no model judging: the method option "
                                       "retrieve=words, from the same read)."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", metavar="N", min=1,
                                             help="Skip documents longer than this (approximate tokens)."),
    direct_max_tokens: Optional[int] = typer.Option(None, "--direct-max-tokens", metavar="N", min=1,
                                                    help="Run the direct flow only on documents up to this length."),
    method: str = typer.Option("infinipot", "--method", metavar="SPEC", rich_help_panel=P_POT, help="The pot's method spec (config.py), e.g. "
                                                             "infinipot+final_keep=1024."),
    pot_size: Optional[int] = PotOpt,
    keep: Optional[int] = KeepOpt,
    final_keep: Optional[int] = typer.Option(None, "--final-keep", metavar="N", rich_help_panel=P_POT, min=0, help="Entries the question's last "
                                             "distillation keeps (default: the method's); also the words baseline's "
                                             "token budget (default 512)."),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", metavar="N", min=1, help="Answer length limit "
                                                                                         "(as ask's)."),
    model: Optional[str] = ModelOpt,
    device: Optional[str] = DeviceOpt,
    dtype: Optional[str] = DtypeOpt,
    threads: Optional[int] = ThreadsOpt,
    out: Path = typer.Option(Path("bench-results/qa"), "--out", "-o", metavar="DIR", rich_help_panel=P_IO, help="Folder for qa.json and qa.md."),
    quiet: bool = typer.Option(False, "--quiet", "-q", metavar="", rich_help_panel=P_IO, help="No progress on stderr."),
) -> None:
    """Real-document questions: answer accuracy, evidence recall, invented content and refusals per document
    and flow (direct, read-then-ask, and the whole-document and word-overlap baselines)."""
    from . import report
    from .qa import BASELINES, FLOWS, QAConfig, load_corpus, markdown, run_qa, summarize

    def parse(spec: str, allowed, what: str) -> list[str]:
        got = [p.strip() for p in spec.split(",") if p.strip() and p.strip() != "none"]
        bad = [p for p in got if p not in allowed]
        if bad:
            raise UsageError(f"{what}: unknown {', '.join(bad)}; choose from {', '.join(allowed)}")
        return got

    try:
        sizes = _sizes(pot_size, keep, None)
        cfg = QAConfig(corpus=corpus, docs=[d.strip() for d in docs.split(",") if d.strip()] if docs else None,
                       limit=limit, ids=[i.strip() for i in ids.split(",") if i.strip()] if ids else None,
                       flows=parse(flows, FLOWS, "--flows"),
                       baselines=parse(baselines, BASELINES, "--baselines"), max_tokens=max_tokens,
                       direct_max_tokens=direct_max_tokens, method=method, pot_size=sizes.size, keep=sizes.keep,
                       final_keep=final_keep, max_new_tokens=max_new_tokens)
        _check_pot([method], {"size": sizes.size, "keep": sizes.keep})
        load_corpus(corpus)  # a bad folder fails before the model loads
        lm = _load(model, device, dtype, threads)
        out.mkdir(parents=True, exist_ok=True)
        records: list[dict] = []
        t0 = time.perf_counter()
        skipped: list[dict] = []

        def doc(done: bool) -> dict:
            return {"command": "qa", "model": lm.name, "device": str(lm.device),
                    "dtype": str(lm.dtype).removeprefix("torch."), "config": cfg.describe(), "complete": done,
                    "elapsed_s": round(time.perf_counter() - t0, 2), "summary": summarize(records),
                    "skipped": skipped, "records": records}

        def on_record(rec: dict) -> None:  # rewritten after every answer: a long run keeps partial results
            records.append(rec)
            report.write_json(out / "qa.json", doc(False))

        skipped.extend(run_qa(lm, cfg, on_record, (lambda m: None) if quiet else (lambda m: typer.echo(m, err=True))))
        final = doc(True)
        report.write_json(out / "qa.json", final)
        md = markdown(final["summary"], final)
        report.write_text(out / "qa.md", md)
        if records:
            from .plots import qa_plot

            table, _ = load_corpus(corpus)
            qa_plot(records, {d: e.get("kind", "?") for d, e in table.items()}, out / "qa.png",
                    f"bench qa — {lm.name}")
    except InfinipotError as e:
        _fail(e)
        return
    sys.stdout.write(md)
    sys.stdout.write(f"records: {out / 'qa.json'}\n")


@bench_app.command("summary")
def summary_cmd(
    corpus: Path = typer.Option(..., "--corpus", metavar="PATH", rich_help_panel=P_IO, help="corpus.json: documents with a path, a kind and their parts "
                                                     "(title, distinctive terms)."),
    docs: Optional[str] = typer.Option(None, "--docs", metavar="IDS", help="Comma-separated document ids (default: all)."),
    methods: str = typer.Option("infinipot,infinipot-paper,head,tail,whole", "--methods", metavar="METHODS", rich_help_panel=P_POT,
                                help=f"Comma-separated: {', '.join(METHODS)}, infinipot-paper, and the baselines head, "
                                     "tail (the document cut to what a pot shows) and whole (where it fits the "
                                     "model's window)."),
    pot_size: Optional[int] = PotOpt,
    keep: Optional[int] = KeepOpt,
    chunk: Optional[int] = ChunkOpt,
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", metavar="N", min=16, help="Summary budget in tokens."),
    model: Optional[str] = ModelOpt,
    device: Optional[str] = DeviceOpt,
    dtype: Optional[str] = DtypeOpt,
    threads: Optional[int] = ThreadsOpt,
    resume: bool = typer.Option(False, "--resume", metavar="", rich_help_panel=P_IO, help="Keep the rows of --out's summary.json made with the same "
                                                        "settings; run only the missing (document, method) pairs."),
    out: Path = typer.Option(Path("bench-results/summary"), "--out", "-o", metavar="DIR", rich_help_panel=P_IO, help="Folder for summary.json and "
                                                                                "summary.md."),
) -> None:
    """Summaries of real documents: section coverage, repeated n-grams, unsupported numbers and names, time."""
    from ..pot.config import PRESETS
    from .summary import BASELINES, SummaryBenchConfig, load_corpus, markdown_table, run_summary_bench

    try:
        allowed = list(METHODS) + list(PRESETS) + list(BASELINES)
        sizes = _sizes(pot_size, keep, chunk)
        cfg = SummaryBenchConfig(methods=report.parse_methods(methods, allowed), pot_size=sizes.size, keep=sizes.keep,
                                 chunk=sizes.chunk, max_new_tokens=max_new_tokens)

        chosen = load_corpus(corpus, [d.strip() for d in docs.split(",") if d.strip()] if docs else None)
        lm = _load(model, device, dtype, threads)
    except InfinipotError as e:
        _fail(e)
        return
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    prev = out / "summary.json"
    if resume and prev.exists():
        try:
            old = json.loads(prev.read_text())
            if old.get("config") == cfg.describe() | {"methods": old["config"].get("methods")} \
                    and old.get("model") == lm.name:
                rows = [r for r in old.get("rows", []) if r["method"] in cfg.methods]
        except (ValueError, KeyError):
            rows = []
    t0 = time.perf_counter()

    def doc(done: bool) -> dict:
        return {"command": "summary", "model": lm.name, "device": str(lm.device),
                "dtype": str(lm.dtype).removeprefix("torch."), "config": cfg.describe(), "complete": done,
                "elapsed_s": round(time.perf_counter() - t0, 2), "rows": rows}

    def order(r: dict) -> tuple:
        ids = [d["id"] for d in chosen]
        return (ids.index(r["doc"]) if r["doc"] in ids else len(ids), cfg.methods.index(r["method"]))

    def write(done: bool) -> None:
        rows.sort(key=order)
        report.write_json(out / "summary.json", doc(done))
        report.write_text(out / "summary.md", markdown_table(rows))

    def on_row(row: dict) -> None:
        rows.append(row)
        write(False)

    run_summary_bench(lm, chosen, cfg, on_row, kept=rows)
    write(True)
    typer.echo(markdown_table(rows))
    typer.echo(f"rows: {out / 'summary.json'}\ntable: {out / 'summary.md'}")
