#!/usr/bin/env python3
"""Does a man page's option, read with its whole description, rank where the words of one sentence do not?
(docs/results/qa.md)

A probe, not a bench, text only. A "which option" question is answered by an option's definition: the option
line and the lines indented under it (`option_blocks`). The words rank sentences (`retrieve.rank`), so
a definition whose words are spread over its sentences ("-L, --location": "make curl redo the request", "If a
redirect takes curl ...") loses to a sentence elsewhere that mentions the option with the question's words. Here
each definition's head is also scored by the words of the whole definition, and where the gold unit ranks
(it, or a definition holding it) is compared with the words alone, for the questions after an option.

    .venv/bin/python bench/probes/option_blocks.py --corpus bench/corpus
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import evidence as ev, retrieve, spans  # noqa: E402
from infinipot_cli.runtime.loading import load_tokenizer  # noqa: E402
from attention_retrieval import gold_units  # noqa: E402
from sentence_embeddings import documents  # noqa: E402

WEIGHTS = (0.5, 0.75, 1.0, 1.25)

# An option line with its description on the same line: "  -k, --keep    keep (don't delete) input files",
# "  -o FILE, --output=FILE   write to FILE" (the options and their arguments, then two spaces or more).
_OPTION_COLUMNS = re.compile(r"[ \t]*[-+]{1,2}\w[\w-]*(?:[= ]?[<\[A-Z][^\s,]*)?"
                             r"(?:,[ \t]*[-+]{1,2}\w[\w-]*(?:[= ]?[<\[A-Z][^\s,]*)?)*[ \t]{2,}\S")
DEFINITION_UNITS = 24  # units of an option's definition at most


def option_blocks(texts: list[str]) -> dict[int, list[int]]:
    """{head unit: the units of its definition} for every option a definition list defines, as a man page or a
    --help text lays it out: a line that begins with an option ("-L, --location") and is followed by lines
    indented deeper (or that has its description on the same line after a wide gap); the definition runs until a
    line indented no deeper than the option's (the next option, a section heading), at most DEFINITION_UNITS
    units. A wrapped line of prose that happens to begin with an option ("--head, headers from all ...") is
    indented as deep as its neighbours, and defines nothing. Tabs count to the next multiple of 8."""
    full = "".join(texts)
    starts, at = [], 0
    for t in texts:
        starts.append(at)
        at += len(t)
    n = len(full)

    def column(pos: int) -> int | None:  # the indentation of the line a unit starts, None: it starts mid-line
        ls = full.rfind("\n", 0, pos) + 1
        if full[ls:pos].strip():
            return None
        j = pos
        while j < n and full[j] in " \t":
            j += 1
        if j >= n or full[j] == "\n":
            return None
        return len(full[ls:j].expandtabs(8))

    out: dict[int, list[int]] = {}
    for u, t in enumerate(texts):
        if not spans.option_led(t):
            continue
        col = column(starts[u])
        if col is None:
            continue
        a = starts[u] + len(t) - len(t.lstrip())
        eol = full.find("\n", a)
        eol = n if eol < 0 else eol
        if not _OPTION_COLUMNS.match(full[a:eol]):
            nxt = re.compile(r"\n([ \t]*)\S").search(full, eol)
            if nxt is None or len(nxt.group(1).expandtabs(8)) <= col:
                continue
        block = [u]
        for j in range(u + 1, min(len(texts), u + DEFINITION_UNITS)):
            c = column(starts[j])
            if c is not None and c <= col:
                break
            block.append(j)
        out[u] = block
    return out


def block_scores(texts: list[str], blocks: dict[int, list[int]], question: str) -> torch.Tensor:
    """(K,) for the head unit of every definition (`option_blocks`), the idf (over the units) of the question's
    content words its whole definition holds; 0 elsewhere."""
    has = [set(ev.words(t)) for t in texts]
    terms = ev.content_terms(question)
    K = len(texts)
    out = torch.zeros(K)
    if not blocks or not terms:
        return out
    idf = {}
    for w in terms:
        df = sum(w in x for x in has)
        idf[w] = math.log(1 + (K - df + 0.5) / (df + 0.5)) if df else 0.0
    for h, b in blocks.items():
        held = set().union(*(has[j] for j in b))
        out[h] = sum(idf[w] for w in terms if w in held)
    return out



def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", action="append")
    ap.add_argument("--max-tokens", type=int, default=200000)
    a = ap.parse_args()
    tok = load_tokenizer(None)[0]
    rows: dict[str, list[int]] = {"words": []}
    for corpus in a.corpus:
        for did, qs, eng, (_, seg, texts), _t0 in documents(tok, corpus, a.max_tokens):
            qs = [q for q in qs if "option" in spans.wanted(q["question"]).kinds]
            if not qs:
                continue
            blocks = option_blocks(texts)
            first = torch.full((len(texts),), 1 << 62, dtype=torch.long).scatter_reduce(
                0, seg, torch.arange(seg.numel()), "amin")
            heading = retrieve.headings(eng, first, texts)
            for q in qs:
                gold = gold_units(texts, q)
                if not gold:
                    continue
                hit = {u for u in gold} | {h for h, b in blocks.items() if gold & set(b)}
                w = retrieve.rank(texts, q["question"], heading)
                b = block_scores(texts, blocks, q["question"])
                rows["words"].append(best(w, hit))
                for lam in WEIGHTS:
                    rows.setdefault(f"definitions x{lam}", []).append(best(torch.maximum(w, lam * b), hit))
                print(f"{corpus.rsplit('/', 1)[-1]} {q['id']}: words {best(w, hit)}, definitions "
                      f"{best(torch.maximum(w, b), hit)}  {q['question']}", flush=True)
            print(f"{did}: {len(blocks)} definitions, {len(qs)} option questions", flush=True)
    print(f"{'ranking':22s} top1 top4 top10")
    for name, ps in rows.items():
        print(f"{name:22s}", *[f"{sum(p < k for p in ps):4d}" for k in (1, 4, 10)], f"  of {len(ps)}")


def best(scores: torch.Tensor, hit: set[int]) -> int:
    order = scores.argsort(descending=True).tolist()
    return next(i for i, u in enumerate(order) if u in hit)


if __name__ == "__main__":
    main()
