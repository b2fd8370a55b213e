"""The `infinipot` command: thin Typer wiring around documents -> engine -> answer.

Answers stream to stdout and nothing else goes there; the live display, warnings and errors go to stderr.
Exit codes: 0 success, 2 usage or unreadable input, 1 anything else, 130 interrupted.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from dataclasses import dataclass, field
from inspect import Parameter, signature
from typing import List, Optional

import typer

from . import __version__
from .errors import InfinipotError, InputError, UsageError
from .scoring.policies import METHODS

app = typer.Typer(
    name="infinipot",
    help="Read documents of any length with a small local LLM in a fixed amount of memory (InfiniPot), "
         "then answer questions about them or summarize them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

DEFAULT_SIZE = 2048
DEFAULT_KEEP = 1024


def _err(msg: str) -> None:
    sys.stderr.write(f"infinipot: error: {msg}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def handle_errors():
    """One clear line on stderr and the right exit code, never a traceback."""
    try:
        yield
    except typer.Exit:
        raise
    except InfinipotError as e:
        _err(str(e))
        raise typer.Exit(e.exit_code)
    except KeyboardInterrupt:
        _err("interrupted")
        raise typer.Exit(130)
    except BrokenPipeError:
        raise typer.Exit(0)
    except MemoryError:
        _err("out of memory: try a smaller --pot-size or --chunk")
        raise typer.Exit(1)
    except Exception as e:  # noqa: BLE001
        if os.environ.get("INFINIPOT_DEBUG"):
            raise
        _err(f"unexpected {type(e).__name__}: {e} (set INFINIPOT_DEBUG=1 for a traceback)")
        raise typer.Exit(1)


@dataclass
class Options:
    model: Optional[str] = None
    pot_size: int = DEFAULT_SIZE
    keep: int = DEFAULT_KEEP
    nuc_ratio: float = 0.5
    method: str = "infinipot"
    catalyst: Optional[str] = None
    max_new_tokens: int = 256
    device: Optional[str] = None
    dtype: Optional[str] = None
    format: str = "auto"
    json_out: bool = False
    quiet: bool = False
    save_pot: Optional[str] = None
    load_pot: Optional[str] = None
    chunk: int = 1024
    pool: int = 0
    nuc_decay: float = 1.0
    recent: int = 0
    span: Optional[int] = None     # None: the method's default (32; 0 for infinipot-paper)
    share: Optional[bool] = None   # None: the method's default (on; off for infinipot-paper)
    share_from: Optional[float] = None  # None: the method's default (0.5)
    segment: Optional[int] = None  # None: the method's default (48; 0 for infinipot-paper)
    relevance: Optional[bool] = None  # None: the method's default (on; off for infinipot-paper)
    final_keep: Optional[int] = None  # None: the method's default (512; 0 for infinipot-paper and infinipot-span)
    reencode: Optional[bool] = None  # None: the method's default (on; off for infinipot-paper and infinipot-span)
    inputs: List[str] = field(default_factory=list)


# ---- shared options -----------------------------------------------------------------------------------
ModelOpt = typer.Option(None, "-m", "--model", envvar="INFINIPOT_MODEL",
                        help="Model: a local folder or a cached Hugging Face id. Default: the built-in SmolLM2-135M-Instruct.")
SizeOpt = typer.Option(DEFAULT_SIZE, "--pot-size", help="M: KV entries per layer and head the pot may hold.")
KeepOpt = typer.Option(DEFAULT_KEEP, "--keep", help="C: entries kept by each distillation (pinned header included).")
NucOpt = typer.Option(0.5, "--nuc-ratio", help="alpha: share of kept slots chosen by novelty (NuC); the rest by CaP.")
MethodOpt = typer.Option("infinipot", "--method", help=f"Selection policy: {' | '.join(METHODS)}; infinipot-paper = "
                         "the paper's exact selection (--segment 0 --no-relevance --no-share); infinipot-span = "
                         "the previous default (--segment 0 --no-relevance --span 32); or a spec such as "
                         "infinipot+segment=32.")
CatOpt = typer.Option(None, "--catalyst", help="Your own catalyst prompt text (default: the question, or a general one).")
DeviceOpt = typer.Option(None, "--device", help="cpu, cuda, cuda:N or auto.")
DtypeOpt = typer.Option(None, "--dtype", help="auto, float32, bfloat16 or float16 (default: fp32 on CPU, bf16 on CUDA).")
FormatOpt = typer.Option("auto", "--format", help="Input format: auto | pdf | epub | html | text.")
JsonOpt = typer.Option(False, "--json", help="Print one JSON object on stdout at the end (nothing else).")
QuietOpt = typer.Option(False, "-q", "--quiet", help="No progress display.")
SaveOpt = typer.Option(None, "--save-pot", help="Write the distilled pot to FILE (atomically).")
LoadOpt = typer.Option(None, "--load-pot", help="Start from a saved pot: ask without re-reading, or read more into it.")
InputOpt = typer.Option(None, "-i", "--input", help="A source to read (repeatable; read in order into one pot). '-' is stdin.")
ChunkOpt = typer.Option(1024, "--chunk", help="Most tokens per forward pass.")
PoolOpt = typer.Option(0, "--pool", help="InfiniPot option: max-pool CaP scores over N neighbouring entries (0 = off, paper).")
DecayOpt = typer.Option(1.0, "--nuc-decay", help="InfiniPot option: age survivors' novelty by this factor per cycle (1 = paper).")
RecentOpt = typer.Option(0, "--recent", help="InfiniPot option: always keep the last N entries (0 = paper).")
ShareOpt = typer.Option(None, "--share/--no-share", show_default=False,
                        help="InfiniPot option: one score per entry for all layers and heads [default: on; off = paper].")
ShareFromOpt = typer.Option(None, "--share-from", show_default=False,
                            help="InfiniPot option: the shared score averages the layers from this depth fraction on "
                                 "[default: 0.5; 0 = all layers].")
SpanOpt = typer.Option(None, "--span", show_default=False,
                       help="InfiniPot option: keep contiguous spans: average token scores over N neighbours "
                            "(used when --segment is 0) [default: 0 = paper].")
SegmentOpt = typer.Option(None, "--segment", show_default=False,
                          help="InfiniPot option: keep whole sentences of at most N tokens, ranked by their mean score "
                               "[default: 48; 0 = single tokens, as the paper].")
RelevanceOpt = typer.Option(None, "--relevance/--no-relevance", show_default=False,
                            help="InfiniPot option: with a question as the catalyst, rank by the attention the question "
                                 "gives beyond the prompt template's [default: on; off = the paper's CaP sum].")

FinalKeepOpt = typer.Option(None, "--final-keep", show_default=False,
                            help="InfiniPot option: before answering a question, distill the pot to N entries with "
                                 "the question as the catalyst: fewer look-alike sentences to confuse the answer "
                                 "[default: 512; 0 = only when the pot is too full, as the paper].")
ReencodeOpt = typer.Option(None, "--reencode/--no-reencode", show_default=False,
                           help="InfiniPot option: answer a question over a fresh prefill of the text the pot holds "
                                "instead of its KV states as read [default: on; --no-reencode = from the KV, "
                                "as the paper].")


def _options(**kw) -> Options:
    o = Options(**{k: v for k, v in kw.items() if not (k == "inputs" and v is None)})  # no -i: the empty list
    from .engine import ALIASES, split_method_spec

    if split_method_spec(o.method)[0] not in METHODS:
        raise UsageError(f"unknown --method {o.method!r}; choose one of {', '.join([*METHODS, *ALIASES])}")
    if o.span is not None and o.span < 0:
        raise UsageError("--span must be 0 (off) or more")
    if o.segment is not None and o.segment < 0:
        raise UsageError("--segment must be 0 (off) or more")
    if o.final_keep is not None and o.final_keep < 0:
        raise UsageError("--final-keep must be 0 (off) or more")
    if o.share_from is not None and not 0.0 <= o.share_from < 1.0:
        raise UsageError("--share-from must be in [0, 1)")
    if o.format not in ("auto", "pdf", "epub", "html", "text"):
        raise UsageError(f"unknown --format {o.format!r}; choose auto, pdf, epub, html or text")
    if o.max_new_tokens <= 0:
        raise UsageError("--max-new-tokens must be positive")
    if o.chunk <= 0:
        raise UsageError("--chunk must be positive")
    return o


def pot_config(o: Options):
    """The pot configuration (a PotConfig): the method (a name or a spec such as infinipot-paper+recent=64) and
    its presets, then the explicit options; --span / --share / --segment / --relevance only when given."""
    from .engine import PotConfig, split_method_spec

    base, spec = split_method_spec(o.method)
    kw = {"size": o.pot_size, "keep": o.keep, "chunk": o.chunk, "alpha": o.nuc_ratio, "pool": o.pool,
          "nuc_decay": o.nuc_decay, "recent": o.recent, **spec}
    given = {"span": o.span, "share": o.share, "share_from": o.share_from, "segment": o.segment, "relevance": o.relevance,
             "final_keep": o.final_keep, "reencode": o.reencode}
    kw.update({k: v for k, v in given.items() if v is not None})
    return PotConfig(method=base, **kw)


def _stdin_piped() -> bool:
    try:
        return not sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


# ---- the job ------------------------------------------------------------------------------------------
def run_job(kind: str, sources: list[str], question: Optional[str], o: Options) -> None:
    """kind: "ask" | "summarize" | "read"."""
    from .display import Display
    from .documents import open_source
    from .engine import Engine, PotConfig
    from .prompts import Prompts
    from .reader import SourceRecord, read_source

    if kind == "read" and not o.save_pot:
        raise UsageError("`infinipot read` needs --save-pot FILE (it only builds a pot)")
    if not sources and not o.load_pot:
        raise UsageError("no input: give a SOURCE file, '-' for stdin, -i FILE, pipe text in, or --load-pot FILE")
    if sources.count("-") > 1:
        raise UsageError("stdin ('-') can be read only once")
    if o.save_pot:  # a folder, a device, a missing or read-only folder: say so before reading anything
        from .potfile import check_save_target

        check_save_target(o.save_pot)

    # Open every source before loading the model: bad input fails fast.
    opened = [open_source(p, o.format) for p in sources]

    display = Display(mode="quiet" if o.quiet else "auto", stream=sys.stderr)

    def warn(text: str) -> None:
        """Warnings reach stderr even with -q (which silences only the progress display)."""
        if display.mode == "quiet":
            sys.stderr.write(f"infinipot: warning: {text}\n")
        else:
            display.message(f"warning: {text}", style="warning")
    t_start = time.perf_counter()
    with display:
        from .model import fingerprint, load_model

        lm = load_model(o.model, o.device, o.dtype, progress=lambda m: display.message(m))
        P = Prompts(lm.tokenizer)

        # catalyst for reading: CaP-Q (the question) for ask, CaP-G (or --catalyst) otherwise
        if o.catalyst:
            cat_kind, cat_text = "text", o.catalyst
        elif kind == "ask":
            cat_kind, cat_text = "question", question
        else:
            cat_kind, cat_text = "general", None
        cat_ids, cat_focus = P.catalyst(cat_kind, cat_text)

        records: list[SourceRecord] = []
        meta_in: dict = {}
        if o.load_pot:
            from .potfile import load_pot, question_mismatch

            engine, meta_in = load_pot(o.load_pot, lm.model, lm.tokenizer, expect_model_name=lm.name)
            engine.on_event = display.on_event
            engine.t0 = time.perf_counter()
            if kind == "ask":
                warn_text = question_mismatch(meta_in, question or "")
                if warn_text:
                    warn(warn_text)
            if sources:
                engine.set_catalyst(cat_ids, cat_focus)
            for r in meta_in.get("sources", []):
                units = {k: r[k] for k in ("pages", "chapters", "lines") if k in r}
                records.append(SourceRecord(path=r.get("path", "?"), format=r.get("format", "?"), size=r.get("size"),
                                            sha256=r.get("sha256"), tokens=r.get("tokens", 0), units=units,
                                            stopped_at=r.get("stopped_at"), read=list(r.get("read") or [])))
        else:
            cfg = pot_config(o)
            engine = Engine(lm.model, lm.tokenizer, cfg, catalyst_ids=cat_ids, catalyst_focus=cat_focus,
                            on_event=display.on_event)
            engine.pin(P.header_ids())

        def save(stopped: bool = False) -> None:
            from .potfile import save_pot

            if sources or not o.load_pot:
                catalyst = {"kind": cat_kind, "text": cat_text}
            else:
                catalyst = meta_in.get("catalyst") or {"kind": "general", "text": None}
            meta = {"sources": [r.as_json() for r in records], "model": lm.name, "catalyst": catalyst}
            n = save_pot(o.save_pot, engine, meta)
            display.message(f"{'partial ' if stopped else ''}pot saved to {o.save_pot} ({n / 1e6:.1f} MB)")

        t_read = time.perf_counter()
        try:
            for i, src in enumerate(opened):
                label = os.path.basename(src.path) if len(opened) > 1 else ""
                skip = 0
                prev = _previous_record(records, src)
                if prev is not None:
                    if prev.stopped_at is None:
                        warn(f"{src.path} is already in the pot; not reading it again")
                        continue
                    skip = prev.stopped_at
                    records.remove(prev)
                    display.message(f"resuming {src.path} at token {skip}")
                rec = SourceRecord(path=src.path, format=src.format, size=src.size_bytes)
                records.append(rec)
                display.set_source(f"{src.name}" + (f" ({i + 1}/{len(opened)})" if len(opened) > 1 else ""))
                progress = _progress_tracker(opened, i)
                display.set_total(None, progress_fn=progress.fraction)  # the ETA, from how far into the sources
                read_source(engine, lm.tokenizer, src, rec, label=label, skip_tokens=skip, progress=progress.update)
                for w in getattr(src, "warnings", []):
                    warn(f"{src.name}: {w}")
        except KeyboardInterrupt:
            if o.save_pot:
                save(stopped=True)
                display.message("reading interrupted; resume with --load-pot and the same source")
            raise
        read_s = time.perf_counter() - t_read
        if engine.cfg.method == "full" and len(engine.pot) > _window(lm.model):
            warn(f"the document ({len(engine.pot)} tokens) is longer than the model's window "
                 f"({_window(lm.model)}); --method full reads it anyway")
        if o.save_pot:
            save()

        answer = ""
        t_ans = time.perf_counter()
        if kind in ("ask", "summarize"):
            prompt, focus = P.ask(question or "") if kind == "ask" else (P.summary_ids(), None)
            stream = None if o.json_out else _stdout_writer()
            answer = engine.answer(prompt, max_new_tokens=o.max_new_tokens, stop_ids=P.stop_ids(), on_text=stream,
                                   focus=focus)
            if stream:
                sys.stdout.write("\n")
                sys.stdout.flush()
        answer_s = time.perf_counter() - t_ans

    if o.json_out:
        t = engine.timings
        out = {
            "answer": answer,
            "model": lm.name,
            "method": engine.cfg.method,
            "tokens_read": engine.tokens_read,
            "sources": [r.as_json() for r in records],
            "pot": {"size": engine.cfg.size if engine.cfg.bounded else None, "keep": engine.cfg.keep,
                    "entries": len(engine.pot), "peak_entries": engine.pot.peak_entries, "cycles": engine.cycles,
                    "kv_bytes": engine.pot.kv_bytes(), "alpha": engine.cfg.alpha,
                    "policy": engine.policy.describe()},
            "timings": {"load_s": round(lm.load_s, 3), "read_s": round(read_s, 3),
                        "distill_s": round(t.cap + t.nuc + t.select + t.rerotate, 3),
                        "answer_s": round(answer_s, 3), "total_s": round(time.perf_counter() - t_start, 3),
                        "detail": t.as_dict()},
            "fingerprint": fingerprint(lm.model, lm.tokenizer),
            "version": __version__,
        }
        if kind == "read":
            out["pot_file"] = o.save_pot
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()


class _Progress:
    """How far reading has got through all the sources (by their sizes when all are known, else by count)."""

    def __init__(self, before: float, weight: float):
        self.before, self.weight, self.f = before, weight, None

    def update(self, f: float) -> None:
        self.f = f

    def fraction(self) -> float | None:
        return None if self.f is None else self.before + self.weight * self.f


def _progress_tracker(opened, i: int) -> _Progress:
    sizes = [s.size_bytes for s in opened]
    if all(sizes) and len(sizes) > 1:
        total = float(sum(sizes))
        return _Progress(sum(sizes[:i]) / total, sizes[i] / total)
    return _Progress(i / len(opened), 1 / len(opened))


def _window(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 0) or 0) or 1 << 62


def _previous_record(records, src):
    """The record of the same source in a loaded pot (same content hash, else same path and size)."""
    for r in records:
        if src.path != "-" and r.path == src.path and r.size == src.size_bytes:
            if r.sha256 is None or src.content_hash is None or r.sha256 == src.content_hash:
                return r
    return None


def _stdout_writer():
    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    return write


def _split_ask_args(args: list[str], inputs: list[str], have_pot: bool) -> tuple[list[str], str]:
    """ask [SOURCE] QUESTION: the last argument is the question; one before it is the source.

    With -i/--input, every positional argument is part of the question.
    """
    if not args:
        raise UsageError("missing QUESTION: infinipot ask [SOURCE] \"your question\"")
    if inputs:
        return list(inputs), " ".join(args)
    if len(args) == 1:
        if have_pot:
            return [], args[0]
        if _stdin_piped():
            return ["-"], args[0]
        raise UsageError("no SOURCE given and nothing piped on stdin: infinipot ask SOURCE \"your question\"")
    if len(args) == 2:
        return [args[0]], args[1]
    raise UsageError("too many arguments: to read several sources use -i/--input for each, then the question")


# ---- the options every reading command takes ------------------------------------------------------------
# ask, summarize and read take the same options; each command's own signature lists only its arguments and its
# --max-new-tokens. `reading_command` adds these to the signature Typer reads and hands them to the command as
# one Options. (name, type, option), in --help order.
READING_OPTIONS = [
    ("inputs", Optional[List[str]], InputOpt), ("model", Optional[str], ModelOpt), ("pot_size", int, SizeOpt),
    ("keep", int, KeepOpt), ("nuc_ratio", float, NucOpt), ("method", str, MethodOpt),
    ("catalyst", Optional[str], CatOpt), ("device", Optional[str], DeviceOpt), ("dtype", Optional[str], DtypeOpt),
    ("format", str, FormatOpt), ("json_out", bool, JsonOpt), ("quiet", bool, QuietOpt),
    ("save_pot", Optional[str], SaveOpt), ("load_pot", Optional[str], LoadOpt), ("chunk", int, ChunkOpt),
    ("pool", int, PoolOpt), ("nuc_decay", float, DecayOpt), ("recent", int, RecentOpt),
    ("span", Optional[int], SpanOpt), ("share", Optional[bool], ShareOpt), ("share_from", Optional[float], ShareFromOpt),
    ("segment", Optional[int], SegmentOpt), ("relevance", Optional[bool], RelevanceOpt),
    ("final_keep", Optional[int], FinalKeepOpt), ("reencode", Optional[bool], ReencodeOpt),
]


def reading_command(fn):
    """Give a command READING_OPTIONS; it receives them, with its --max-new-tokens, as `o: Options`, and runs
    inside handle_errors (one line on stderr and an exit code, never a traceback)."""
    sig = signature(fn, eval_str=True)
    own = [p for name, p in sig.parameters.items() if name != "o"]
    shared = [Parameter(name, Parameter.KEYWORD_ONLY, default=opt, annotation=ann) for name, ann, opt in READING_OPTIONS]

    @functools.wraps(fn)
    def command(**kw):
        with handle_errors():
            o = _options(max_new_tokens=kw.pop("max_new_tokens"), **{n: kw.pop(n) for n, _, _ in READING_OPTIONS})
            fn(o=o, **kw)

    command.__signature__ = sig.replace(parameters=own + shared)
    return command


# ---- commands -----------------------------------------------------------------------------------------
@app.command()
@reading_command
def ask(
    args: List[str] = typer.Argument(None, metavar="[SOURCE] QUESTION", help="A document (path or - for stdin) and the question."),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens", help="Longest answer in tokens."),
    *, o: Options,
):
    """Read SOURCE through the pot with the question as the catalyst (CaP-Q) and answer it."""
    sources, question = _split_ask_args(list(args or []), list(o.inputs), bool(o.load_pot))
    if not question.strip():
        raise UsageError("the question is empty")
    run_job("ask", sources, question, o)


@app.command()
@reading_command
def summarize(
    sources: List[str] = typer.Argument(None, metavar="[SOURCE]...", help="Documents (paths, or - for stdin)."),
    max_new_tokens: int = typer.Option(384, "--max-new-tokens", help="Longest summary in tokens."),
    *, o: Options,
):
    """Read SOURCE through the pot with the general catalyst (CaP-G) and write a summary."""
    srcs = list(o.inputs) + list(sources or [])
    if not srcs and not o.load_pot and _stdin_piped():
        srcs = ["-"]
    run_job("summarize", srcs, None, o)


@app.command()
@reading_command
def read(
    sources: List[str] = typer.Argument(None, metavar="SOURCE...", help="Documents to read into the pot, in order."),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens", hidden=True),
    *, o: Options,
):
    """Read SOURCE into a pot and save it (--save-pot FILE); ask or summarize later with --load-pot FILE."""
    srcs = list(o.inputs) + list(sources or [])
    if not srcs and _stdin_piped():
        srcs = ["-"]
    if not srcs:
        raise UsageError("missing SOURCE: infinipot read SOURCE --save-pot FILE")
    run_job("read", srcs, None, o)


@app.command()
def inspect(
    pot_file: str = typer.Argument(..., metavar="FILE", help="A pot file written by --save-pot."),
    json_out: bool = JsonOpt,
    model: Optional[str] = typer.Option(None, "-m", "--model", envvar="INFINIPOT_MODEL",
                                        help="Tokenizer to reconstruct the remembered text (default: the pot's model)."),
):
    """Show what a saved pot holds: model, sizes, sources, and the passages it still remembers."""
    with handle_errors():
        from rich.console import Console

        from .potfile import inspect_pot, read_meta, render_inspect

        meta = read_meta(pot_file)
        tokenizer = _tokenizer_for(model or meta.get("model"))
        info = inspect_pot(pot_file, tokenizer)
        if json_out:
            sys.stdout.write(json.dumps(info, ensure_ascii=False) + "\n")
        else:
            render_inspect(info, Console(file=sys.stdout, highlight=False))


def _tokenizer_for(name: Optional[str]):
    """The tokenizer alone (cheap) to decode remembered passages; None if it cannot be found."""
    from transformers import AutoTokenizer

    from .model import resolve_model_path

    try:
        _, path = resolve_model_path(name)
        return AutoTokenizer.from_pretrained(str(path))
    except Exception:  # noqa: BLE001 - inspect still works without text
        return None


def _mount_bench() -> None:
    try:
        from .evaluate.cli import bench_app
    except ImportError:
        return
    app.add_typer(bench_app, name="bench", help="Benchmarks: needle-in-a-haystack accuracy, speed and memory.")


_mount_bench()


def _version_cb(value: bool):
    if value:
        sys.stdout.write(f"infinipot {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version_cb, is_eager=True,
                                       help="Print the version and exit.")):
    """Read documents of any length with a small local LLM in a fixed amount of memory (InfiniPot)."""


def main() -> None:
    import torch

    if os.environ.get("INFINIPOT_THREADS"):
        torch.set_num_threads(int(os.environ["INFINIPOT_THREADS"]))
    app()


if __name__ == "__main__":
    main()
