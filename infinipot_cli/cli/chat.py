"""`infinipot chat`: read once, then answer many questions from the same pot.

The source is read (or the pot loaded) by session.run with the general catalyst (CaP-G, InfiniPot §3.3.1:
the questions are not known while reading); then a loop answers each question from that pot:

- stdin is a terminal: a prompt with line editing and history (the `readline` module), each answer checked
  against the document and printed as `ask` prints it (the answer on stdout, its evidence on stderr); `/save
  FILE`, `/inspect`, `/help`, `/quit`; Ctrl-D leaves (exit 0); Ctrl-C cancels the answer being written, and at
  the prompt leaves (exit 130).
- stdin is not a terminal: one line on stdout for every line on stdin, so a script can pair them: the answer
  to a question (its newlines made spaces), an empty line for an empty line, for a /command (its output goes
  to stderr), for a failed question (with one line on stderr) and for /quit, which ends: the lines after it are
  not read, and one line on stderr says how many were left. The exit code says whether every line was done: 0,
  else the exit code of the first line that was not, as `ask` would exit on it: 2 for a usage error (a question too
  long for the pot as read, a /save target refused), 1 if a question failed or a command could not do what it
  names (/save could not write); the other lines are answered all the same. An unknown /command names nothing to
  do, so it gets a warning on stderr and leaves the exit code alone --
  ``printf 'q1\\nq2\\n' | infinipot chat --load-pot book.pot``.

Session.ask (Engine.answer) undoes what one answer changed in the pot (its narrowing with the question, `final_keep`), so
every question starts from the pot as read: the answers do not depend on the order of the questions, and
/save writes the pot as read.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import sys
import tempfile
import time
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, TextIO

from ..errors import InfinipotError
from ..units import fmt_bytes

if TYPE_CHECKING:
    from ..session import Session

HELP = """\
Ask a question about what was read, or:
  /save FILE   write the pot to FILE (load it later with --load-pot FILE)
  /inspect     show what the pot holds and remembers
  /help        this help
  /quit        leave (or Ctrl-D)
Ctrl-C stops the answer being written."""

REST_WAIT_S = 1.0  # after /quit, how long the lines still coming on a pipe are counted (a writer may never close it)


class UnknownCommand(InfinipotError):
    """A line starting with "/" that names no command."""


class FdLines:
    """The lines of a file descriptor (piped stdin), read as they come, that can count what is left unread without
    waiting on a writer that keeps the pipe open (:meth:`count_rest`). Bytes that are not UTF-8 are replaced."""

    def __init__(self, fd: int):
        self.fd = fd
        self._buf = b""
        self._eof = False

    def _fill(self) -> None:
        data = os.read(self.fd, 1 << 16)
        if data:
            self._buf += data
        else:
            self._eof = True

    def __iter__(self) -> Iterator[str]:
        while True:
            cut = self._buf.find(b"\n")
            if cut >= 0:
                line, self._buf = self._buf[:cut + 1], self._buf[cut + 1:]
                yield line.decode("utf-8", "replace")
            elif self._eof:
                if self._buf:
                    line, self._buf = self._buf, b""
                    yield line.decode("utf-8", "replace")
                return
            else:
                self._fill()

    def count_rest(self, wait_s: float | None = None) -> tuple[int, bool]:
        """(lines not read, whether the input ended): what is buffered, then what arrives within `wait_s`
        (default REST_WAIT_S)."""
        deadline = time.monotonic() + (REST_WAIT_S if wait_s is None else wait_s)
        while not self._eof:
            left = deadline - time.monotonic()
            try:
                ready = left > 0 and select.select([self.fd], [], [], left)[0]
            except (OSError, ValueError):  # a descriptor select cannot watch: read on (a regular file ends)
                ready = True
            if not ready:
                break
            self._fill()
        n = self._buf.count(b"\n") + (1 if self._eof and self._buf and not self._buf.endswith(b"\n") else 0)
        return n, self._eof


def count_rest(lines: Iterable[str]) -> tuple[int, bool]:
    """How many lines `lines` still holds (FdLines: without waiting long on an open pipe), and whether it ended."""
    if isinstance(lines, FdLines):
        return lines.count_rest()
    return sum(1 for _ in lines), True


class ChatSession:
    """Questions and commands against one read pot. I/O goes through the streams given (tests pass StringIO)."""

    def __init__(self, session: Session, max_new_tokens: int = 128, out: TextIO | None = None,
                 err: TextIO | None = None, json_out: bool = False):
        self.session = session
        self.engine = session.engine
        self.max_new_tokens = max_new_tokens
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.json_out = json_out
        self.engine.listen(None)  # the reading display is closed; answers are printed here
        self.engine.finish()         # tokens a loaded pot still had pending: forward them once, now

    # ---- answering ----------------------------------------------------------------------------------
    def answer(self, question: str):
        """The answer to `question` from the pot as read, checked against the document and with its evidence,
        as `ask` gives it (session.Answer; its `grounded` holds the evidence); the engine restores the pot
        afterwards, also when the answer fails or is interrupted."""
        return self.session.ask(question, max_new_tokens=self.max_new_tokens, grounded=True)

    # ---- commands -----------------------------------------------------------------------------------
    def command(self, line: str, show: TextIO) -> bool:
        """Run a /command; False when it asks to leave. Output of /inspect and /help goes to `show`."""
        name, _, arg = line.strip().partition(" ")
        name, arg = name.lower(), arg.strip()
        if name in ("/quit", "/exit", "/q"):
            return False
        if name in ("/help", "/?", "/h"):
            show.write(HELP + "\n")
        elif name == "/save":
            if not arg:
                raise InfinipotError("/save needs a file name: /save FILE")
            n = self.save(os.path.expanduser(arg))
            self.err.write(f"pot saved to {arg} ({fmt_bytes(n)})\n")
        elif name == "/inspect":
            self.inspect(show)
        else:
            raise UnknownCommand(f"unknown command {name}; /help lists them")
        show.flush()
        self.err.flush()
        return True

    def save(self, path: str) -> int:
        return self.session.save(path)

    def inspect(self, show: TextIO) -> None:
        """inspect_pot / render_inspect on the pot as read (written to a temporary file first)."""
        from rich.console import Console

        from .pot_report import inspect_pot, render_inspect

        folder = tempfile.mkdtemp(prefix="infinipot-chat-")
        try:
            path = os.path.join(folder, "chat.pot")
            self.save(path)
            info = inspect_pot(path, self.session.lm.tokenizer, verify=False)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        info["path"] = "this chat's pot"
        render_inspect(info, Console(file=show, highlight=False, force_terminal=_isatty(show) or None))

    # ---- the two loops ------------------------------------------------------------------------------
    def run_lines(self, lines: Iterable[str]) -> int:
        """Questions one per line (stdin not a terminal): one line on `out` for each line in, the answer or an
        empty line (module docstring). Returns the exit code: 0, else the first failed line's (its error's: 2 for
        a question too long for the pot, as `ask` exits; 1 for a question or a command that failed)."""
        code = 0  # the exit code of the first line that failed
        lines = iter(lines) if not isinstance(lines, FdLines) else lines
        for n, raw in enumerate(lines, 1):
            line = raw.strip()
            if not line:  # one line out for every line in: a blank line gets a blank line (or {"question": ""})
                self._print_line({"question": "", "answer": ""}, "")
                continue
            if line.startswith("/"):
                try:
                    go_on = self.command(line, show=self.err)
                except UnknownCommand as e:  # nothing was asked that could fail: the exit code stays
                    self._warn(f"line {n}: {e}")
                    go_on = True
                except InfinipotError as e:
                    self._error(str(e))
                    code, go_on = code or e.exit_code, True
                self._print_line({"command": line}, "")  # its output went to stderr
                if not go_on:
                    self._left_unread(line, n, lines)
                    break
                continue
            try:
                self._print_answer(line, self.answer(line))
            except InfinipotError as e:  # a question too long for the pot is a usage error (2), as in `ask`
                self._error(str(e))
                self._print_answer(line, None, str(e))
                code = code or e.exit_code
            except Exception as e:  # noqa: BLE001 - one question's failure does not end the others
                self._error(f"unexpected {type(e).__name__}: {e}")
                self._print_answer(line, None, f"{type(e).__name__}: {e}")
                code = code or 1
        return code

    def run_terminal(self, read_line: Callable[[str], str], banner: str = "") -> int:
        """The interactive loop. `read_line(prompt)` is `input` (with readline loaded for history and line
        editing). Returns 0 on Ctrl-D or /quit; raises KeyboardInterrupt for Ctrl-C at the prompt."""
        if banner:
            self.err.write(banner + "\n")
            self.err.flush()
        while True:
            try:
                line = read_line("? ").strip()
            except EOFError:
                self.out.write("\n")
                self.out.flush()
                return 0
            if not line:
                continue
            if line.startswith("/"):
                try:
                    if not self.command(line, show=self.out):
                        return 0
                except UnknownCommand as e:
                    self._warn(str(e))
                except InfinipotError as e:
                    self._error(str(e))
                continue
            try:
                self._print_answer(line, self.answer(line))
            except KeyboardInterrupt:
                self.out.write("\n")
                self.out.flush()
                self.err.write("(answer stopped)\n")
                self.err.flush()
            except InfinipotError as e:
                if not self.json_out:
                    self.out.write("\n")
                self._error(str(e))
            except Exception as e:  # noqa: BLE001
                self._error(f"unexpected {type(e).__name__}: {e}")

    # ---- output -------------------------------------------------------------------------------------
    def _print_answer(self, question: str, answer, error: str | None = None) -> None:
        """One answer line on `out` (a JSON object with --json: question, answer, evidence, guess); its
        evidence on `err`, as `ask` shows it."""
        grounded = getattr(answer, "grounded", None)
        if self.json_out:
            obj = {"question": question, "error": error} if error is not None else {
                "question": question, **(grounded.as_json() if grounded else {"answer": answer.text})}
            self.out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        else:
            self.out.write(" ".join((answer.text if answer else "").split()) + "\n")
        self.out.flush()
        if grounded is not None and not self.json_out:
            for line in grounded.lines():
                self.err.write(line + "\n")
            self.err.flush()

    def _print_line(self, obj: dict, text: str) -> None:
        """One line on `out` that is no answer: `obj` as JSON with --json, else `text`."""
        self.out.write((json.dumps(obj, ensure_ascii=False) if self.json_out else text) + "\n")
        self.out.flush()

    def _error(self, msg: str) -> None:
        self.err.write(f"infinipot: error: {msg}\n")
        self.err.flush()

    def _warn(self, msg: str) -> None:
        self.err.write(f"infinipot: warning: {msg}\n")
        self.err.flush()

    def _left_unread(self, command: str, n: int, lines) -> None:
        """After /quit on line `n`: one line on stderr saying how many input lines were left unread (none: no
        line)."""
        left, ended = count_rest(lines)
        if left or not ended:
            more = "" if ended else " (stdin is still open: not read further)"
            self.err.write(f"infinipot: {command} on line {n}: {left} more input line{'' if left == 1 else 's'} "
                           f"left unread{more}\n")
            self.err.flush()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _lines_of(stdin) -> Iterable[str]:
    """Piped questions: the lines of its file descriptor (FdLines; nothing has read the stream before the chat
    loop) when it has one, else the stream's own lines (text handed in by a caller)."""
    try:
        return FdLines(stdin.fileno())
    except (AttributeError, ValueError, OSError):
        return stdin


def _terminal_reader(out: TextIO, err: TextIO) -> Callable[[str], str]:
    """`input` with readline's line editing and history; the prompt goes to stderr when stdout is not the
    terminal (so `infinipot chat doc > answers.txt` keeps prompts out of the file)."""
    with contextlib.suppress(ImportError):
        import readline  # noqa: F401 - importing it gives input() arrow keys and history

    if _isatty(out):
        return input

    def read(prompt: str) -> str:
        err.write(prompt)
        err.flush()
        return input()

    return read


def run_chat(session: Session, o, stdin: TextIO | None = None, out: TextIO | None = None,
             err: TextIO | None = None) -> int:
    """The chat loop after reading; returns the exit code (KeyboardInterrupt at the prompt propagates)."""
    stdin, out, err = stdin or sys.stdin, out or sys.stdout, err or sys.stderr
    chat = ChatSession(session, max_new_tokens=o.max_new_tokens, out=out, err=err, json_out=o.json_out)
    if not _isatty(stdin):
        return chat.run_lines(_lines_of(stdin))
    eng = session.engine
    what = ", ".join(os.path.basename(s) for s in session.sources) or (o.load_pot or "the pot")
    banner = "" if o.quiet else (f"Ask about {what} ({eng.tokens_read:,} tokens read, {len(eng.pot):,} kept). "
                                 "/help for commands, Ctrl-D to leave.")
    return chat.run_terminal(_terminal_reader(out, err), banner)
