"""`infinipot chat`: read once, then answer many questions from the same pot.

The source is read (or the pot loaded) by session.run with the general catalyst (CaP-G, InfiniPot §3.3.1:
the questions are not known while reading); then a loop answers each question from that pot:

- stdin is a terminal: a prompt with line editing and history (the `readline` module), each answer checked
  against the document and printed as `ask` prints it (the answer on stdout, its evidence on stderr); `/save
  FILE`, `/inspect`, `/help`, `/quit`; Ctrl-D leaves (exit 0); Ctrl-C cancels the answer being written, and at
  the prompt leaves (exit 130).
- stdin is not a terminal: one line on stdout for every line on stdin, so a script can pair them: the answer
  to a question (its newlines made spaces), an empty line for an empty line, for a /command (its output goes
  to stderr) and for a failed question (with one line on stderr); /quit ends; exit 1 if a question failed --
  ``printf 'q1\\nq2\\n' | infinipot chat --load-pot book.pot``.

Session.ask (Engine.answer) undoes what one answer changed in the pot (its narrowing with the question, `final_keep`), so
every question starts from the pot as read: the answers do not depend on the order of the questions, and
/save writes the pot as read.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from typing import TYPE_CHECKING, Callable, TextIO

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
            raise InfinipotError(f"unknown command {name}; /help lists them")
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
    def run_lines(self, lines) -> int:
        """Questions one per line (stdin not a terminal): one line on `out` for each line in, the answer or an
        empty line (module docstring). Returns the exit code: 0, or 1 if a question failed."""
        failed = False
        for raw in lines:
            line = raw.strip()
            if not line:  # one line out for every line in: a blank line gets a blank line (or {"question": ""})
                self._print_line({"question": "", "answer": ""}, "")
                continue
            if line.startswith("/"):
                try:
                    if not self.command(line, show=self.err):
                        break
                except InfinipotError as e:
                    self._error(str(e))
                    failed = True
                self._print_line({"command": line}, "")  # its output went to stderr
                continue
            try:
                self._print_answer(line, self.answer(line))
            except InfinipotError as e:
                self._error(str(e))
                self._print_answer(line, None, str(e))
                failed = True
            except Exception as e:  # noqa: BLE001 - one question's failure does not end the others
                self._error(f"unexpected {type(e).__name__}: {e}")
                self._print_answer(line, None, f"{type(e).__name__}: {e}")
                failed = True
        return 1 if failed else 0

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


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


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
        return chat.run_lines(stdin)
    eng = session.engine
    what = ", ".join(os.path.basename(s) for s in session.sources) or (o.load_pot or "the pot")
    banner = "" if o.quiet else (f"Ask about {what} ({eng.tokens_read:,} tokens read, {len(eng.pot):,} kept). "
                                 "/help for commands, Ctrl-D to leave.")
    return chat.run_terminal(_terminal_reader(out, err), banner)
