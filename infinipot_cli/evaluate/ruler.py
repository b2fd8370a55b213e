"""`bench ruler`: RULER's synthetic tasks (ruler_tasks.py) read and answered as `infinipot ask` answers.

Each cell (task, length, sample) is generated once from the seed and read by every (method, flow) on the same
tokens. A read goes through `Session` exactly as the CLI's (start, expect in the direct flow, read, then
`ask(..., grounded=True)`): what is scored is what `ask` prints, the honesty check included (a withheld answer
scores what stdout shows, "The document does not seem to say."). `full` and `snapkv` are skipped as OOD when the
whole input does not fit the model's position range, as in `bench needle`.

Every record traces where the needles were (`needles`): for each inserted sentence (a niah needle, `answer`
when it holds a reference, else a distractor with another key; a vt chain link) and each reference value, the share of its tokens that the pot held
after the read (mean over heads, and the share of heads holding all of it) and the share in the text the answer
was written from (the passage found for the question, answering.py; from the pot: after the final narrowing and
any recall). `cause` then names why a reference is missing from the answer: `not seen` (none of it in that text:
not among the passages found, or evicted from the pot), `partial` (some of its tokens), `not answered` (seen
whole, not written), `cut short` (held whole, the answer hit its token budget), `withheld` (written, then withheld by
honesty.py), or `ok`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..pot.config import METHODS, UNBOUNDED, PotConfig, split_method_spec
from ..pot.prompts import Prompts
from ..session import Catalyst, Session
from .needle import FLOWS, flow_label, max_positions
from .progress import Progress, fmt_tokens
from .ruler_tasks import TASKS, Sample, generate, postprocess, score

LENGTHS = [4096, 8192, 16384, 32768, 65536, 131072]


@dataclass
class RulerConfig:
    tasks: list[str]
    lengths: list[int]
    methods: list[str]
    flows: list[str] = field(default_factory=lambda: ["direct"])
    samples: int = 1                  # samples per (task, length)
    seed: int = 0
    pot: dict = field(default_factory=dict)
    max_new_tokens: int | None = None  # None: RULER's budget per task (niah 128, vt 30, cwe 120, fwe 50)
    piece: int = 1024

    def pot_config(self, method: str) -> PotConfig:
        return PotConfig.resolve(method, self.pot)

    def describe(self) -> dict:
        d = {k: getattr(self, k) for k in ("tasks", "lengths", "methods", "flows", "samples", "seed",
                                           "max_new_tokens")}
        pot = PotConfig.resolve(None, self.pot)
        d.update({"pot_size": pot.size, "keep": pot.keep, "chunk": pot.chunk})
        return d


class Measure:
    """Token counts with the model's tokenizer: a text, and the frame around a document (the pinned header and
    the ask prompt with its answer prefix), which the length counts as RULER counts a chat template."""

    def __init__(self, tokenizer):
        self.tok = tokenizer
        self.prompts = Prompts(tokenizer)
        self.header = len(self.prompts.header_ids())

    def count(self, text: str) -> int:
        return len(self.tok(text, add_special_tokens=False)["input_ids"])

    def frame(self, question: str, prefix: str) -> int:
        return self.header + len(self.prompts.ask_ids(question, prefix))


def encode_document(tokenizer, sample: Sample) -> tuple[list[int], list[dict]]:
    """The document's token ids, and the token span [start, stop) of every needle sentence and reference value
    found in it (each occurrence of a value; a vt name occurs in two links)."""
    enc = tokenizer(sample.document, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), enc["offset_mapping"]
    starts = [a for a, _ in offsets]

    def span(a: int, b: int) -> tuple[int, int]:
        import bisect

        i = max(bisect.bisect_right(starts, a) - 1, 0)
        j = bisect.bisect_left(starts, b)
        return i, max(j, i + 1)

    spans = []
    for kind, texts in (("needle", sample.needles), ("value", sample.outputs)):
        for t in dict.fromkeys(texts):
            at = sample.document.find(t)
            while at >= 0:
                s, e = span(at, at + len(t))
                row = {"kind": kind, "text": t, "start": s, "stop": e}
                if kind == "needle":  # does it hold a reference, or is it a distractor (another key's)?
                    row["answer"] = any(o in t for o in sample.outputs)
                spans.append(row)
                at = sample.document.find(t, at + len(t))
    return ids, spans


def _held(pot, start: int, stop: int) -> dict:
    """Share of [start, stop)'s tokens per (layer, head), mean; and the share of heads that hold them all."""
    src = pot.src  # (L, H, S)
    n = stop - start
    counts = ((src >= start) & (src < stop)).sum(-1).float()  # (L, H)
    return {"share": round(float(counts.mean()) / n, 4), "whole": round(float((counts >= n).float().mean()), 4)}


def _seen(positions, start: int, stop: int) -> float:
    if positions is None:
        return 0.0
    return round(float(((positions >= start) & (positions < stop)).sum()) / (stop - start), 4)


def cause(ref: str, answer: str, guess: str, seen: float, hit_budget: bool) -> str:
    """Why `ref` is (not) in the answer shown (module docstring)."""
    if ref.lower() in answer.lower():
        return "ok"
    if ref.lower() in guess.lower():
        return "withheld"
    if seen >= 1.0:
        return "cut short" if hit_budget else "not answered"
    return "partial" if seen > 0 else "not seen"


def run_sample(lm, cfg: RulerConfig, sample: Sample, ids: list[int], spans: list[dict], method: str, flow: str,
               length: int, progress: Progress | None = None) -> dict:
    """Read one sample with one method in one flow and ask its question as `ask` does; the record."""
    pcfg = cfg.pot_config(method)
    max_new = cfg.max_new_tokens or sample.max_new_tokens
    prompts = Prompts(lm.tokenizer)
    rec: dict = {"task": sample.task, "index": sample.index, "length_target": length, "method": method, "flow": flow,
                 "tokens": len(ids), "outputs": sample.outputs, "question": sample.question,
                 "answer_prefix": sample.answer_prefix, "answer": None, "guess": None, "score": None,
                 "skipped": None, "pot_size": pcfg.size, "keep": pcfg.keep}
    header = prompts.header_ids()
    ask_ids = prompts.ask_ids(sample.question, sample.answer_prefix)
    limit = max_positions(lm.model)
    if split_method_spec(method)[0] in UNBOUNDED and limit and len(header) + len(ids) + len(ask_ids) + max_new > limit:
        rec["skipped"] = f"OOD: {fmt_tokens(length)} tokens exceed the model's {limit} positions"
        return rec

    def on_event(ev) -> None:
        if progress is not None and ev.kind == "read":
            progress.update(ev.tokens_read)

    catalyst = Catalyst("question", sample.question) if flow == "direct" else Catalyst("general")
    session = Session.start(lm, pcfg, catalyst, on_event=on_event)
    eng = session.engine
    if flow == "direct":
        session.expect(sample.question, sample.answer_prefix)
    session.read_tokens(ids[i:i + cfg.piece] for i in range(0, len(ids), cfg.piece))
    held_read = [_held(eng.pot, s["start"], s["stop"]) for s in spans]
    ans = session.ask(sample.question, max_new_tokens=max_new, answer_prefix=sample.answer_prefix, grounded=True)
    guess = ans.grounded.guess if ans.grounded is not None else ans.text
    positions = eng.answered_from[0] if eng.answered_from is not None else None
    hit_budget = len(lm.tokenizer(guess, add_special_tokens=False)["input_ids"]) >= max_new - 1
    needles = []
    for s, h in zip(spans, held_read):
        seen = _seen(positions, s["start"], s["stop"])
        row = {**s, "held_read": h, "seen": seen}
        if s["kind"] == "value":
            row["cause"] = cause(s["text"], ans.text, guess, seen, hit_budget)
        needles.append(row)
    causes = {}
    for ref in sample.outputs:  # one cause per reference: its best-kept occurrence
        rows = [r for r in needles if r["kind"] == "value" and r["text"] == ref]
        best = max(rows, key=lambda r: r["seen"]) if rows else None
        causes[ref] = cause(ref, ans.text, guess, best["seen"] if best else 0.0, hit_budget)
    rec.update({
        "answer": ans.text, "guess": guess, "withheld": ans.text != guess,
        "unsupported": list(ans.grounded.unsupported) if ans.grounded is not None else [],
        "score": round(score(sample.metric, ans.text, sample.outputs), 4),
        "guess_score": round(score(sample.metric, guess, sample.outputs), 4),
        "hit_budget": hit_budget, "needles": needles, "causes": causes, "recalled": ans.recalled,
        "length": eng.tokens_read, "cycles": eng.cycles, "peak_entries": eng.pot.peak_entries,
        "read_s": round(session.read_s, 3), "answer_s": round(ans.seconds, 3),
    })
    return rec


def run_ruler(lm, cfg: RulerConfig, progress: Progress | None = None,
              on_record: Callable[[dict], None] | None = None) -> list[dict]:
    """Every (length, task, sample), each read by every (method, flow) on the same tokens."""
    bad = [m for m in cfg.methods if split_method_spec(m)[0] not in METHODS]
    if bad:
        raise ValueError(f"unknown method(s) {bad}")
    measure = Measure(lm.tokenizer)
    sizes: dict = {}
    out = []
    for length in cfg.lengths:
        for task in cfg.tasks:
            for index in range(cfg.samples):
                sample = generate(task, length, cfg.seed, index, measure.count, measure.frame, sizes)
                ids, spans = encode_document(lm.tokenizer, sample)
                for method, flow in [(m, f) for m in cfg.methods for f in cfg.flows]:
                    if progress is not None:
                        progress.start(f"{flow_label(method, flow)} {fmt_tokens(length)} {task} #{index + 1}", len(ids))
                    rec = run_sample(lm, cfg, sample, ids, spans, method, flow, length, progress)
                    if progress is not None:
                        if rec["skipped"]:
                            progress.skip(rec["skipped"])
                        else:
                            progress.finish(f"{100 * rec['score']:.0f}: {postprocess(rec['answer'])[:90]!r} "
                                            f"(expected {', '.join(sample.outputs)[:60]})")
                    out.append(rec)
                    if on_record is not None:
                        on_record(rec)
    return out


def summarize(records: list[dict]) -> list[dict]:
    """RULER's score per (method · flow, task, length): the mean of the samples' scores x 100;
    [{method, flow, task, length, score, n, skipped}]."""
    cells: dict[tuple, dict] = {}
    for r in records:
        label = flow_label(r["method"], r.get("flow", "direct"))
        c = cells.setdefault((label, r["task"], r["length_target"]),
                             {"method": label, "flow": r.get("flow", "direct"), "task": r["task"],
                              "length": r["length_target"], "score": None, "n": 0, "skipped": None, "_s": []})
        if r["skipped"]:
            c["skipped"] = r["skipped"].split(":")[0]
            continue
        c["n"] += 1
        c["_s"].append(r["score"])
    for c in cells.values():
        s = c.pop("_s")
        c["score"] = round(100 * sum(s) / len(s), 2) if s else None
    return list(cells.values())


def averages(summary: list[dict]) -> dict[tuple[str, int], float | None]:
    """The RULER average per (method · flow, length): the mean of the task scores (None if any was skipped)."""
    by: dict[tuple, list] = {}
    for c in summary:
        by.setdefault((c["method"], c["length"]), []).append(c["score"])
    return {k: (round(sum(v) / len(v), 2) if v and all(x is not None for x in v) else None) for k, v in by.items()}


def cause_counts(records: list[dict]) -> dict[str, dict[str, int]]:
    """Per (method · flow): how many references ended in each cause."""
    out: dict[str, dict[str, int]] = {}
    for r in records:
        if r.get("skipped"):
            continue
        d = out.setdefault(flow_label(r["method"], r.get("flow", "direct")), {})
        for c in r.get("causes", {}).values():
            d[c] = d.get(c, 0) + 1
    return out


def markdown(summary: list[dict], records: list[dict], tasks: list[str], lengths: list[int]) -> str:
    """A table per method · flow as RULER prints it: tasks as columns, lengths as rows, then the average;
    then the causes of the missing references."""
    avg = averages(summary)
    cells = {(c["method"], c["task"], c["length"]): c for c in summary}
    labels = list(dict.fromkeys(c["method"] for c in summary))
    short = {t: t.replace("niah_", "") for t in tasks}
    lines = []
    for label in labels:
        lines += [f"**{label}**", "", "| length | " + " | ".join(short[t] for t in tasks) + " | average |",
                  "|---" * (len(tasks) + 2) + "|"]
        for n in lengths:
            row = []
            for t in tasks:
                c = cells.get((label, t, n))
                row.append("" if c is None else (f"{c['score']:.1f}" if c["score"] is not None else (c["skipped"] or "-")))
            a = avg.get((label, n))
            lines.append(f"| {fmt_tokens(n)} | " + " | ".join(row) + f" | {'' if a is None else f'{a:.1f}'} |")
        lines.append("")
    counts = cause_counts(records)
    if counts:
        names = ["ok", "withheld", "cut short", "not answered", "partial", "not seen"]
        lines += ["References by cause (see ruler.py):", "", "| method | " + " | ".join(names) + " |",
                  "|---" * (len(names) + 1) + "|"]
        for label, d in counts.items():
            lines.append(f"| {label} | " + " | ".join(str(d.get(k, 0)) for k in names) + " |")
        lines.append("")
    return "\n".join(lines) + "\n"


__all__ = ["RulerConfig", "LENGTHS", "FLOWS", "TASKS", "run_ruler", "summarize", "averages", "markdown"]
