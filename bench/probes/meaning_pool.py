#!/usr/bin/env python3
"""What the judge would pick from the pools meaning_judge.py saves (docs/results/model-retrieval.md).

For each saved question: the words' candidates (the sentences of `ask`'s passages) and the model's sentence
vectors' first EXTRA (0-8) beside them; where the gate fires (the words' best sentence holds less than GATE of
the question's words), the candidate ranked first by the likelihood (UPR), the cosine, or z(UPR) + lam z(cosine);
elsewhere the words' first. Counts the questions whose pick holds an answer, and whose pool holds one.

    .venv/bin/python bench/probes/meaning_pool.py docs/results/runs/meaning-vectors/judge-pool-{para,corpus,test}.json
"""

import json
import sys
from pathlib import Path


def z(xs):
    m = sum(xs) / len(xs)
    s = (sum((x - m) ** 2 for x in xs) / len(xs)) ** .5 or 1
    return [(x - m) / s for x in xs]


def pool(r, m):
    return [i for i, s in enumerate(r["src"]) if s == "w"] + [i for i, s in enumerate(r["src"]) if s == "m"][:m]


def pick(r, gate, m, rank, lam=1.0):
    if r["gate"] >= gate:
        return 0
    idx = pool(r, m)
    if rank == "upr":
        return max(idx, key=lambda i: r["upr"][i])
    if rank == "cos":
        return max(idx, key=lambda i: r["cos"][i])
    u, c = z([r["upr"][i] for i in idx]), z([r["cos"][i] for i in idx])
    return idx[max(range(len(idx)), key=lambda j: u[j] + lam * c[j])]


def main() -> None:
    sets = {Path(p).stem: json.load(open(p)) for p in sys.argv[1:]}
    print("questions:", {k: len(rs) for k, rs in sets.items()})
    print("pool holds an answer, extra 0/1/2/4/8:",
          {k: [sum(any(r["holds"][i] for i in pool(r, m)) for r in rs) for m in (0, 1, 2, 4, 8)] for k, rs in sets.items()})
    print("gate  extra rank  lam", *sets)
    for gate in (0.2, 0.3, 0.34, 0.5):
        for m in (0, 1, 2, 4, 8):
            for rank, lam in (("upr", 0), ("cos", 0), ("fuse", 0.5), ("fuse", 1), ("fuse", 2), ("fuse", 3), ("fuse", 4)):
                print(f"{gate:4} {m:5} {rank:5} {lam:3}", *[f"{sum(r['holds'][pick(r, gate, m, rank, lam)] for r in rs):4d}"
                                                          for rs in sets.values()])


if __name__ == "__main__":
    main()
