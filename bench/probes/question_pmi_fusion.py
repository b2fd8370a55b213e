#!/usr/bin/env python3
"""The question's PMI (question_pmi.py) fused with the shipped ranking so that it keeps the first places: ranked
apart and fused by reciprocal rank, or added only to units that share no word with the question
(docs/results/model-retrieval.md); and each with the shipped ranking's first unit kept first: the form built
for `ask DOC Q`'s later passages and measured there (not kept).

A probe's report, no model: it reads question_pmi.py's --out file, where each variant's scores are the shipped
ranking plus lam x the PMI part, so the PMI part of each unit is recovered from them. Ties count against the
answer's unit (a unit tied with it ranks before it).

    .venv/bin/python bench/probes/question_pmi.py --corpus bench/paraphrases --out /tmp/qp-para.json
    .venv/bin/python bench/probes/question_pmi_fusion.py /tmp/qp-para.json
"""

import json
import sys

import torch

SHIPPED = "words + expected (shipped)"
SHIPPED_ROW = "shipped (words + expected words)"
THETAS = (2.0, 4.0, 6.0)
K_RRF = 60          # reciprocal-rank fusion's constant (Cormack et al. 2009)


def ranks(scores: torch.Tensor) -> torch.Tensor:
    """(K,) each unit's rank, 0 = first; tied units share the better rank."""
    return (scores[None, :] > scores[:, None]).sum(1)


def gold_rank(scores: torch.Tensor, gold: list[int]) -> int:
    """The best rank of a gold unit, the units tied with it counted before it."""
    return min(int((scores > scores[g]).sum() + (scores == scores[g]).sum() - 1) for g in gold)


def variants(rec: dict) -> dict[str, torch.Tensor]:
    base = torch.tensor(rec["exp"][SHIPPED], dtype=torch.float64)
    words = torch.tensor(rec["words"], dtype=torch.float64)
    out = {"words": words, SHIPPED_ROW: base}
    by_base = 1 / (K_RRF + ranks(base).double())  # the shipped ranking's part of every fusion
    for theta in THETAS:
        pmi = torch.tensor(rec["exp"][f"+ question words' PMI >= {theta}, x1.0"], dtype=torch.float64) - base
        by_pmi = ranks(pmi).double()
        by_pmi[pmi <= 0] = len(base)  # a unit the PMI does not raise: ranked last
        for beta in (0.25, 0.5):
            out[f"RRF, PMI >= {theta} x{beta}"] = by_base + beta / (K_RRF + by_pmi)
        out[f"PMI >= {theta} x0.5 where no word"] = base + 0.5 * pmi * (words <= 0)
    return out


def filled_rank(first: torch.Tensor, later: torch.Tensor, gold: list[int], keep: int = 1) -> int:
    """The best rank of a gold unit when the first `keep` places are `first`'s best units (the lowest index among
    ties) and the later places follow `later`, the units tied with a gold unit counted before it."""
    rest, firsts = later.clone(), first.clone()
    for place in range(keep):
        top = int(firsts.argmax())
        if top in gold:
            return place
        firsts[top] = rest[top] = float("-inf")
    return keep + gold_rank(rest, gold)


def main() -> None:
    for path in sys.argv[1:]:
        recs = json.loads(open(path).read())
        rows = [variants(r) for r in recs]
        print(f"{path}: {len(recs)} questions\n{'ranking':36s} top1 top4 top10 top30")
        for name in rows[0]:
            ps = [gold_rank(v[name], r["gold"]) for r, v in zip(recs, rows)]
            print(f"{name:36s}", *[f"{sum(p < k for p in ps):4d}" for k in (1, 4, 10, 30)])
        for keep in (1, 2):
            print(f"the shipped ranking's first {keep} unit(s), then each ranking's:\n"
                  f"{'ranking':36s} top1 top2 top4 top10")
            for name in rows[0]:
                ps = [filled_rank(v[SHIPPED_ROW], v[name], r["gold"], keep) for r, v in zip(recs, rows)]
                print(f"{name:36s}", *[f"{sum(p < k for p in ps):4d}" for k in (1, 2, 4, 10)])


if __name__ == "__main__":
    main()
