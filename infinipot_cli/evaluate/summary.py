"""`infinipot bench summary`: what a summary of a real document covers, whether it loops, what it makes up.

For every document of a corpus (corpus.json: documents with their path, kind and parts, each part with its
distinctive terms) and every method, read the document and write its summary through the session as `infinipot
summarize` does (session.py: `Session.start` with the general catalyst, `read`, `summarize` with its defaults, the
overview's among them), then measure it (summary_metrics.py): section coverage, degeneration, unsupported
numbers and names, length, time and the summary's time over the read's.

Methods: any reading method or preset (`infinipot`, `infinipot-paper`, `streaming`, ...) and three baselines
that read no more than the pot could show the model: `head` and `tail` (the document's first / last tokens,
as many as a full pot leaves room for beside the prompt and the summary) and `whole` (the whole document, only
where it fits the model's window).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..errors import UsageError
from .summary_metrics import measure

BASELINES = ("head", "tail", "whole")


@dataclass
class SummaryBenchConfig:
    methods: list[str]
    pot_size: int = 2048
    keep: int = 1024
    chunk: int = 1024
    max_new_tokens: int = 256

    def describe(self) -> dict:
        return {"methods": self.methods, "pot_size": self.pot_size, "keep": self.keep, "chunk": self.chunk,
                "max_new_tokens": self.max_new_tokens}


def load_corpus(path: Path, ids: list[str] | None = None) -> list[dict]:
    """The corpus's documents (in `ids`' order when given); a one-line UsageError on a bad file or id."""
    try:
        docs = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise UsageError(f"--corpus {path}: cannot read it ({e})") from None
    if isinstance(docs, dict):
        docs = docs.get("documents") or []
    if not isinstance(docs, list) or not all(isinstance(d, dict) and "path" in d for d in docs):
        raise UsageError(f"--corpus {path}: expected a list of documents with a path and parts")
    for d in docs:
        d.setdefault("id", Path(d["path"]).stem)
        p = Path(d["path"])
        if not p.is_absolute():
            d["path"] = str(Path(path).parent / p)
    if not ids:
        return docs
    by_id = {d["id"]: d for d in docs}
    missing = [i for i in ids if i not in by_id]
    if missing:
        raise UsageError(f"--docs: not in the corpus: {', '.join(missing)} (it has {', '.join(by_id)})")
    return [by_id[i] for i in ids]


def document_pieces(tokenizer, path: str) -> tuple[list[tuple[list[int], str]], str]:
    """The document as the reader feeds it: [(token ids, where)], and its text."""
    from ..documents import open_source
    from ..pot.reader import token_stream

    src = open_source(path, "auto")
    passages = list(src.passages())
    text = "\n\n".join(p.text for p in passages)
    return list(token_stream(tokenizer, passages)), text


def _cut(pieces: list[tuple[list[int], str]], n: int, tail: bool) -> list[tuple[list[int], str]]:
    """The first (or last) `n` tokens of `pieces`, with their provenance."""
    out, left = [], n
    for ids, where in (reversed(pieces) if tail else pieces):
        if left <= 0:
            break
        take = ids[-left:] if tail else ids[:left]
        out.append((take, where))
        left -= len(take)
    return list(reversed(out)) if tail else out


def window(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 0) or 0) or 1 << 62


def run_one(lm, prompts, doc: dict, pieces, text: str, method: str, cfg: SummaryBenchConfig) -> dict:
    """Read `doc` with `method` and summarize it as `infinipot summarize` does (a Session: started with the general
    catalyst, the document read, ``Session.summarize`` with its defaults); the measured row. The head and tail
    baselines read their cut of the document's pieces (``Session.read_tokens``), the rest the document itself."""
    from ..pot.config import SUMMARY_SPREAD, PotConfig, split_method_spec
    from ..answer.controls import answer_controls
    from ..documents import open_source
    from ..session import Catalyst, Session

    total = sum(len(ids) for ids, _ in pieces)
    header = prompts.header_ids()
    limit = answer_controls("summarize", lm.tokenizer, cfg.max_new_tokens).limit
    room = cfg.pot_size - len(header) - len(prompts.summary_ids()) - limit  # document tokens a full pot can show
    row = {"doc": doc["id"], "kind": doc.get("kind", "?"), "tokens": total, "method": method}
    feed = None  # the cut pieces to read (head, tail); None: the document
    if method in BASELINES:
        pc = PotConfig(method="full", size=cfg.pot_size, keep=cfg.keep, chunk=cfg.chunk)
        if method == "whole":
            if len(header) + total + len(prompts.summary_ids()) + limit > window(lm.model):
                return {**row, "skipped": f"longer than the model's window ({window(lm.model)})"}
        else:
            feed = _cut(pieces, room, tail=method == "tail")
    else:
        own = {"spread": SUMMARY_SPREAD} if method == "infinipot" else {}  # as `summarize` reads
        base, opts = split_method_spec(method)
        pc = PotConfig(method=base, **{"size": cfg.pot_size, "keep": cfg.keep, "chunk": cfg.chunk, **own, **opts})
    session = Session.start(lm, pc, Catalyst("general"))
    if feed is None:
        session.read(open_source(doc["path"], "auto"))
    else:
        session.read_tokens(feed, source=doc["path"])
    answer = session.summarize(max_new_tokens=cfg.max_new_tokens)
    eng, s = session.engine, answer.summary
    read_s, answer_s = session.read_s, answer.seconds
    row.update({"read_tokens": eng.tokens_read, "read_s": round(read_s, 2), "summary_s": round(answer_s, 2),
                "ratio": round(answer_s / read_s, 3) if read_s > 0 else None, "cycles": eng.cycles,
                "summary": s.text, "overview": s.overview, "key_points": s.key_points,
                "overview_withheld": s.dropped})
    if s.key_points:  # the floor to beat: the sentences the pot itself judged most important (one per eighth)
        from ..answer.keypoints import key_points as pot_points

        row["pot_key_points"] = pot_points(eng, prompts.summary_ids())
    return remeasure(row, text, doc)


def content(row: dict) -> str:
    """What a row's summary says: its key points' sentences and the overview (not the headings and labels)."""
    overview = row.get("overview")
    if overview is None:  # rows written before the overview was stored
        overview = row["summary"].split("\nOverview: ", 1)[-1]
    return "\n".join([p["text"] for p in row.get("key_points") or []] + [overview])


def remeasure(row: dict, text: str, doc: dict) -> dict:
    """`row` with its measures (re)computed from its summary."""
    parts = doc.get("parts") or []
    row.update(measure(content(row), text, parts))
    # the model's overview alone, measured apart from the extracted key points (none written: the built-in
    # model's summaries by default, Session.summarize; the table shows "–")
    if row.get("key_points") and content({**row, "key_points": []}).strip():
        row["overview_only"] = measure(content({**row, "key_points": []}), text, parts)
    if row.get("pot_key_points"):
        row["pot_points_only"] = measure("\n".join(p["text"] for p in row["pot_key_points"]), text, parts)
    return row


def run_summary_bench(lm, docs: list[dict], cfg: SummaryBenchConfig, on_row: Callable[[dict], None],
                      kept: list[dict] = (), log=sys.stderr) -> None:
    """Every (document, method) not among the `kept` rows (of an earlier run); `on_row(row)` after each."""
    done = {(r["doc"], r["method"]) for r in kept}
    from ..pot.prompts import Prompts

    prompts = Prompts(lm.tokenizer)
    for doc in docs:
        todo = [m for m in cfg.methods if (doc["id"], m) not in done]
        pieces, text = document_pieces(lm.tokenizer, doc["path"])
        for row in kept:  # rows kept from an earlier run: measured again (the measures may have changed)
            if row["doc"] == doc["id"] and "skipped" not in row:
                remeasure(row, text, doc)
        for m in todo:
            log.write(f"summary: {doc['id']} ({sum(len(i) for i, _ in pieces)} tokens) with {m} ...\n")
            log.flush()
            row = run_one(lm, prompts, doc, pieces, text, m, cfg)
            if "skipped" not in row:
                log.write(f"  coverage {row['coverage']['covered']}/{row['coverage']['parts']}, max 3-gram "
                          f"{row['degeneration']['max_3gram']}, unsupported {row['unsupported']['count']}, "
                          f"read {row['read_s']} s, summary {row['summary_s']} s\n")
            on_row(row)


def markdown_table(rows: list[dict]) -> str:
    head = ("| document | kind | tokens | method | coverage | overview alone | pot's sentences (floor) | max 3-gram | "
            "distinct-2 | unsupported | words | read s | summary s | summary/read |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")

    def cov_of(m: dict | None) -> str:
        return f"{m['coverage']['covered']}/{m['coverage']['parts']}" if m and m["coverage"]["parts"] else "–"

    lines = []
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['doc']} | {r['kind']} | {r['tokens']} | {r['method']} | – ({r['skipped']}) "
                         "| | | | | | | | | |")
            continue
        c, d, u = r["coverage"], r["degeneration"], r["unsupported"]
        cov = f"{c['covered']}/{c['parts']}" if c["parts"] else "–"
        uns = str(u["count"]) + (f" ({', '.join((u['numbers'] + u['names'])[:4])})" if u["count"] else "")
        lines.append(f"| {r['doc']} | {r['kind']} | {r['tokens']} | {r['method']} | {cov} | "
                     f"{cov_of(r.get('overview_only'))} | {cov_of(r.get('pot_points_only'))} | {d['max_3gram']} | "
                     f"{d['distinct_2']} | {uns} | {r['words']} | {r['read_s']} | {r['summary_s']} | {r['ratio']} |")
    return head + "\n".join(lines) + "\n"
