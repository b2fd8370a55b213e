"""A reading session: the whole life of one read, as every command drives it (InfiniPot's CCD loop, §3.2).

    s = Session.start(lm, cfg, catalyst)   or   Session.resume(lm, "book.pot")    # a new pot, or a saved one
    s.expect(question)                                                            # the question, if known now
    s.read(source) ...                     or   s.read_tokens(pieces)             # documents, or bench haystacks
    answer = s.ask(question)               or   s.summarize()                     # an Answer, the pot restored
    s.save("book.pot")                                                            # a pot file, atomically

`run(job)` is that life for a reading command (`ask`, `summarize`, `read`, `chat`), from a validated `Job`
(cli/commands.py parses the command line into one); `bench needle` and `bench speed` (evaluate/) drive the same steps
with their haystacks and timers, `bench qa` and `bench summary` with the corpus's documents. The engine
(engine.py) does the reading, distilling and answering underneath.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable

from .pot.engine import Engine
from .errors import UsageError
from .pot.prompts import Prompts
from .pot import reader
from .pot.reader import SourceRecord
from .answer.stopping import Stopper, StopStream


@dataclass
class Answer:
    """One answer from the pot: what the CLI prints (or puts in --json), chat shows and the bench scores."""

    text: str                       # what to show: the answer (grounded: NOT_SAID when the document lacks it)
    kind: str                       # "question" | "summary"
    question: str | None = None
    seconds: float = 0.0
    recalled: int = 0               # tokens the answer recalled from the archive (a question the pot was not read with)
    grounded: object = None         # grounding.Grounded: the evidence passages and the model's own guess (ask)
    summary: object = None          # summary.Summary: the overview and the key points (summarize)
    how: str = "written"            # a question's answer: "written" (the model's), "extracted" (a span of the
    #                                 document), "quoted" (a sentence of it), "not-said" (withheld: grounding.py)
    short: str = ""                 # what answers: the model's sentence, the span, or the quoted sentence
    quote: dict | None = None       # the document sentence an extracted or quoted answer shows


@dataclass
class Catalyst:
    """What the pot is distilled for while reading (§3.3.1): "question" (CaP-Q), "general" (CaP-G) or "text"."""

    kind: str = "general"
    text: str | None = None

    def as_json(self) -> dict:
        return {"kind": self.kind, "text": self.text}


class Session:
    """A model, a pot (the engine) and what was read into it (one SourceRecord per source)."""

    def __init__(self, lm, engine: Engine, catalyst: Catalyst, records: list[SourceRecord] | None = None,
                 loaded: dict | None = None):
        self.lm = lm                     # model.LoadedModel: model, tokenizer, name, device, dtype, load_s
        self.engine = engine
        self.prompts = Prompts(lm.tokenizer)
        self.catalyst = catalyst
        self.records: list[SourceRecord] = list(records or [])
        self.loaded = loaded or {}       # a resumed pot's metadata
        self.read_s = 0.0

    # ---- load or resume -------------------------------------------------------------------------------
    @classmethod
    def start(cls, lm, cfg, catalyst: Catalyst | None = None, on_event=None) -> "Session":
        """A new pot read with `cfg` (a PotConfig), the pinned header forwarded."""
        catalyst = catalyst or Catalyst()
        prompts = Prompts(lm.tokenizer)
        ids, focus = prompts.catalyst(catalyst.kind, catalyst.text)
        engine = Engine(lm.model, lm.tokenizer, cfg, catalyst_ids=ids, catalyst_focus=focus, on_event=on_event)
        engine.pin(prompts.header_ids())
        if catalyst.kind == "question":  # the live display follows the question's attention (scoring/focus.py),
            from .answer.evidence import locate, where_label  # and the evidence shows what it found (record.py)
            from .pot.scoring.focus import Focus
            from .pot.scoring.record import RelevanceRecord

            engine.record = RelevanceRecord(question=catalyst.text) if catalyst.text else None

            engine.focus = Focus()
            engine.focus_label = lambda pos: where_label(locate(engine, pos, ())[1])  # a text's exact line
        return cls(lm, engine, catalyst)

    @classmethod
    def resume(cls, lm, path: str, on_event=None, checked: tuple | None = None) -> "Session":
        """The pot saved in `path` (checked to be this model's; `checked`: potfile.check_pot's result, when the
        file was already checked), with the records of the sources it read."""
        from .pot.potfile import load_pot

        engine, meta = load_pot(path, lm.model, lm.tokenizer, expect_model_name=lm.name, on_event=on_event,
                                checked=checked)
        cat = meta.get("catalyst") or {}
        records = [SourceRecord.from_json(r) for r in meta.get("sources", [])]
        return cls(lm, engine, Catalyst(cat.get("kind") or "general", cat.get("text")), records, meta)

    def read_with(self, catalyst: Catalyst) -> None:
        """Read what comes next with another catalyst (more sources into a resumed pot)."""
        self.catalyst = catalyst
        self.engine.set_catalyst(*self.prompts.catalyst(catalyst.kind, catalyst.text))

    # ---- read -----------------------------------------------------------------------------------------
    def expect(self, question: str | None, answer_prefix: str = "") -> None:
        """The question is known while reading: the read's last forward carries it (Engine.expect)."""
        self.engine.expect(*self.prompts.ask(question, answer_prefix) if question else (None, None))

    def already_read(self, source) -> SourceRecord | None:
        """The record of the same source in a resumed pot (same content hash, else same path and size)."""
        for r in self.records:
            if source.path != "-" and r.path == source.path and r.size == source.size_bytes:
                if r.sha256 is None or source.content_hash is None or r.sha256 == source.content_hash:
                    return r
        return None

    def read(self, source, label: str = "", skip_tokens: int = 0, progress=None) -> SourceRecord:
        """Read one document source into the pot (from token `skip_tokens` on: a resumed read); its record is
        kept also when the read is interrupted (it then says where it stopped)."""
        rec = SourceRecord(path=source.path, format=source.format, size=source.size_bytes)
        self.records.append(rec)
        t0 = time.perf_counter()
        try:
            reader.read_source(self.engine, self.lm.tokenizer, source, rec, label=label, skip_tokens=skip_tokens,
                        progress=progress)
        finally:
            self.read_s += time.perf_counter() - t0
        return rec

    def read_tokens(self, pieces: Iterable[list[int] | tuple[list[int], str]], source: str | None = None) -> None:
        """Read token pieces with no source to open behind them: the bench's haystacks (lists of ids), or a
        document's pieces already cut ((ids, where) pairs, bench summary's head and tail), `source` the document's
        path: recorded as the pot's source, as Session.read records it, so a summary's key points name it."""
        t0 = time.perf_counter()
        n = 0
        for piece in pieces:
            ids, where = piece if isinstance(piece, tuple) else (piece, "")
            self.engine.feed(ids, where)
            n += len(ids)
        self.engine.finish()
        self.read_s += time.perf_counter() - t0
        if source is not None:
            self.records.append(SourceRecord(path=source, format="tokens", tokens=n))

    # ---- answer ---------------------------------------------------------------------------------------
    def _check_question(self, prompt_len: int, limit: int) -> None:
        """A question whose prompt (`prompt_len` tokens) the model's window, or the pot beside its pinned header and
        the answer's `limit` tokens, cannot hold is refused as `ask` refuses it before reading: "the question is too
        long", a UsageError (exit 2), not the engine's "the pot cannot hold the prompt" (`chat` asks after the read,
        the pot's size fixed: a 100 KB line piped to it)."""
        from .pot.answer_steps import MIN_ANSWER_ROOM

        eng, cfg = self.engine, self.engine.cfg
        config = getattr(eng.model, "config", None)
        config = config.get_text_config() if hasattr(config, "get_text_config") else config
        _check_window(prompt_len, int(getattr(config, "max_position_embeddings", 0) or 0))
        most = cfg.size - eng.pot.n_pinned - limit - MIN_ANSWER_ROOM - 1  # as Engine.answer_room
        if cfg.bounded and prompt_len > most:
            raise UsageError(f"the question is too long: {prompt_len:,} tokens, and a pot of {cfg.size:,} entries "
                             f"has room for {max(0, most):,} beside its pinned header and the answer ({limit} "
                             "tokens); shorten the question")

    def ask(self, question: str, max_new_tokens: int = 128, on_text: Callable[[str], None] | None = None,
            answer_prefix: str = "", stop: bool = True, guard: bool = True, grounded: bool = False,
            from_pot: bool = False) -> Answer:
        """Answer `question`; the engine restores the pot afterwards.

        An InfiniPot pot holding the whole document as read (its entries + archive) is answered from the
        question's best passages and checked against them (answering.py); other pots (the paper's per-head
        selection, the baselines), and `from_pot`, from the pot's own entries (Engine.answer, §3.2).
        `on_text`: the answer as it comes (from the pot: streamed; from passages: once decided); `stop`: it
        ends at its first sentence or a loop (else exactly `max_new_tokens`, for timing); `guard`: decoded
        without repeating itself (repetition.py); `grounded`: with its evidence, and a written answer naming
        what the document does not contain withheld (grounding.py)."""
        from .answer.controls import answer_controls

        prompt, focus = self.prompts.ask(question, answer_prefix)
        c = answer_controls("ask", self.lm.tokenizer, max_new_tokens, prefix=answer_prefix)
        self._check_question(len(prompt), c.limit)
        stopper = c.stopper if stop else Stopper("none")
        stop_ids = self.prompts.stop_ids("question") if stop else set()
        controls = dict(stop_ids=stop_ids, should_stop=stopper.should_stop if stop else None,
                        logits_fn=c.guard if guard else None)
        t0 = time.perf_counter()
        reply = None
        if not from_pot and self.from_document():
            from .answer.answering import answer as reply_to
            from .answer.judge import judges

            def write(src, ids) -> str:
                return stopper.trim(self.engine.answer_over(src, ids, prompt, c.limit, **controls)).strip()

            room = self.engine.answer_room(len(prompt), c.limit)
            rec = self.engine.record
            reply = reply_to(self.engine, self.prompts, question, self._sources(), write, room,
                             judging=judges(self.engine.cfg.retrieve, self.lm.name),
                             read=rec if rec is not None and rec.question == question
                             and self.engine.cfg.retrieve != "words" else None)  # words: the text alone
        if reply is not None:
            ans = Answer(text=reply.text, kind="question", question=question, how=reply.how, short=reply.short,
                         quote=reply.quote)
            unsupported, found = reply.unsupported, reply.evidence
            written = reply.written
            if on_text is not None:
                on_text(reply.text)
        else:
            stream = StopStream(stopper, on_text) if on_text else None
            raw = self.engine.answer(prompt, c.mode, max_new_tokens=c.limit, on_text=stream, focus=focus,
                                     **controls)
            written = stream.finish() if stream else stopper.trim(raw).strip()
            ans = Answer(text=written, kind="question", question=question, short=written,
                         recalled=self.engine.recalled)
            unsupported = found = None
        ans.seconds = time.perf_counter() - t0
        if grounded:
            from .answer.grounding import ground

            g = ground(self.engine, prompt, question, written, self._sources(), how=ans.how, shown=ans.text,
                       unsupported=unsupported, evidence=found)
            g.short, g.quote = ans.short, ans.quote
            ans.grounded, ans.text, ans.how = g, g.answer, g.how
        return ans

    def from_document(self) -> bool:
        """Whether questions are answered from passages of the whole document as read: an InfiniPot pot (with
        the archive's recall on) that holds every token read."""
        eng = self.engine
        return bool(eng.policy.pot_options and eng.cfg.bounded and eng.cfg.recall and eng.tokens_read)

    def _sources(self) -> list[tuple[str, int]]:
        return [(r.path, r.tokens) for r in self.records]

    def summarize(self, max_new_tokens: int = 384, on_text: Callable[[str], None] | None = None,
                  overview: bool | None = None) -> Answer:
        """Key points and, with `overview`, the model's overview of what the pot holds (summary.py), streamed to
        `on_text` as they form. `overview` None: an overview with any model but the built-in one (whose overview
        added a part the key points missed on one document of six, docs/results/summary.md)."""
        from .runtime.loading import BUILTIN_NAME
        from .answer.summary import write_summary

        if overview is None:
            overview = self.lm.name != BUILTIN_NAME
        t0 = time.perf_counter()
        source = self.records[0].path if len(self.records) == 1 else None
        summary = write_summary(self.engine, self.prompts, max_new_tokens, on_text, source=source, overview=overview)
        return Answer(text=summary.text, kind="summary", seconds=time.perf_counter() - t0, summary=summary)

    # ---- save -----------------------------------------------------------------------------------------
    def meta(self) -> dict:
        """What a saved pot records beside the engine's state: the sources, the model, the catalyst."""
        return {"sources": [r.as_json() for r in self.records], "model": self.lm.name,
                "catalyst": self.catalyst.as_json()}

    def save(self, path: str | os.PathLike, sources: list[str] | tuple = (), force: bool = False) -> int:
        """Write the pot to `path` atomically (never over one of the `sources` being read, nor over a file that is
        not a pot unless `force`); returns its size in bytes."""
        from .pot.potfile import save_pot

        return save_pot(path, self.engine, self.meta(), sources=sources, force=force)

    @property
    def sources(self) -> list[str]:
        return [r.path for r in self.records]


# ---- a reading command, from its validated options to its result -----------------------------------------
@dataclass
class Job:
    """One reading command, validated (cli/commands.py builds it): what to read, what to answer, where to save."""

    kind: str                                  # "ask" | "summarize" | "read" | "chat"
    sources: list[str] = field(default_factory=list)
    question: str | None = None
    pot: object = None                         # the PotConfig of a new pot (None with load_pot)
    load_pot: str | None = None
    save_pot: str | None = None
    force: bool = False                        # --save-pot may replace a file that is not a pot
    model: str | None = None
    device: str | None = None
    dtype: str | None = None
    format: str = "auto"
    catalyst: str | None = None                # --catalyst TEXT
    max_new_tokens: int = 256
    overview: bool | None = None               # summarize: the model's overview too (None: Session.summarize's default)
    cache: bool = True                         # look the pot up in the pot cache and store it there (pot_cache.py)
    notice: Callable[[str], None] | None = None  # told when opening a source waits (a FIFO with no writer)

    def check(self) -> None:
        """Usage errors found before anything is opened or loaded."""
        if self.kind == "read" and not self.save_pot:
            raise UsageError("`infinipot read` needs --save-pot FILE (it only builds a pot)")
        if not self.sources and not self.load_pot:
            raise UsageError("no input: give a SOURCE file, '-' for stdin, -i FILE, pipe text in, or --load-pot FILE")
        if self.sources.count("-") > 1:
            raise UsageError("stdin ('-') can be read only once")
        from .runtime.catalogue import check_cache_dir

        check_cache_dir()  # $INFINIPOT_CACHE a file or read-only: one line now, not an OSError after the read
        if self.save_pot:  # a folder, a device, a missing or read-only folder: say so before reading anything
            from .pot.potfile import check_save_target
            from .scratch import remove_stale

            target = check_save_target(self.save_pot, self.sources, self.force)
            remove_stale(target.parent if str(target.parent) else ".")  # what saves killed outright left there

    def reading_catalyst(self) -> Catalyst:
        """CaP-Q (the question) for ask, CaP-G (or --catalyst) otherwise."""
        if self.catalyst:
            return Catalyst("text", self.catalyst)
        return Catalyst("question", self.question) if self.kind == "ask" else Catalyst("general")


@dataclass
class Result:
    """What a reading command leaves: the session (its pot and records), the answer, the times."""

    session: Session
    answer: Answer | None
    read_s: float
    total_s: float
    cache: dict | None = None                  # --json "cache": {hit, key, ...} (pot_cache.py); None: not used


def run(job: Job, display, on_text: Callable[[str], None] | None = None) -> Result:
    """Open the sources, load the model, start or resume the pot (or take it from the pot cache, pot_cache.py:
    then nothing is read), read, store it in the cache, save, answer (streamed to `on_text`, then a line end);
    `display` (display.Display) shows progress and warnings on stderr."""
    from .documents import open_source
    from .pot.pot_cache import PotCache, off_json
    from .units import fmt_bytes

    job.check()
    cache = PotCache.plan(job)  # None: this command neither looks up nor stores; stdin from a file is hashed now
    # every source opened and a pot file checked (its data against its checksum) before the model loads; a pipe
    # is kept on disk first where the cache is used, so that its hash is known before it is read
    spool = cache.spool_folder() if cache is not None else None
    opened = [open_source(p, job.format, notice=job.notice, spool=spool) for p in job.sources]
    checked = None
    if job.load_pot:
        from .pot.potfile import check_pot

        checked = check_pot(job.load_pot)
    t_start = time.perf_counter()
    with display:
        lm = _load_model(job, display, checked)
        if job.load_pot:
            display.set_step("loading the pot")
            session = Session.resume(lm, job.load_pot, on_event=display.on_event, checked=checked)
            if job.kind in ("ask", "chat"):
                from .pot.potfile import question_mismatch

                mismatch = question_mismatch(session.loaded, job.question or "")
                if mismatch:
                    display.warn(mismatch)
            if opened:
                session.read_with(job.reading_catalyst())
        else:
            session = None
            if cache is not None:
                display.set_step("looking the document up in the pot cache")
                session = cache.find(lm, opened, display, Session.resume, on_event=display.on_event)
            if session is None:
                display.set_step("starting the pot (its first forward pass)")
                session = Session.start(lm, job.pot, job.reading_catalyst(), on_event=display.on_event)
        hit = cache is not None and cache.hit is not None
        if hit:  # the pot came from the cache (its line said so): no "starting the pot" line, before or after
            display.set_step("answering from the cached pot", said=True)

        def save() -> None:
            n = session.save(job.save_pot, job.sources, job.force)
            display.message(f"pot saved to {job.save_pot} ({fmt_bytes(n)})")

        read_before = session.engine.tokens_read

        def save_partial() -> None:
            """Checkpoint an interrupted read: never over an existing file (a finished pot, or anything else)."""
            from .interrupts import deferred_interrupt
            from .pot.potfile import partial_target

            if session.engine.tokens_read <= read_before:
                display.message("interrupted before anything was read: no pot saved", always=True)
                return
            with deferred_interrupt():  # a second Ctrl-C or SIGTERM waits for the checkpoint
                target = partial_target(job.save_pot)
                n = session.save(target, job.sources, job.force)
            display.message(f"partial pot saved to {target} ({fmt_bytes(n)}); resume with --load-pot {target} "
                            "and the same source", always=True)

        try:
            if not hit:
                _read_all(session, opened, job, display)
            else:
                for src in opened:  # not read: a pipe kept on disk goes now
                    src.close()
        except KeyboardInterrupt:
            if job.save_pot:
                save_partial()
            raise
        _warn_past_window(session, display)
        if cache is not None and not hit:
            cache.store(session, opened, display)
        if job.save_pot:
            save()

        answer = None
        if job.kind == "ask":  # checked against the document before stdout shows it, then its evidence
            answer = session.ask(job.question or "", max_new_tokens=job.max_new_tokens, grounded=True)
            if on_text is not None:
                on_text(answer.text + "\n")
                for line in answer.grounded.lines():
                    display.result(line, style="dim")
        elif job.kind == "summarize":
            answer = session.summarize(max_new_tokens=job.max_new_tokens, on_text=on_text, overview=job.overview)
            if on_text is not None:
                on_text("\n")
                for d in answer.summary.dropped:
                    display.result(f"withheld from the overview (the document does not contain "
                                   f"{', '.join(d['unsupported'][:3])}): {d['text']}", style="dim")
    return Result(session=session, answer=answer, read_s=session.read_s, total_s=time.perf_counter() - t_start,
                  cache=cache.as_json() if cache is not None else off_json(job))


def _load_model(job: Job, display, checked: tuple | None):
    """The tokenizer first, so the checks that count tokens fail before the weights load; then the model."""
    from .pot.config import PotConfig
    from .runtime.loading import dtype_warning, load_model, load_tokenizer
    from .runtime.threads import configure

    def told(message: str) -> None:  # what resolving the model says, e.g. that it converts it once
        display.message(message)
        if message.startswith(("converting", "assembling")):  # the live view's step; said once in plain mode
            display.set_step("converting the model (once)", said=True)

    display.set_step("loading torch")
    configure()  # $INFINIPOT_THREADS, else torch's default capped (threads.py); torch loads only now
    display.set_step("loading the tokenizer")
    tok, window = load_tokenizer(job.model, progress=told)
    if checked:  # a pot made by another model is refused before this one's weights load
        from .runtime.loading import config_fingerprint
        from .pot.potfile import check_made_by

        early = config_fingerprint(job.model, tok)
        if early is not None:
            check_made_by(job.load_pot, checked[0], early[1], early[0])
    prompts = Prompts(tok)
    cat = job.reading_catalyst()
    cfg = PotConfig.from_saved(checked[0].get("config") or {}) if checked else job.pot
    _check_room(cfg, len(prompts.catalyst(cat.kind, cat.text)[0]) if job.sources else 0, cat.kind,
                bool(job.load_pot), len(prompts.ask(job.question or "")[0]) if job.kind == "ask" else 0, window,
                0 if job.load_pot else len(prompts.header_ids()))
    _check_answer_room(job, cfg, prompts, tok, checked[0]["n_pinned"] if checked else len(prompts.header_ids()))
    display.set_step("loading the model")
    lm = load_model(job.model, job.device, job.dtype, progress=told, tokenizer=tok)
    slow = dtype_warning(lm.device, lm.dtype)
    if slow:
        display.warn(slow)
    return lm


def _check_room(cfg, catalyst_len: int, cat_kind: str, loaded: bool, ask_len: int, window: int,
                header_len: int) -> None:
    """Before the model loads: what the pot keeps must exceed the pinned header, the catalyst must leave the pot
    room to read, and the question must fit the model's window beside the pot. A too-long question is named as
    the problem (a loaded pot's size is fixed)."""
    from .pot.config import check_catalyst_room
    from .pot.scoring.policies import make_policy

    if cfg.bounded and header_len:
        if header_len >= cfg.keep:
            raise UsageError(f"{cfg.keep_named()} must exceed the pinned header ({header_len} tokens)")
        if cfg.final_keep and cfg.final_keep <= header_len:
            raise UsageError(f"--final-keep ({cfg.final_keep}) must exceed the pinned header ({header_len} tokens)")
    if catalyst_len and make_policy(cfg).catalyst == "prompt":
        named = {"question": "question", "text": "--catalyst text"}.get(cat_kind, "")
        check_catalyst_room(cfg, catalyst_len, named, loaded)
    _check_window(ask_len, window)


def _check_window(ask_len: int, window: int) -> None:
    """A question's prompt (`ask_len` tokens) may take at most half the model's `window` (0: unknown)."""
    if window and ask_len and ask_len > window // 2:
        raise UsageError(f"the question is too long: {ask_len:,} tokens, and the model's window is {window:,}; "
                         "shorten the question")


def _check_answer_room(job: Job, cfg, prompts: Prompts, tok, pinned: int) -> None:
    """Before the model loads: the answer's prompt and --max-new-tokens must fit the pot beside its pinned header
    (the engine's own check, Engine._final_target, would refuse them only after the read)."""
    from .answer.controls import answer_controls
    from .pot.answer_steps import MIN_ANSWER_ROOM

    if job.kind not in ("ask", "summarize", "chat") or not cfg.bounded:
        return
    kind = "summarize" if job.kind == "summarize" else "ask"
    prompt = len(prompts.summary_ids() if kind == "summarize" else prompts.ask(job.question or "")[0])
    grace = answer_controls(kind, tok, job.max_new_tokens).limit - job.max_new_tokens  # a summary's last sentence
    most = cfg.size - prompt - pinned - MIN_ANSWER_ROOM - 1 - grace  # as Engine.answer_room
    if job.max_new_tokens > most:
        fix = "lower --max-new-tokens" + ("" if job.load_pot else " or raise --pot-size")
        raise UsageError(f"--max-new-tokens {job.max_new_tokens} does not fit the pot: {cfg.size:,} entries hold the "
                         f"prompt ({prompt} tokens) and at most {max(0, most):,} answer tokens; {fix}")


def _read_all(session: Session, opened: list, job: Job, display) -> None:
    """Read every source in order; a source the resumed pot read whole is skipped, one it stopped in is
    read on from where it stopped. With `ask`, the last source's read carries the question (expect)."""
    for i, src in enumerate(opened):
        session.expect(job.question if job.kind == "ask" and i == len(opened) - 1 else None)
        label = os.path.basename(src.path) if len(opened) > 1 else ""
        skip = 0
        prev = session.already_read(src)
        if prev is not None:
            if prev.stopped_at is None:
                display.warn(f"{src.path} is already in the pot; not reading it again")
                continue
            skip = prev.stopped_at
            session.records.remove(prev)
            display.set_step(f"finding token {skip:,} of {src.name}, where the read stopped")  # the pot is loaded:
            display.message(f"resuming {src.path} at token {skip:,}")  # no "loading the pot" line after this one
        display.set_source(f"{src.name}" + (f" ({i + 1}/{len(opened)})" if len(opened) > 1 else ""))
        progress = _Progress.of(opened, i)
        display.set_total(None, progress_fn=progress.fraction)  # the ETA, from how far into the sources
        session.read(src, label=label, skip_tokens=skip, progress=progress.update)
        for w in getattr(src, "warnings", []):
            display.warn(f"{src.name}: {w}")


def _warn_past_window(session: Session, display) -> None:
    eng = session.engine
    window = int(getattr(eng.model.config, "max_position_embeddings", 0) or 0) or 1 << 62
    if eng.cfg.method == "full" and len(eng.pot) > window:
        display.warn(f"the document ({len(eng.pot)} tokens) is longer than the model's window ({window}); "
                     "--method full reads it anyway")


class _Progress:
    """How far reading has got through all the sources (by their sizes when all are known, else by count)."""

    def __init__(self, before: float, weight: float):
        self.before, self.weight, self.f = before, weight, None

    @classmethod
    def of(cls, opened: list, i: int) -> "_Progress":
        sizes = [s.size_bytes for s in opened]
        if all(sizes) and len(sizes) > 1:
            total = float(sum(sizes))
            return cls(sum(sizes[:i]) / total, sizes[i] / total)
        return cls(i / len(opened), 1 / len(opened))

    def update(self, f: float) -> None:
        self.f = f

    def fraction(self) -> float | None:
        return None if self.f is None else self.before + self.weight * self.f
