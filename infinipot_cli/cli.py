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
from .errors import InfinipotError, UsageError
from .interrupts import Terminated, terminate_like_interrupt

app = typer.Typer(
    name="infinipot",
    help="Read documents of any length with a small local LLM in a fixed amount of memory (InfiniPot), "
         "then answer questions about them or summarize them.\n\n"
         "Examples:\n\n"
         "  infinipot ask book.pdf \"Who killed the captain?\"\n\n"
         "  infinipot summarize report.html\n\n"
         "  cat notes.txt | infinipot ask - \"What did we decide?\"\n\n"
         "  infinipot read book.epub --save-pot book.pot && infinipot ask --load-pot book.pot \"...\"",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

HUGE_POT = 1 << 18  # entries per head beyond which a pot costs more than any document it could help with


def _err(msg: str) -> None:
    sys.stderr.write(f"infinipot: error: {msg}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def handle_errors():
    """One clear line on stderr and the right exit code, never a traceback. SIGTERM stops like Ctrl-C (a read
    with --save-pot checkpoints) and exits 143."""
    try:
        with terminate_like_interrupt():
            yield
    except typer.Exit:
        raise
    except InfinipotError as e:
        _err(str(e))
        raise typer.Exit(e.exit_code)
    except Terminated:
        _err("terminated")
        raise typer.Exit(143)
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
    """A reading command's options; `pot` holds only the pot knobs given on the command line (config.py)."""

    model: Optional[str] = None
    method: Optional[str] = None
    catalyst: Optional[str] = None
    max_new_tokens: int = 256
    device: Optional[str] = None
    dtype: Optional[str] = None
    format: str = "auto"
    json_out: bool = False
    quiet: bool = False
    save_pot: Optional[str] = None
    force: bool = False
    load_pot: Optional[str] = None
    inputs: List[str] = field(default_factory=list)
    pot: dict = field(default_factory=dict)


# ---- the options every reading command takes ------------------------------------------------------------
# ask, summarize and read take the same options; each command's own signature lists only its arguments and its
# --max-new-tokens. `reading_command` adds these to the signature Typer reads and hands them to the command as
# one Options. The pot knobs (--pot-size, --keep, ...) come from their declaration in config.py.
P_POT, P_MODEL, P_IO = "Pot (InfiniPot)", "Model", "Input and output"


def _knob_option(f) -> tuple[str, object, object]:
    """A Typer option for a declared pot knob; default None = not given (the declared default applies)."""
    default = "half the pot" if f.name == "keep" else str(f.default)
    kind = type(f.default)
    return (f.name, Optional[kind],
            typer.Option(None, f.metadata["flag"], show_default=False, rich_help_panel=P_POT,
                         metavar="N" if kind is int else "X", help=f"{f.metadata['help']} Default: {default}."))


def _reading_options() -> list[tuple[str, object, object]]:
    from .config import DTYPE_HELP, cli_knobs, method_help

    return [
        ("inputs", Optional[List[str]], typer.Option(
            None, "-i", "--input", rich_help_panel=P_IO, metavar="SOURCE",
            help="A source to read (repeatable; read in order into one pot). '-' is stdin.")),
        *[_knob_option(f) for f in cli_knobs()],
        ("method", Optional[str], typer.Option(None, "--method", show_default=False, rich_help_panel=P_POT,
                                               metavar="SPEC", help=method_help() + " Default: infinipot.")),
        ("catalyst", Optional[str], typer.Option(
            None, "--catalyst", rich_help_panel=P_POT, metavar="TEXT",
            help="Your own catalyst prompt text (default: the question for ask, a general one otherwise).")),
        ("model", Optional[str], typer.Option(
            None, "-m", "--model", envvar="INFINIPOT_MODEL", rich_help_panel=P_MODEL, metavar="MODEL",
            help="A .gguf file, ollama:NAME[:TAG], gemma3-270m, a local folder or a cached Hugging Face id "
                 "(`infinipot models` lists them). Default: the built-in SmolLM2-135M-Instruct.")),
        ("device", Optional[str], typer.Option(None, "--device", rich_help_panel=P_MODEL, metavar="DEVICE",
                                               help="cpu, cuda, cuda:N or auto. Default: auto.")),
        ("dtype", Optional[str], typer.Option(
            None, "--dtype", rich_help_panel=P_MODEL, metavar="DTYPE",
            help=DTYPE_HELP)),
        ("format", str, typer.Option("auto", "--format", rich_help_panel=P_IO, metavar="FORMAT",
                                     help="Input format: auto, pdf, epub, html or text.")),
        ("load_pot", Optional[str], typer.Option(
            None, "--load-pot", rich_help_panel=P_IO, metavar="FILE",
            help="Start from a saved pot: ask without re-reading, or read more into it.")),
        ("save_pot", Optional[str], typer.Option(None, "--save-pot", rich_help_panel=P_IO, metavar="FILE",
                                                 help="Write the distilled pot to FILE (atomically).")),
        ("force", bool, typer.Option(False, "--force", rich_help_panel=P_IO, metavar="",
                                     help="Let --save-pot replace an existing file that is not a pot.")),
        ("json_out", bool, typer.Option(False, "--json", rich_help_panel=P_IO, metavar="",
                                        help="Print one JSON object on stdout at the end (nothing else).")),
        ("quiet", bool, typer.Option(False, "-q", "--quiet", rich_help_panel=P_IO, metavar="", help="No progress display.")),
    ]


READING_OPTIONS = _reading_options()


def _options(**kw) -> Options:
    """Options from the command line, checked before anything heavy is loaded (bad input fails in milliseconds)."""
    from .config import cli_knobs

    knobs = {f.name: kw.pop(f.name) for f in cli_knobs()}
    if kw.get("inputs") is None:
        kw["inputs"] = []
    o = Options(**kw, pot={k: v for k, v in knobs.items() if v is not None})
    if o.load_pot and (o.pot or o.method):
        _drop_settings_the_pot_has(o)
    if not o.load_pot:
        cfg = pot_config(o)
        if cfg.bounded and cfg.size > HUGE_POT:
            sys.stderr.write(f"infinipot: warning: --pot-size {cfg.size} is far beyond what a pot needs; memory and "
                             "answer time grow with it (the default is 2048)\n")
    if o.format not in ("auto", "pdf", "epub", "html", "text"):
        raise UsageError(f"unknown --format {o.format!r}; choose auto, pdf, epub, html or text")
    if o.max_new_tokens <= 0:
        raise UsageError("--max-new-tokens must be positive")
    return o


def _drop_settings_the_pot_has(o: Options) -> None:
    """With --load-pot, pot settings given again with the values the pot was read with are accepted (and
    dropped); a different value is refused: a loaded pot keeps the settings it was read with."""
    from .config import PotConfig, cli_knobs, split_method_spec
    from .potfile import read_meta

    saved = PotConfig.from_saved(read_meta(o.load_pot).get("config") or {})
    differ = [f"{f.metadata['flag']} {o.pot[f.name]} (the pot has {getattr(saved, f.name)})"
              for f in cli_knobs() if f.name in o.pot and o.pot[f.name] != getattr(saved, f.name)]
    if o.method:
        base, spec = split_method_spec(o.method)
        if base != saved.method or any(getattr(saved, k) != v for k, v in spec.items()):
            differ.append(f"--method {o.method} (the pot has {saved.method})")
    if differ:
        raise UsageError(f"{', '.join(differ)}: settings cannot change a loaded pot (--load-pot keeps the settings "
                         "it was read with); drop them, or read the document again")
    o.pot, o.method = {}, None


def pot_config(o: Options, kind: str | None = None):
    """The validated PotConfig: the method (a name, preset or spec such as infinipot+segment=32), then the
    knobs given on the command line. `summarize` spreads a general read over the document unless told."""
    from .config import SUMMARY_SPREAD, PotConfig, split_method_spec

    base, spec = split_method_spec(o.method or "infinipot")
    own = {"spread": SUMMARY_SPREAD} if kind == "summarize" and o.method is None else {}
    return PotConfig(method=base, **{**own, **spec, **o.pot}).validate()


def _stdin_piped() -> bool:
    """Whether text may come on stdin: a pipe, a file or a socket (not a terminal, not </dev/null)."""
    import stat

    try:
        if sys.stdin is None or sys.stdin.isatty():
            return False
    except (AttributeError, ValueError):
        return False
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (AttributeError, ValueError, OSError):
        return True  # a stream with no file behind it (text handed in by a caller)
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode) or stat.S_ISSOCK(mode)


# ---- the job ------------------------------------------------------------------------------------------
def run_job(kind: str, sources: list[str], question: Optional[str], o: Options):
    """kind: "ask" | "summarize" | "read" | "chat" (read, then return a chat.ReadState for the chat loop)."""
    from .display import Display
    from .documents import open_source
    from .config import PotConfig
    from .engine import Engine
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

        check_save_target(o.save_pot, sources, o.force)

    # Open every source and check a pot file (its data against its checksum) before loading the model: bad
    # input fails fast.
    opened = [open_source(p, o.format, notice=_waiting_notice(o)) for p in sources]
    checked = None
    if o.load_pot:
        from .potfile import check_pot

        checked = check_pot(o.load_pot)

    display = Display(mode="quiet" if o.quiet else "auto", stream=sys.stderr)

    def warn(text: str) -> None:
        """Warnings reach stderr even with -q (which silences only the progress display)."""
        display.message(f"warning: {text}", style="warning", always=True)
    t_start = time.perf_counter()
    with display:
        from .model import dtype_warning, fingerprint, load_model
        from .threads import configure

        configure()  # $INFINIPOT_THREADS, else torch's default capped (threads.py); torch loads only now

        from .model import load_tokenizer

        # The tokenizer first: the checks that count tokens (the catalyst's room in the pot, the question
        # against the model's window) fail before the weights load.
        tok, window = load_tokenizer(o.model, progress=lambda m: display.message(m))
        P = Prompts(tok)
        # catalyst for reading: CaP-Q (the question) for ask, CaP-G (or --catalyst) otherwise
        if o.catalyst:
            cat_kind, cat_text = "text", o.catalyst
        elif kind == "ask":
            cat_kind, cat_text = "question", question
        else:
            cat_kind, cat_text = "general", None
        cat_ids, cat_focus = P.catalyst(cat_kind, cat_text)
        cfg = PotConfig.from_saved(checked[0].get("config") or {}) if checked else pot_config(o, kind)
        _check_prompt_room(cfg, len(cat_ids) if sources else 0, cat_kind, bool(o.load_pot),
                           len(P.ask(question)[0]) if kind == "ask" else 0, window,
                           0 if o.load_pot else len(P.header_ids()))

        lm = load_model(o.model, o.device, o.dtype, progress=lambda m: display.message(m), tokenizer=tok)
        slow = dtype_warning(lm.device, lm.dtype)
        if slow:
            warn(slow)

        records: list[SourceRecord] = []
        meta_in: dict = {}
        if o.load_pot:
            from .potfile import load_pot, question_mismatch

            engine, meta_in = load_pot(o.load_pot, lm.model, lm.tokenizer, expect_model_name=lm.name,
                                       on_event=display.on_event, checked=checked)
            if kind in ("ask", "chat"):
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
            engine = Engine(lm.model, lm.tokenizer, cfg, catalyst_ids=cat_ids, catalyst_focus=cat_focus,
                            on_event=display.on_event)
            engine.pin(P.header_ids())

        def save_meta() -> dict:
            if sources or not o.load_pot:
                catalyst = {"kind": cat_kind, "text": cat_text}
            else:
                catalyst = meta_in.get("catalyst") or {"kind": "general", "text": None}
            return {"sources": [r.as_json() for r in records], "model": lm.name, "catalyst": catalyst}

        def save() -> None:
            from .potfile import save_pot

            n = save_pot(o.save_pot, engine, save_meta(), sources=sources, force=o.force)
            display.message(f"pot saved to {o.save_pot} ({n / 1e6:.1f} MB)")

        def save_partial() -> None:
            """Checkpoint an interrupted read: never over an existing file (a finished pot, or anything else)."""
            from .interrupts import deferred_interrupt
            from .potfile import partial_target, save_pot

            if engine.tokens_read <= read_before:
                display.message("interrupted before anything was read: no pot saved", always=True)
                return
            with deferred_interrupt():  # a second Ctrl-C or SIGTERM waits for the checkpoint
                target = partial_target(o.save_pot)
                n = save_pot(target, engine, save_meta(), sources=sources, force=o.force)
            display.message(f"partial pot saved to {target} ({n / 1e6:.1f} MB); resume with --load-pot {target} "
                            "and the same source", always=True)

        read_before = engine.tokens_read

        prompt, focus = P.ask(question or "") if kind == "ask" else (P.summary_ids(), None)
        t_read = time.perf_counter()
        try:
            for i, src in enumerate(opened):
                engine.expect(prompt if kind == "ask" and i == len(opened) - 1 else None, focus)
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
                save_partial()
            raise
        read_s = time.perf_counter() - t_read
        if engine.cfg.method == "full" and len(engine.pot) > _window(lm.model):
            warn(f"the document ({len(engine.pot)} tokens) is longer than the model's window "
                 f"({_window(lm.model)}); --method full reads it anyway")
        if o.save_pot:
            save()

        answer = ""
        grounded = None  # the answer's evidence and support check (ask)
        summary = None
        t_ans = time.perf_counter()
        if kind == "summarize":
            from .summary import write_summary

            summary = write_summary(engine, P, o.max_new_tokens, None if o.json_out else _stdout_writer(),
                                    source=records[0].path if len(records) == 1 else None)
            answer = summary.text
            if not o.json_out:
                sys.stdout.write("\n")
                sys.stdout.flush()
        elif kind == "ask":
            from .controls import answer_controls
            from .grounding import ground

            # a question ends at its first sentence (or a loop) and decodes without repeating itself; the
            # answer is checked against the document (grounding.py) before stdout shows it
            c = answer_controls(kind, lm.tokenizer, o.max_new_tokens)
            stopper = c.stopper
            answer = engine.answer(prompt, c.mode, max_new_tokens=c.limit, stop_ids=P.stop_ids(kind), on_text=None,
                                   focus=focus, should_stop=stopper.should_stop, logits_fn=c.guard)
            answer = stopper.trim(answer)
            grounded = ground(engine, prompt, question or "", answer, [(r.path, r.tokens) for r in records])
            answer = grounded.answer
            if not o.json_out:
                sys.stdout.write(answer + "\n")
                sys.stdout.flush()
                if not o.quiet:
                    for line in grounded.lines():
                        display.message(line, style="dim")
        answer_s = time.perf_counter() - t_ans

    if kind == "chat":
        from .chat import ReadState

        return ReadState(lm=lm, prompts=P, engine=engine, save_meta=save_meta, sources=[r.path for r in records])
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
                    "policy": engine.cfg.policy_block()},
            "timings": {"load_s": round(lm.load_s, 3), "read_s": round(read_s, 3),
                        "distill_s": round(t.cap + t.nuc + t.select + t.rerotate, 3),
                        "answer_s": round(answer_s, 3), "total_s": round(time.perf_counter() - t_start, 3),
                        "detail": t.as_dict()},
            "fingerprint": fingerprint(lm.model, lm.tokenizer),
            "version": __version__,
        }
        if grounded is not None:  # "evidence": [{text, source, page | chapter | section | line}], "guess"
            out.update(grounded.as_json())
        if kind == "read":
            out["pot_file"] = o.save_pot
        if summary is not None:
            out["overview"] = summary.overview
            out["key_points"] = summary.key_points
        sys.stdout.write(json.dumps(out, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def _waiting_notice(o: Options):
    """What to call when opening a source waits (a FIFO with no writer): a line on stderr, unless -q away from a
    terminal."""
    if o.quiet and not sys.stderr.isatty():
        return None

    def say(text: str) -> None:
        sys.stderr.write(f"infinipot: {text}\n")
        sys.stderr.flush()
    return say


def _check_prompt_room(cfg, catalyst_len: int, cat_kind: str, loaded: bool, ask_len: int, window: int,
                       header_len: int) -> None:
    """Before the model loads: what the pot keeps must exceed the pinned header, the catalyst must leave the pot
    room to read, and the question must fit the model's window beside the pot. A too-long question is named as
    the problem (a loaded pot's size is fixed)."""
    from .config import catalyst_room
    from .scoring.policies import make_policy

    if cfg.bounded and header_len:
        if header_len >= cfg.keep:
            raise UsageError(f"--keep ({cfg.keep}) must exceed the pinned header ({header_len} tokens)")
        if cfg.final_keep and cfg.final_keep <= header_len:
            raise UsageError(f"--final-keep ({cfg.final_keep}) must exceed the pinned header ({header_len} tokens)")

    room = catalyst_room(cfg)
    if room is not None and catalyst_len and make_policy(cfg).catalyst == "prompt" and catalyst_len > room:
        if cat_kind in ("question", "text"):
            what = "question" if cat_kind == "question" else "--catalyst text"
            fix = f"shorten the {what}" + ("" if loaded else " (or raise --pot-size)")
            raise UsageError(f"the {what} is too long: {catalyst_len:,} tokens as a catalyst, and a pot of "
                             f"{cfg.size:,} entries keeping {cfg.keep:,} has room for {room:,}; {fix}")
        raise UsageError(f"the pot is too small: pot size {cfg.size} - keep {cfg.keep} - catalyst {catalyst_len} "
                         "tokens leaves no room to read; raise --pot-size or lower --keep")
    if window and ask_len and ask_len > window // 2:
        raise UsageError(f"the question is too long: {ask_len:,} tokens, and the model's window is {window:,}; "
                         "shorten the question")


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
            if os.path.isfile(args[0]):
                raise UsageError(f"{args[0]!r} is a file and text is piped on stdin: which is the document? "
                                 f"Give the question too (infinipot ask {args[0]} \"QUESTION\"), or read stdin "
                                 "with infinipot ask - \"QUESTION\"")
            return ["-"], args[0]
        if os.path.exists(args[0]):
            raise UsageError(f"missing QUESTION: infinipot ask {args[0]} \"your question\"")
        raise UsageError("no SOURCE given and nothing piped on stdin: infinipot ask SOURCE \"your question\"")
    if len(args) == 2:
        if args[0] != "-" and not os.path.exists(args[0]) and os.path.exists(args[1]):
            raise UsageError(f"no such file: {args[0]!r}; the document comes first, then the question: "
                             f"infinipot ask {args[1]} \"{args[0]}\"")
        return [args[0]], args[1]
    raise UsageError("too many arguments: to read several sources use -i/--input for each, then the question")


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
    max_new_tokens: int = typer.Option(128, "--max-new-tokens", metavar="N", help="Longest answer in tokens."),
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
    max_new_tokens: int = typer.Option(384, "--max-new-tokens", metavar="N", help="Longest summary in tokens."),
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
@reading_command
def chat(
    sources: List[str] = typer.Argument(None, metavar="[SOURCE]...", help="Documents to read once (or --load-pot FILE)."),
    max_new_tokens: int = typer.Option(128, "--max-new-tokens", help="Longest answer in tokens."),
    *, o: Options,
):
    """Read SOURCE once with the general catalyst (CaP-G), then answer questions from the same pot: a prompt on a
    terminal (/save FILE, /inspect, /help; Ctrl-D leaves), or one question per line on stdin and one answer per
    line on stdout when stdin is not a terminal."""
    from .chat import run_chat

    srcs = list(o.inputs) + list(sources or [])
    if "-" in srcs:
        raise UsageError("chat reads its questions from stdin: give the document as a file, not '-'")
    if not srcs and not o.load_pot:
        raise UsageError("missing SOURCE: infinipot chat SOURCE... or infinipot chat --load-pot FILE")
    code = run_chat(run_job("chat", srcs, None, o), o)
    if code:
        raise typer.Exit(code)


@app.command()
def inspect(
    pot_file: str = typer.Argument(..., metavar="FILE", help="A pot file written by --save-pot."),
    json_out: bool = typer.Option(False, "--json", help="Print the facts as one JSON object on stdout."),
    model: Optional[str] = typer.Option(None, "-m", "--model", envvar="INFINIPOT_MODEL",
                                        help="Tokenizer to reconstruct the remembered text (default: the pot's model)."),
):
    """Show what a saved pot holds: model, sizes, sources, and the passages it still remembers."""
    with handle_errors():
        from rich.console import Console

        from .inspect import inspect_pot, render_inspect
        from .potfile import read_meta

        meta = read_meta(pot_file)
        tokenizer = _tokenizer_for(model or meta.get("model"))
        info = inspect_pot(pot_file, tokenizer)
        if json_out:
            sys.stdout.write(json.dumps(info, ensure_ascii=False) + "\n")
        else:
            render_inspect(info, Console(file=sys.stdout, highlight=False))


@app.command()
def models(json_out: bool = typer.Option(False, "--json", help="Print the list as one JSON object on stdout.")):
    """List the models -m can use here: built-in, Hugging Face cache, converted GGUF files, Ollama's store."""
    with handle_errors():
        from .models import models_command

        models_command(json_out, sys.stdout)


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
    app()


if __name__ == "__main__":
    main()
