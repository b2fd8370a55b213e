#!/usr/bin/env python3
"""Would the read's own passages put more answers before the judge? (docs/results/model-retrieval.md)

A probe over the per-question scores `capq_records.py` saves (X.pt): for each paraphrased question, whether the
gold unit lies in the words' first 4 passages, and in those with the read's first R passages beside them (the
units the CaP-Q record ranks highest, pooled by mean or max, none overlapping the words'), against the words'
first 8 and 12 alone; and, over every question, the evidence's places: the words' first 4 or 5 against their first 3
or 4 with the read's first beside them (answering.with_read). A passage is approximated as its top unit and 2
units each side.

    .venv/bin/python bench/probes/capq_records.py --corpus bench/paraphrases --out /tmp/para.json
    .venv/bin/python bench/probes/read_pool.py /tmp/para.pt
"""

from __future__ import annotations

import sys

import torch


def tops(scores: torch.Tensor, n: int, skip: set[int] = frozenset(), side: int = 2) -> list[set[int]]:
    """The first `n` passages by `scores` (K,): each its top unit and `side` units each side, none overlapping."""
    out, used = [], set(skip)
    for k in scores.argsort(descending=True).tolist():
        if len(out) >= n:
            break
        if k in used:
            continue
        group = set(range(k - side, k + side + 1))
        used |= group
        out.append(group)
    return out


def holds(groups: list[set[int]], gold: set[int]) -> bool:
    return any(gold & g for g in groups)


def main() -> None:
    every = torch.load(sys.argv[1], weights_only=False)
    records = [r for r in every if r["para"]]
    print(f"{len(records)} paraphrased questions with a located gold passage")
    for n in (4, 8, 12):
        print(f"words' first {n}: {sum(holds(tops(r['words'], n), set(r['gold'])) for r in records)}")
    for pool in ("mean", "max"):
        for R in (2, 4, 8):
            hit = 0
            for r in records:
                words = tops(r["words"], 4)
                read = tops(r[pool], R, skip=set().union(*words) if words else set())
                hit += holds(words + read, set(r["gold"]))
            print(f"words' first 4 + the read's first {R} ({pool}): {hit}")
    # the evidence's four or five places (answering.with_read): the words' fourth given to the read's first
    for name, group in (("paraphrased", records), ("in the document's words", [r for r in every if not r["para"]])):
        if not group:
            continue
        row = [f"{len(group)} {name}:"]
        for w, R in ((4, 0), (5, 0), (3, 1), (4, 1)):
            hit = 0
            for r in group:
                words = tops(r["words"], w)
                read = tops(r["mean"], R, skip=set().union(*words) if words else set()) if R else []
                hit += holds(words + read, set(r["gold"]))
            row.append(f"words {w}" + (f" + read {R}" if R else "") + f" {hit}")
        print(" | ".join(row))

if __name__ == "__main__":
    main()
