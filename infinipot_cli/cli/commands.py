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
from dataclasses import dataclass, field
from inspect import Parameter, signature
from typing import List, Optional

import typer

from .. import __version__
from ..errors import InfinipotError, UsageError
from ..interrupts import Terminated, terminate_like_interrupt
from .options import model_option


class _OneLineErrors(typer.core.TyperGroup):
    """The option parser's usage errors (a bad value, an unknown option, a missing argument) as one line on
    stderr, like every other error, instead of a boxed panel; `infinipot` alone still shows its help."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as e:  # the parser's errors (click's ClickException) derive from it
            ctx = getattr(e, "ctx", None)
            if type(e).__name__ == "NoArgsIsHelpError":  # `infinipot` (or `infinipot bench`) alone: its help,
                sys.exit(e.exit_code)                     # already shown
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            json_out = "--json" in (sys.argv[1:] if args is None else list(args))
            sys.exit(_fail(" ".join(e.format_message().split()) + hint, getattr(e, "exit_code", 2), json_out).exit_code)
        except typer.Abort:
            sys.exit(_fail("aborted", 1).exit_code)
        except InfinipotError as e:  # one a command let through (a bench's missing extra): one line all the same
            json_out = "--json" in (sys.argv[1:] if args is None else list(args))
            sys.exit(_fail(str(e), e.exit_code, json_out).exit_code)
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=_OneLineErrors,
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


def _fail(msg: str, code: int, json_out: bool = False) -> typer.Exit:
    """The error's line on stderr; with --json also one JSON object on stdout ({"error", "exit_code"}), so a script
    reading stdout gets an object whatever happened. Returns the Exit to raise."""
    _err(msg)
    if json_out:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.write(json.dumps({"error": msg, "exit_code": code}, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    return typer.Exit(code)


@contextlib.contextmanager
def handle_errors(json_out: bool = False):
    """One clear line on stderr and the right exit code, never a traceback (`json_out`: and one JSON object on
    stdout). SIGTERM stops like Ctrl-C (a read with --save-pot checkpoints) and exits 143."""
    try:
        with terminate_like_interrupt():
            yield
    except typer.Exit:
        raise
    except InfinipotError as e:
        raise _fail(str(e), e.exit_code, json_out)
    except Terminated:
        raise _fail("terminated", 143, json_out)
    except KeyboardInterrupt:
        raise _fail("interrupted", 130, json_out)
    except BrokenPipeError:
        raise typer.Exit(0)
    except MemoryError:
        raise _fail("out of memory: try a smaller --pot-size or --chunk", 1, json_out)
    except Exception as e:  # noqa: BLE001
        if os.environ.get("INFINIPOT_DEBUG"):
            raise
        raise _fail(f"unexpected {type(e).__name__}: {e} (set INFINIPOT_DEBUG=1 for a traceback)", 1, json_out)


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
    no_cache: bool = False
    inputs: List[str] = field(default_factory=list)
    pot: dict = field(default_factory=dict)


# ---- the options every reading command takes ------------------------------------------------------------
# ask, summarize and read take the same options; each command's own signature lists only its arguments and its
# --max-new-tokens. `reading_command` adds these to the signature Typer reads and hands them to the command as
# one Options. The pot knobs (--pot-size, --keep, ...) come from their declaration in config.py.


def _reading_options() -> list[tuple[str, object, object]]:
    from ..pot.config import cli_knobs, method_help
    from .knob_options import knob_option
    from .options import P_IO, P_POT, device_option, dtype_option, model_option

    return [
        ("inputs", Optional[List[str]], typer.Option(
            None, "-i", "--input", rich_help_panel=P_IO, metavar="SOURCE",
            help="A source to read (repeatable; read in order into one pot). '-' is stdin.")),
        *[knob_option(f, P_POT) for f in cli_knobs()],
        ("method", Optional[str], typer.Option(None, "--method", show_default=False, rich_help_panel=P_POT,
                                               metavar="SPEC", help=method_help() + " Default: infinipot.")),
        ("catalyst", Optional[str], typer.Option(
            None, "--catalyst", rich_help_panel=P_POT, metavar="TEXT",
            help="Your own catalyst prompt text (default: the question for ask, a general one otherwise).")),
        ("model", Optional[str], model_option()),
        ("device", Optional[str], device_option()),
        ("dtype", Optional[str], dtype_option()),
        ("format", str, typer.Option("auto", "--format", rich_help_panel=P_IO, metavar="FORMAT",
                                     help="Input format: auto, pdf, epub, html or text.")),
        ("load_pot", Optional[str], typer.Option(
            None, "--load-pot", rich_help_panel=P_IO, metavar="FILE",
            help="Start from a saved pot: ask without re-reading, or read more into it.")),
        ("save_pot", Optional[str], typer.Option(None, "--save-pot", rich_help_panel=P_IO, metavar="FILE",
                                                 help="Write the distilled pot to FILE (atomically).")),
        ("no_cache", bool, typer.Option(False, "--no-cache", rich_help_panel=P_IO, metavar="", help=(
            "Read the document again: neither answer from the pot cache nor store into it (`infinipot cache`)."))),
        ("force", bool, typer.Option(False, "--force", rich_help_panel=P_IO, metavar="",
                                     help="Let --save-pot replace an existing file that is not a pot.")),
        ("json_out", bool, typer.Option(False, "--json", rich_help_panel=P_IO, metavar="",
                                        help="Print one JSON object on stdout at the end (nothing else).")),
        ("quiet", bool, typer.Option(False, "-q", "--quiet", rich_help_panel=P_IO, metavar="", help="No progress display.")),
    ]


READING_OPTIONS = _reading_options()


def _options(**kw) -> Options:
    """Options from the command line, checked before anything heavy is loaded (bad input fails in milliseconds)."""
    from ..pot.config import default
    from .knob_options import pop_knobs
    from ..runtime.switch import decode_mode

    decode_mode()  # a bad $INFINIPOT_DECODE fails here, not after the model loads
    pot = pop_knobs(kw)
    if kw.get("inputs") is None:
        kw["inputs"] = []
    o = Options(**kw, pot=pot)
    if o.load_pot and (o.pot or o.method):
        _drop_settings_the_pot_has(o)
    if not o.load_pot:
        cfg = pot_config(o)
        if cfg.bounded and cfg.size > HUGE_POT:
            sys.stderr.write(f"infinipot: warning: --pot-size {cfg.size} is far beyond what a pot needs; memory and "
                             f"answer time grow with it (the default is {default('size')})\n")
    if o.format not in ("auto", "pdf", "epub", "html", "text"):
        raise UsageError(f"unknown --format {o.format!r}; choose auto, pdf, epub, html or text")
    if o.max_new_tokens <= 0:
        raise UsageError("--max-new-tokens must be positive")
    return o


def _drop_settings_the_pot_has(o: Options) -> None:
    """With --load-pot, pot settings given again with the values the pot was read with are accepted (and
    dropped); a different value is refused: a loaded pot keeps the settings it was read with."""
    from ..pot.config import PotConfig, cli_knobs, split_method_spec
    from ..pot.potfile import read_meta

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
    from ..pot.config import SUMMARY_SPREAD, PotConfig

    own = {"spread": SUMMARY_SPREAD} if kind == "summarize" and o.method is None else {}
    return PotConfig.resolve(o.method, {**own, **o.pot})


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
def run_job(kind: str, sources: list[str], question: Optional[str], o: Options, overview: Optional[bool] = None):
    """Run a reading command (session.run) and print its result: the answer streamed to stdout, or one JSON
    object with --json. kind: "ask" | "summarize" | "read" | "chat" (returns the session for the chat loop)."""
    from .display import Display
    from ..session import Job, run

    job = Job(kind=kind, sources=list(sources), question=question, pot=None if o.load_pot else pot_config(o, kind),
              load_pot=o.load_pot, save_pot=o.save_pot, force=o.force, model=o.model, device=o.device,
              dtype=o.dtype, format=o.format, catalyst=o.catalyst, max_new_tokens=o.max_new_tokens,
              overview=overview, cache=not o.no_cache, notice=_waiting_notice(o))
    display = Display(mode="quiet" if o.quiet else "auto", stream=sys.stderr)
    result = run(job, display, on_text=None if o.json_out or kind not in ("ask", "summarize") else _stdout_writer())
    if kind == "chat":
        return result.session
    if o.json_out:
        sys.stdout.write(json.dumps(result_json(result, kind, o), ensure_ascii=False) + "\n")
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


def result_json(result, kind: str, o: Options) -> dict:
    """The --json object: answer, model, method, tokens_read, sources, pot{...}, timings{...}, fingerprint, version
    (and pot_file for `read`)."""
    from ..runtime.loading import fingerprint

    s = result.session
    eng, lm = s.engine, s.lm
    cfg, t = eng.cfg, eng.timings
    answer = result.answer
    out = {
        "answer": answer.text if answer else "",
        "model": lm.name,
        "method": cfg.method,
        "tokens_read": eng.tokens_read,
        "sources": [r.as_json() for r in s.records],
        "pot": {"size": cfg.size if cfg.bounded else None, "keep": cfg.keep, "entries": len(eng.pot),
                "peak_entries": eng.pot.peak_entries, "cycles": eng.cycles, "kv_bytes": eng.pot.kv_bytes(),
                "alpha": cfg.alpha, "policy": cfg.policy_block()},
        "timings": {"load_s": round(lm.load_s, 3), "read_s": round(result.read_s, 3),
                    "distill_s": round(t.cap + t.nuc + t.select + t.rerotate, 3),
                    "answer_s": round(answer.seconds if answer else 0.0, 3), "total_s": round(result.total_s, 3),
                    "detail": t.as_dict()},
        "fingerprint": fingerprint(lm.model, lm.tokenizer),
        "version": __version__,
    }
    if answer is not None and answer.grounded is not None:  # "evidence": [{text, source, page | ...}], "guess"
        out.update(answer.grounded.as_json())
    if eng.focus is not None and eng.focus.pos >= 0:  # `ask DOC Q`: the question's attention while reading
        out["focus"] = {"where": eng.focus_where, "token": eng.focus.pos}
    if result.cache is not None:  # {"hit": true, "key", "age_s", "read_s", "tokens_read"} or {"hit": false, ...}
        out["cache"] = result.cache
    if kind == "read":
        out["pot_file"] = o.save_pot
    if answer is not None and answer.summary is not None:
        out["overview"] = answer.summary.overview
        out["key_points"] = answer.summary.key_points
        out["overview_withheld"] = answer.summary.dropped
    return out


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
        with handle_errors(json_out=bool(kw.get("json_out"))):
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
    max_new_tokens: int = typer.Option(384, "--max-new-tokens", metavar="N", help="Longest overview in tokens."),
    overview: Optional[bool] = typer.Option(None, "--overview/--no-overview", show_default=False, help=(
        "After the key points, the model's own overview too. Default: not with the built-in model (too small to "
        "add to the key points), yes with other models.")),
    *, o: Options,
):
    """Read SOURCE through the pot with the general catalyst (CaP-G) and write its key points, part by part."""
    srcs = list(o.inputs) + list(sources or [])
    if not srcs and not o.load_pot and _stdin_piped():
        srcs = ["-"]
    run_job("summarize", srcs, None, o, overview=overview)


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
    with handle_errors(json_out):
        from rich.console import Console

        from .pot_report import inspect_pot, render_inspect
        from ..pot.potfile import read_meta

        meta = read_meta(pot_file)
        tokenizer = _tokenizer_for(model or meta.get("model"))
        info = inspect_pot(pot_file, tokenizer)
        if json_out:
            sys.stdout.write(json.dumps(info, ensure_ascii=False) + "\n")
        else:
            render_inspect(info, Console(file=sys.stdout, highlight=False))


@app.command()
def models(json_out: bool = typer.Option(False, "--json", help="Print the list as one JSON object on stdout."),
           compile_step: bool = typer.Option(False, "--compile", help=(
               "Instead of listing: build the compiled answer step for the model (-m, default the built-in one; "
               "Llama, Mistral, Qwen2/3, Phi-3, Gemma 3): the same answer tokens ~1.7x faster on the CPU; once per "
               "model structure, ~30 s, needs a C++ compiler.")),
           model: Optional[str] = model_option()):
    """List the models -m can use here: built-in, Hugging Face cache, converted GGUF files, Ollama's store."""
    with handle_errors(json_out):
        from ..runtime.switch import decode_mode

        decode_mode()  # a bad $INFINIPOT_DECODE: one line, exit 2
        from ..runtime.catalogue import check_cache_dir

        check_cache_dir(write=compile_step)  # $INFINIPOT_CACHE a file (or read-only, to build into): exit 2
        if compile_step:
            _compile_step(model)
            return
        from ..runtime.catalogue import models_command

        models_command(json_out, sys.stdout)


def _compile_step(model: Optional[str]) -> None:
    """`models --compile`: build the model's compiled decode step (compiled_step.py) unless it is built."""
    from ..runtime import compiled_step, decode_step
    from ..errors import ModelError
    from ..runtime.loading import load_model
    from ..runtime.switch import ENV, decode_mode
    from ..runtime.threads import configure

    if decode_mode() != "compiled":  # the libraries are built for the 4-bit layers that mode loads
        raise UsageError(f"{ENV}={decode_mode()} answers without the compiled step: unset it (or set it to compiled) "
                         "to build the step")
    configure()  # the reading commands' thread count: the attention kernels' check is per thread count
    lm = load_model(model, device="cpu")
    step = decode_step.for_model(lm.model)
    if step is None:
        raise ModelError(f"{lm.name}: no compiled answer step for this architecture (answers use the model's forward)")
    paths = compiled_step.library_paths(step)
    if not all(p.is_file() for p in paths.values()):
        sys.stderr.write(f"building the compiled answer step for {lm.name} (once, about 30 s)…\n")
    try:
        compiled_step.build(step)  # what is missing: the libraries, the attention kernels' check at these threads
    except Exception as e:  # noqa: BLE001 - no compiler, an export failure: answers stay eager
        raise ModelError(f"could not build the compiled answer step: {type(e).__name__}: "
                         f"{(str(e).splitlines() or [''])[0][:200]}") from e
    sys.stdout.write("".join(f"{p}\n" for p in paths.values()))


@app.command("cache")
def cache(
    clear: bool = typer.Option(False, "--clear", metavar="", help="Remove every cached pot."),
    remove: Optional[str] = typer.Option(None, "--remove", metavar="KEY", help="Remove the cached pot whose key "
                                         "starts with KEY."),
    json_out: bool = typer.Option(False, "--json", metavar="", help="Print the list as one JSON object on stdout."),
):
    """List the pots cached by ask, summarize and chat (sources, tokens, read time, size, age, model), or remove
    them. A later command on the same document, model and settings answers from its pot without reading; reads
    under 3 s are not cached; --no-cache reads again. The cache's size: $INFINIPOT_CACHE_BUDGET (default
    4G, the least recently used pots dropped first; 0 turns it off)."""
    from ..pot.pot_cache import cache_command

    with handle_errors(json_out):
        from ..runtime.catalogue import check_cache_dir

        if clear and remove is not None:
            raise UsageError("give --clear or --remove KEY, not both")
        check_cache_dir(write=clear or remove is not None)
        cache_command(clear, remove, json_out, sys.stdout)


def _tokenizer_for(name: Optional[str]):
    """The tokenizer alone (cheap) to decode remembered passages; None if it cannot be found."""
    from transformers import AutoTokenizer

    from ..runtime.loading import resolve_model_path

    try:
        _, path = resolve_model_path(name)
        return AutoTokenizer.from_pretrained(str(path))
    except Exception:  # noqa: BLE001 - inspect still works without text
        return None


def _version_cb(value: bool):
    if value:
        sys.stdout.write(f"infinipot {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version_cb, is_eager=True,
                                       help="Print the version and exit.")):
    """Read documents of any length with a small local LLM in a fixed amount of memory (InfiniPot)."""
