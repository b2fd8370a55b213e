#!/usr/bin/env python3
"""Does the model's own attention find the passage that answers a question? (docs/results/model-retrieval.md)

A probe, not a bench: it reads each document of a corpus folder (bench/corpus, bench/testset) once with the
product's read (`Session`, the general catalyst: read once, ask later), keeps every document token's pre-rotary
key at the chosen layers as the read computes it (a forward hook on each layer's k_proj, only for the rows of a
document forward: the engine's "forward" event says how many), then asks every question: its queries at the same
layers (the ask prompt after the pinned header) attend over all the document's keys as if the document stood just
before the question (softmax over every token, the question rows' mass summed per evidence unit). Each query head
is scored by where the unit holding the question's gold passage ranks (MRR), beside the words ranking the product
ships (retrieve.rank); then the two best heads are fused with the words: words / max(words) + lam * z(model).

Llama-layout models only (k_proj / q_proj, rotate_half); the built-in model by default.

    .venv/bin/python bench/probes/attention_retrieval.py --corpus bench/corpus --max-tokens 22000 --out /tmp/p.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from infinipot_cli.answer import evidence as ev, retrieve  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot.config import PotConfig  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from infinipot_cli.session import Catalyst, Session  # noqa: E402


def paraphrased(q: dict) -> bool:
    """A question in a reader's own words: so marked (bench/testset, bench/paraphrases) or a corpus paraphrase."""
    return q.get("phrasing") == "paraphrase" or bool(q.get("paraphrase_of"))


def gold_units(texts: list[str], q: dict) -> set[int] | None:
    """The units the gold passage covers (those holding an answer, when any does); None when not found."""
    if not q.get("passage"):
        return None
    pieces = [" ".join(t.split()) for t in texts]
    starts, at = [], 0
    for p in pieces:
        starts.append(at)
        at += len(p) + 1
    full = " ".join(pieces)
    p = " ".join(q["passage"].split())
    i = full.find(p)
    if i < 0:
        i = full.lower().find(p.lower()[:80])
    if i < 0:
        return None
    over = [k for k, s in enumerate(starts) if s < i + len(p) and s + len(pieces[k]) > i]
    held = [k for k in over if any(a.lower() in pieces[k].lower() for a in q["answers"])]
    return set(held or over)


def best_rank(scores: torch.Tensor, gold: set[int]) -> torch.Tensor:
    """scores (K, ...) -> (...) the best rank (0 = first) of a gold unit."""
    order = scores.argsort(0, descending=True)
    pos = torch.empty_like(order)
    pos.scatter_(0, order, torch.arange(scores.shape[0]).view(-1, *([1] * (scores.dim() - 1))).expand_as(order))
    return torch.stack([pos[k] for k in gold]).min(0).values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("-m", "--model", default=None, help="the reader, as `infinipot -m` takes it (default: the built-in model)")
    ap.add_argument("--max-tokens", type=int, default=22000, help="skip longer documents (approx_tokens)")
    ap.add_argument("--layers", default="12-23", help="layers whose keys are kept, e.g. 12-23")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lo, hi = (int(x) for x in a.layers.split("-"))
    layers = list(range(lo, hi + 1))
    lm = load_model(a.model)
    m = lm.model
    cfg = m.config
    H, KV = cfg.num_attention_heads, cfg.num_key_value_heads
    HD = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
    rows = {"n": 0}
    keys: dict[int, list] = {}
    queries: dict[int, torch.Tensor] = {}
    asking = {"on": False}

    def khook(layer):
        def f(_mod, _inp, out):
            if rows["n"]:
                keys[layer].append(out[0, :rows["n"]].detach().to(torch.float16))
        return f

    def qhook(layer):
        def f(_mod, _inp, out):
            if asking["on"]:
                queries[layer] = out[0].detach().float()
        return f

    for layer in layers:
        attn = m.model.layers[layer].self_attn
        attn.k_proj.register_forward_hook(khook(layer))
        attn.q_proj.register_forward_hook(qhook(layer))

    def on_event(e) -> None:  # a document forward starts ("forward", its rows) / has ended ("read")
        rows["n"] = e.chunk if e.kind == "forward" else 0

    table, questions = load_corpus(Path(a.corpus))
    records = []
    for did, doc in table.items():
        if doc.get("approx_tokens", 0) > a.max_tokens:
            continue
        t0 = time.time()
        for layer in layers:
            keys[layer] = []
        s = Session.start(lm, PotConfig().validate(), Catalyst("general"), on_event=on_event)
        s.read(_open(doc))
        rows["n"] = 0
        k = torch.stack([torch.cat(keys[layer]) for layer in layers], 1).float()  # (N, l, KV*HD)
        eng = s.engine
        assert k.shape[0] == eng.tokens_read, (k.shape, eng.tokens_read)
        src, seg, texts = ev.document_units(eng)
        K = len(texts)
        first = torch.full((K,), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, src, "amin")
        heading = retrieve.headings(eng, first, texts)
        kh = k.view(-1, len(layers), KV, HD)  # (N, l, KV, HD)
        header = s.prompts.header_ids()
        for q in [q for q in questions if q["doc"] == did]:
            gold = gold_units(texts, q)
            if not gold:
                continue
            prompt, focus = s.prompts.ask(q["question"])
            asking["on"] = True
            with torch.no_grad():
                m.model(input_ids=torch.tensor([header + prompt]))
            asking["on"] = False
            qq = torch.stack([queries[layer] for layer in layers], 1)[len(header):][focus[0]:focus[1]]  # (T, l, H*HD)
            qv = qq.view(qq.shape[0], len(layers), KV, H // KV, HD)
            mass = (torch.einsum("tlkgd,nlkd->tnlkg", qv, kh) * HD ** -0.5).softmax(1).mean(0)  # (N, l, KV, G)
            unit = torch.zeros(K, len(layers), H).index_add_(0, seg, mass.reshape(-1, len(layers), H))
            words = retrieve.rank(texts, q["question"], heading)
            records.append({"id": q["id"], "para": paraphrased(q),
                            "heads": best_rank(unit, gold), "words": int(best_rank(words, gold)),
                            "unit": unit, "w": words, "gold": gold})
        print(f"{did}: {eng.tokens_read} tokens, {K} units, {time.time() - t0:.0f} s", flush=True)

    n = len(records)
    mrr = sum(1.0 / (1 + r["heads"].float()) for r in records) / n  # (l, H)
    flat = mrr.flatten()
    top = flat.argsort(descending=True)[:8].tolist()
    best = top[:2]

    def line(ranks: list[int]) -> dict:
        return {"n": len(ranks), "top1": sum(r < 1 for r in ranks), "top3": sum(r < 3 for r in ranks),
                "top10": sum(r < 10 for r in ranks), "mrr": round(sum(1 / (1 + r) for r in ranks) / max(1, len(ranks)), 3)}

    def z(x: torch.Tensor) -> torch.Tensor:
        return (x - x.mean()) / (x.std() + 1e-9)

    rows_out = {"words": [r["words"] for r in records],
                "model (2 best heads)": [int(best_rank(r["unit"].flatten(1)[:, best].mean(1), r["gold"])) for r in records]}
    for lam in (0.05, 0.1, 0.2, 0.4):
        rows_out[f"words + {lam} model"] = [
            int(best_rank(r["w"] / (r["w"].max() + 1e-9) + lam * z(r["unit"].flatten(1)[:, best].mean(1)), r["gold"]))
            for r in records]
    paras = [i for i, r in enumerate(records) if r["para"]]
    report = {"corpus": a.corpus, "questions": n, "paraphrases": len(paras),
              "best_heads": [{"layer": layers[t // H], "head": t % H, "mrr": round(float(flat[t]), 3)} for t in top],
              "rankings": {k: {"all": line(v), "paraphrases": line([v[i] for i in paras])} for k, v in rows_out.items()}}
    print(json.dumps(report, indent=1))
    if a.out:
        save(a.out, report)


def by_phrasing(rows: list[dict], line) -> dict:
    """`line(rows)` over all the rows, those of questions in a reader's own words (`para`) and the rest."""
    return {"all": line(rows), "paraphrases": line([r for r in rows if r["para"]]),
            "document's words": line([r for r in rows if not r["para"]])}


def report_rows(report: dict, out: str | None) -> None:
    """Print `report` but its rows; write it whole to `out` (save), when given."""
    print(json.dumps({k: v for k, v in report.items() if k != "rows"}, indent=1))
    if out:
        save(out, report)


def save(path: str, report: dict) -> None:
    """`report` as JSON in `path`, written whole or not at all."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(report, f, indent=1)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
