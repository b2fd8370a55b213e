#!/usr/bin/env python3
"""Does the question-aware read (CaP-Q) find the passage that answers? (docs/results/model-retrieval.md)

A probe, not a bench. For every question it runs `infinipot ask DOC Q`'s read: the question the catalyst while
reading, expected by the last forward (Session.start with Catalyst("question"), Session.expect). Every
distillation scores the pot's entries by the question's attention beyond the template's (CaP-Q relevance,
scoring/capture.py), and the engine's RelevanceRecord (scoring/record.py) keeps, for each document token, the
highest score it had: the shared score the selection uses (the mean over the deeper half's layers and heads), and
here also each layer's. Each evidence unit (evidence.document_units) is scored by pooling its tokens' records (max,
mean), and ranked beside the words (retrieve.rank, what `ask` ships): where the unit holding the gold passage
ranks, and the fusions of the two (reciprocal rank, z-score weights).

The per-question scores are saved (`--out X.json` and X.pt) so other fusions can be computed without reading again.

    .venv/bin/python bench/probes/capq_records.py --corpus bench/testset --out /tmp/capq-testset.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import evidence as ev, retrieve  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot.config import PotConfig  # noqa: E402
from infinipot_cli.pot.scoring.record import RelevanceRecord  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from infinipot_cli.runtime.threads import configure  # noqa: E402
from infinipot_cli.session import Catalyst, Session  # noqa: E402
from attention_retrieval import best_rank, gold_units, paraphrased, save  # noqa: E402


def pool(tok: torch.Tensor, seg: torch.Tensor, K: int, how: str) -> torch.Tensor:
    """tok (..., T) token scores (-inf: unscored) -> (..., K) unit scores."""
    finite = torch.isfinite(tok)
    floor = tok[finite].min() if finite.any() else torch.tensor(0.0)
    t = torch.where(finite, tok, floor)
    lead = t.shape[:-1]
    idx = seg.expand(*lead, -1)
    if how == "max":
        return torch.full((*lead, K), float(floor)).scatter_reduce(-1, idx, t, "amax")
    total = torch.zeros(*lead, K).scatter_add(-1, idx, t)
    count = torch.zeros(K).scatter_add(0, seg, torch.ones_like(seg, dtype=torch.float)).clamp_min(1)
    return total / count


def rrf(*scores: torch.Tensor, k: float = 10.0) -> torch.Tensor:
    """Reciprocal-rank fusion of (K,) score vectors."""
    out = torch.zeros_like(scores[0])
    for s in scores:
        rank = torch.empty_like(s, dtype=torch.long)
        rank[s.argsort(descending=True)] = torch.arange(s.numel())
        out += 1.0 / (k + 1 + rank.float())
    return out


def z(x: torch.Tensor) -> torch.Tensor:
    return (x - x.mean()) / (x.std() + 1e-9)


def rankings(r: dict) -> dict[str, torch.Tensor]:
    """The rankings compared, each (K,) over the document's units."""
    w, mx, mean = r["words"], r["max"], r["mean"]
    out = {"words": w, "record max": mx, "record mean": mean}
    for k in (5, 20, 60):
        out[f"rrf k={k} (words, max)"] = rrf(w, mx, k=k)
    for lam in (0.05, 0.1, 0.2):
        out[f"words + {lam} z(max)"] = w / (w.max() + 1e-9) + lam * z(mx)
    return out


def line(ranks: list[int]) -> dict:
    return {"n": len(ranks), "top1": sum(r < 1 for r in ranks), "top3": sum(r < 3 for r in ranks),
            "top10": sum(r < 10 for r in ranks), "mrr": round(sum(1 / (1 + r) for r in ranks) / max(1, len(ranks)), 3)}


def report(records: list[dict], corpus: str) -> dict:
    paras = [i for i, r in enumerate(records) if r["para"]]
    rows = {}
    for r in records:
        for name, s in rankings(r).items():
            rows.setdefault(name, []).append(int(best_rank(s, r["gold"])))
    layer_rows = [[int(best_rank(r["layers_max"][layer], r["gold"])) for r in records]
                  for layer in range(records[0]["layers_max"].shape[0])] if records else []
    return {"corpus": corpus, "questions": len(records), "paraphrases": len(paras),
            "rankings": {k: {"all": line(v), "paraphrases": line([v[i] for i in paras]),
                             "document's words": line([v[i] for i in range(len(v)) if i not in paras])}
                         for k, v in rows.items()},
            "per layer (max pool; chosen on this set, optimistic)": {
                str(layer): line(v) for layer, v in enumerate(layer_rows)},
            "per question": [{"id": r["id"], "para": r["para"], **{k: v[i] for k, v in rows.items()}}
                             for i, r in enumerate(records)]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--max-tokens", type=int, default=22000, help="skip longer documents (approx_tokens)")
    ap.add_argument("--docs", default=None, help="comma-separated document ids (default: all)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    configure()  # $INFINIPOT_THREADS, else torch's default capped (runtime/threads.py)
    lm = load_model(None)
    table, questions = load_corpus(Path(a.corpus))
    records = []
    for did, doc in table.items():
        if doc.get("approx_tokens", 0) > a.max_tokens or (a.docs and did not in a.docs.split(",")):
            continue
        for q in [q for q in questions if q["doc"] == did]:
            t0 = time.time()
            s = Session.start(lm, PotConfig().validate(), Catalyst("question", q["question"]))
            s.engine.record = RelevanceRecord(per_layer=True)
            s.expect(q["question"])
            s.read(_open(doc))
            eng = s.engine
            src, seg, texts = ev.document_units(eng)
            gold = gold_units(texts, q)
            if not gold:
                continue
            K, n = len(texts), eng.tokens_read
            rec = eng.record
            best = rec.scores(n)
            if best is None:  # the document never filled the pot: nothing was scored
                print(f"{q['id']}: not scored ({n} tokens)", flush=True)
                continue
            layers = torch.full((rec.layers.shape[0], n), float("-inf"))
            k = min(n, rec.layers.shape[1])
            layers[:, :k] = rec.layers[:, :k].cpu()
            first = torch.full((K,), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, src, "amin")
            heading = retrieve.headings(eng, first, texts)
            r = {"id": q["id"], "para": paraphrased(q),
                 "gold": gold, "words": retrieve.rank(texts, q["question"], heading),
                 "max": pool(best[src], seg, K, "max"), "mean": pool(best[src], seg, K, "mean"),
                 "layers_max": pool(layers[:, src], seg, K, "max")}
            records.append(r)
            ranks = {name: int(best_rank(sc, gold)) for name, sc in rankings(r).items()}
            print(f"{q['id']}: {n} tokens, {K} units, words {ranks['words']} max {ranks['record max']} "
                  f"rrf20 {ranks['rrf k=20 (words, max)']}, {time.time() - t0:.0f} s", flush=True)
            if len(records) % 5 == 0:
                save(a.out, report(records, a.corpus))
                torch.save(records, a.out.removesuffix(".json") + ".pt")
    rep = report(records, a.corpus)
    save(a.out, rep)
    torch.save(records, a.out.removesuffix(".json") + ".pt")
    print(json.dumps({k: v for k, v in rep.items() if k != "per question"}, indent=1))


if __name__ == "__main__":
    main()
