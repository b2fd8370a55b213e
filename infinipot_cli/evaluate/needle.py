"""Needle in a Haystack (Kamradt 2023; InfiniPot Table 4 / Figure 5): method x length x depth x trial.

Each cell (length, depth, trial) draws one needle and one haystack from the seed; every method reads the
same tokens, so methods are compared on identical inputs. A run streams the haystack into the engine piece
by piece (nothing holds the whole document), then asks the question with an answer prefix. Unbounded
references (`full`, `snapkv`) are skipped as "OOD" when the document would not fit the model's position
range — the paper's Table 4 marks those cells the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..pot.config import METHODS, UNBOUNDED, PotConfig, split_method_spec
from ..pot.prompts import Prompts
from ..session import Catalyst, Session
from .haystack import Placement, haystack_units, token_pieces
from .needles import Needle, make_needle
from .progress import Progress, fmt_tokens


@dataclass
class NeedleConfig:
    methods: list[str]
    lengths: list[int]
    depths: list[float]
    trials: int = 1
    pot: dict = field(default_factory=dict)  # the pot knobs given (config.py: --pot-size, --keep, --chunk, ...)
    kinds: list[str] = field(default_factory=lambda: ["passkey", "name", "fact"])
    needle: Needle | None = None      # a fixed user needle instead of drawn ones
    haystack: str | None = None       # "python-docs", a text file, or None = the built-in varied haystack
    seed: int = 0
    max_new_tokens: int = 48         # answers end on their own (stopping.py): a budget, not a cut
    piece: int = 1024                 # tokens per engine.feed call
    trace: bool = False               # record per-distillation needle diagnostics (trace.py)
    flows: list[str] = field(default_factory=lambda: ["direct"])  # FLOWS: question known while reading, or not

    def pot_config(self, method: str | None = None) -> PotConfig:
        """The configuration `method` reads with: its spec and the knobs given, as `infinipot ask` resolves them."""
        return PotConfig.resolve(method, self.pot)

    def describe(self) -> dict:
        d = {k: getattr(self, k) for k in ("methods", "lengths", "depths", "trials")}
        pot = self.pot_config()
        d.update({"pot_size": pot.size, "keep": pot.keep, "chunk": pot.chunk})
        d.update({k: getattr(self, k) for k in ("kinds", "haystack", "seed", "max_new_tokens", "trace", "flows")})
        d["needle"] = self.needle.as_dict() if self.needle else None
        return d


# direct: the question is the catalyst while reading (CaP-Q), as `infinipot ask DOC "q"`;
# read-then-ask: read with the general catalyst (CaP-G, the question unknown, as `read --save-pot`), then ask
# from that state (as `ask --load-pot`): the pot, its archive of evicted sentences (archive.py) and recall.
FLOWS = ["direct", "read-then-ask"]


def parse_flows(spec: str) -> list[str]:
    from ..errors import UsageError

    flows = [f.strip().lower() for f in spec.split(",") if f.strip()]
    bad = [f for f in flows if f not in FLOWS]
    if bad or not flows:
        raise UsageError(f"--flow: unknown flow {', '.join(bad) or '(none)'}; choose from {', '.join(FLOWS)}")
    return list(dict.fromkeys(flows))


def flow_label(method: str, flow: str) -> str:
    """The row label of a (method, flow): the method for the direct flow, "method · flow" otherwise."""
    return method if flow == "direct" else f"{method} · {flow}"


def cell_needle(cfg: NeedleConfig, length: int, depth: float, trial: int) -> Needle:
    """The needle of one cell: the user's, or one drawn from the seed. Kinds rotate as a Latin square over
    (length, depth, trial), so every length and every depth sees every kind equally often."""
    if cfg.needle is not None:
        return cfg.needle
    li = cfg.lengths.index(length) if length in cfg.lengths else 0
    di = cfg.depths.index(depth) if depth in cfg.depths else 0
    kind = cfg.kinds[(li + di + trial) % len(cfg.kinds)]
    return make_needle(kind, f"{cfg.seed}:{length}:{depth}:{trial}")


def needle_held(pot, start: int, n: int) -> dict | None:
    """How much of the needle the pot holds when the question is answered.

    share: needle tokens per (layer, KV head), as a share of the needle, averaged over all heads;
    whole: share of heads that hold every needle token. None when the needle was not placed.
    """
    if start < 0 or n <= 0:
        return None
    src = pot.src  # (L, H, S) document position of every entry
    counts = ((src >= start) & (src < start + n)).sum(-1).float()  # (L, H)
    return {"share": round(float(counts.mean()) / n, 4), "whole": round(float((counts >= n).float().mean()), 4)}


def max_positions(model) -> int | None:
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    return getattr(cfg, "max_position_embeddings", None)


def run_trial(lm, prompts: Prompts, cfg: NeedleConfig, method: str, length: int, depth: float, trial: int,
              progress: Progress | None = None, flow: str = "direct") -> dict:
    """Read one haystack with one method and ask for the needle (`flow`: see FLOWS); the trial record."""
    needle = cell_needle(cfg, length, depth, trial)
    rec: dict = {"method": method, "flow": flow, "length_target": length, "length": 0, "depth": depth, "trial": trial,
                 "needle_kind": needle.kind, "needle": needle.text, "question": needle.question,
                 "expect": needle.expect, "answer_prefix": needle.answer_prefix, "answer": None, "correct": None,
                 "skipped": None}
    pcfg = cfg.pot_config(method)
    rec.update({"pot_size": pcfg.size, "keep": pcfg.keep, "chunk": pcfg.chunk})
    header = prompts.header_ids()
    ask, ask_focus = prompts.ask(needle.question, answer_prefix=needle.answer_prefix)
    limit = max_positions(lm.model)
    if split_method_spec(method)[0] in UNBOUNDED and limit and len(header) + length + len(ask) + cfg.max_new_tokens > limit:
        rec["skipped"] = f"OOD: {fmt_tokens(length)} tokens exceed the model's {limit} positions"
        return rec
    placement = Placement()
    tracer = None
    if cfg.trace:
        from .trace import NeedleTracer

        tracer = NeedleTracer(lm.tokenizer, placement, recent=pcfg.size - pcfg.keep if pcfg.bounded else 0)

    def on_event(ev) -> None:
        if progress is not None and ev.kind == "read":
            progress.update(ev.tokens_read)
        if tracer is not None:
            tracer.on_event(ev, eng)

    # direct: the question is the catalyst while reading (CaP-Q), as `infinipot ask`; read-then-ask: the general
    # catalyst (CaP-G), the question unknown while reading
    catalyst = Catalyst("question", needle.question) if flow == "direct" else Catalyst("general")
    session = Session.start(lm, pcfg, catalyst, on_event=on_event)
    eng = session.engine
    if flow == "direct":
        session.expect(needle.question, needle.answer_prefix)
    units = haystack_units(cfg.haystack, f"{cfg.seed}:{length}:{depth}:{trial}")
    session.read_tokens(token_pieces(units, lm.tokenizer, length, depth, needle.text, piece=cfg.piece,
                                     placement=placement))
    read_s = session.read_s
    held_read = needle_held(eng.pot, placement.needle_start, placement.needle_tokens)
    ans = session.ask(needle.question, max_new_tokens=cfg.max_new_tokens, answer_prefix=needle.answer_prefix,
                      guard=False)  # the model's own greedy answer, as measured so far
    answer, answer_s = ans.text, ans.seconds
    held = needle_held(eng.pot, placement.needle_start, placement.needle_tokens)
    archived = None
    if placement.needle_start >= 0 and placement.needle_tokens > 0:
        cov = eng.archive._covered
        a, b = placement.needle_start, placement.needle_start + placement.needle_tokens
        archived = round(float(cov[a:min(b, cov.numel())].sum()) / placement.needle_tokens, 4) if cov.numel() > a else 0.0
    rec.update({
        "held": held, "held_read": held_read, "archived": archived, "recalled": ans.recalled,
        "archive_tokens": eng.archive.tokens,
        "length": eng.tokens_read, "answer": answer, "correct": needle.check(answer),
        "needle_start": placement.needle_start, "needle_tokens": placement.needle_tokens,
        "depth_actual": round(placement.depth_actual, 4),
        "timings": {**eng.timings.as_dict(), "read_s": round(read_s, 4), "answer_s": round(answer_s, 4)},
        "read_tok_s": round(eng.tokens_read / read_s, 1) if read_s > 0 else None,
        "peak_entries": eng.pot.peak_entries, "cycles": eng.cycles, "kv_bytes": eng.pot.kv_bytes(),
        "pinned": len(header),
    })
    if tracer is not None:
        rec["trace"] = tracer.records
        rec["needle_pieces"] = tracer.needle_pieces()
    return rec


def run_needle(lm, cfg: NeedleConfig, progress: Progress | None = None,
               on_trial: Callable[[dict], None] | None = None) -> list[dict]:
    """All trials, in the order length > depth > trial > method (methods side by side on the same input)."""
    bad = [m for m in cfg.methods if split_method_spec(m)[0] not in METHODS]
    if bad:
        raise ValueError(f"unknown method(s) {bad}")
    prompts = Prompts(lm.tokenizer)
    out = []
    for length in cfg.lengths:
        for depth in cfg.depths:
            for trial in range(cfg.trials):
                for method, flow in [(m, f) for m in cfg.methods for f in cfg.flows]:
                    if progress is not None:
                        progress.start(f"{flow_label(method, flow)} {fmt_tokens(length)} depth {depth:g} "
                                       f"trial {trial + 1}", length)
                    rec = run_trial(lm, prompts, cfg, method, length, depth, trial, progress, flow)
                    if progress is not None:
                        if rec["skipped"]:
                            progress.skip(rec["skipped"])
                        else:
                            mark = "correct" if rec["correct"] else "wrong"
                            progress.finish(f"{mark}: {rec['answer']!r} (expected {rec['expect']!r})")
                    out.append(rec)
                    if on_trial is not None:
                        on_trial(rec)
    return out


def summarize(trials: list[dict]) -> list[dict]:
    """Accuracy per (method · flow, length, depth): [{method, flow, length, depth, correct, n, accuracy, skipped,
    held}]; `method` is the row label (flow_label), `held` the needle's mean held share when answering."""
    cells: dict[tuple, dict] = {}
    for r in trials:
        key = (flow_label(r["method"], r.get("flow", "direct")), r["length_target"], r["depth"])
        c = cells.setdefault(key, {"method": key[0], "flow": r.get("flow", "direct"), "length": key[1],
                                   "depth": key[2], "correct": 0, "n": 0, "skipped": None, "held": None})
        if r["skipped"]:
            c["skipped"] = r["skipped"].split(":")[0]
            continue
        c["n"] += 1
        c["correct"] += int(bool(r["correct"]))
        if r.get("held"):
            c.setdefault("_held", []).append(r["held"]["share"])
    for c in cells.values():
        c["accuracy"] = c["correct"] / c["n"] if c["n"] else None
        hs = c.pop("_held", None)
        c["held"] = round(sum(hs) / len(hs), 4) if hs else None
    return list(cells.values())
