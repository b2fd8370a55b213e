#!/usr/bin/env python3
"""Does the document's own vocabulary bridge a paraphrase? Pseudo-relevance feedback (RM3) over the words.
(docs/results/model-retrieval.md)

A probe, not a bench, and text only (no model forward). The question ranks the units by the words
(`retrieve.rank`); the words of its best `k` units, weighed by how strongly each unit matched and by their idf,
give `m` expansion terms the question lacks; the units are ranked again by the question's words plus `beta` x the
expansion's (Lavrenko & Croft 2001; Abdul-Jaleel et al. 2004, RM3). Where the gold unit ranks is compared with
the words' alone.

    .venv/bin/python bench/probes/feedback.py --corpus bench/paraphrases --out /tmp/prf-para.json
    .venv/bin/python bench/probes/feedback.py --report /tmp/prf-para.json
"""

from __future__ import annotations

import json
import math
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import retrieve  # noqa: E402
from infinipot_cli.pot.archive import STOPWORDS, words  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from attention_retrieval import gold_units  # noqa: E402
from sentence_embeddings import documents, probe_args, variant_table  # noqa: E402

SETTINGS = [(k, m, beta) for k in (3, 10) for m in (10, 30) for beta in (0.5, 1.0, 2.0, 4.0)]


def expanded(texts: list[str], has: list[set[str]], idf: dict[str, float], w: torch.Tensor, question: str,
             k: int, m: int, beta: float) -> torch.Tensor:
    """(K,) the words' scores `w` plus `beta` x the weighted overlap with the `m` terms the best `k` units share
    most (each unit weighed by its share of their scores, each term by its idf), the question's own left out."""
    top = w.topk(min(k, len(texts))).indices.tolist()
    total = float(sum(w[u] for u in top)) or 1.0
    asked = set(words(question))
    weight: Counter = Counter()
    for u in top:
        for t in has[u]:
            if t not in asked and t not in STOPWORDS and len(t) > 2 and not t.isdigit():
                weight[t] += float(w[u]) / total * idf.get(t, 0.0)
    terms = weight.most_common(m)
    norm = sum(v for _, v in terms)
    if norm <= 0:
        return w
    extra = torch.tensor([sum(v / norm * idf[t] for t, v in terms if t in h) for h in has])
    return w + beta * extra


def report(recs: list[dict]) -> None:
    variant_table(recs, "prf", "RM3 k,m,beta={}")


def main() -> None:
    a = probe_args(__doc__, max_tokens=200000)
    if a.report:
        report(json.loads(Path(a.report).read_text()))
        return
    tok = load_model(None).tokenizer
    recs = []
    for did, qs, eng, (_, seg, texts), _t0 in documents(tok, a.corpus, a.max_tokens):
        first = torch.full((len(texts),), 1 << 62, dtype=torch.long).scatter_reduce(
            0, seg, torch.arange(seg.numel()), "amin")
        heading = retrieve.headings(eng, first, texts)
        has = [set(words(t)) for t in texts]
        df = Counter(t for h in has for t in h)
        K = len(texts)
        idf = {t: math.log(1 + (K - n + 0.5) / (n + 0.5)) for t, n in df.items()}
        for q in qs:
            gold = gold_units(texts, q)
            if not gold:
                continue
            w = retrieve.rank(texts, q["question"], heading)
            prf = {f"{k},{m},{b}": expanded(texts, has, idf, w, q["question"], k, m, b).tolist()
                   for k, m, b in SETTINGS}
            recs.append({"id": q["id"], "words": w.tolist(), "prf": prf, "gold": sorted(gold)})
        print(f"{did}: {len(texts)} units, {len(qs)} questions", flush=True)
    Path(a.out).write_text(json.dumps(recs))
    report(recs)


if __name__ == "__main__":
    main()
