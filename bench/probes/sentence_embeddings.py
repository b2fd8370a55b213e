#!/usr/bin/env python3
"""Does the built-in model embed a sentence by its meaning well enough to find a paraphrase's answer?
(docs/results/model-retrieval.md)

A probe, not a bench. Each unit of a document and each question is embedded by the model itself, with the
PromptEOL prompt (Jiang et al. 2023, "Scaling Sentence Embeddings with Large Language Models": 'This sentence :
"X" means in one word:"', the last token's hidden state), at several layers, and units are ranked by cosine with
the question. The gold unit's rank is compared with the words' (`retrieve.rank`), alone and fused.

    .venv/bin/python bench/probes/sentence_embeddings.py --corpus bench/paraphrases --out /tmp/emb-para.json
    .venv/bin/python bench/probes/sentence_embeddings.py --report /tmp/emb-para.json   # the table again
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

from infinipot_cli.answer import retrieve  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot import reader  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from attention_retrieval import gold_units  # noqa: E402
from question_likelihood import TextOnly  # noqa: E402

LAYERS = (8, 12, 16, 20, 24, 30)
TEMPLATE = 'This sentence : "{}" means in one word:"'


def embed(model, tok, texts: list[str], batch: int = 32, cut: int = 64) -> torch.Tensor:
    """(N, len(LAYERS)+1, D): the last token's hidden state at LAYERS, then the mean over the text at layer 16.
    (As measured: left-padded without position ids, so a short text's positions start after its padding; the
    product's meaning.embed starts every prompt at position 0.)"""
    rows = [tok.encode(TEMPLATE.format(" ".join(t.split())[:400]), add_special_tokens=False) for t in texts]
    rows = [r[:cut - 8] + r[-8:] if len(r) > cut else r for r in rows]
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    res = [None] * len(rows)
    for i in range(0, len(order), batch):
        idx = order[i:i + batch]
        n = max(len(rows[j]) for j in idx)
        ids = torch.zeros(len(idx), n, dtype=torch.long)
        mask = torch.zeros(len(idx), n, dtype=torch.long)
        for b, j in enumerate(idx):   # left-padded: the last row is each text's last token
            ids[b, n - len(rows[j]):] = torch.tensor(rows[j])
            mask[b, n - len(rows[j]):] = 1
        with torch.no_grad():
            hs = model(input_ids=ids, attention_mask=mask, output_hidden_states=True).hidden_states
        last = torch.stack([hs[layer][:, -1].float() for layer in LAYERS], 1)          # (B, L, D)
        m = mask.unsqueeze(-1).float()
        mean = ((hs[16].float() * m).sum(1) / m.sum(1)).unsqueeze(1)                     # (B, 1, D)
        e = torch.cat([last, mean], 1)
        for b, j in enumerate(idx):
            res[j] = e[b]
    return torch.stack(res)


def documents(tokenizer, corpus: str, max_tokens: int):
    """(doc id, its answerable questions, a TextOnly engine, its units (src, seg, texts), start time) for each
    document of `corpus` of at most `max_tokens` tokens with a question: its units as the reader cuts them, no
    model read."""
    table, questions = load_corpus(Path(corpus))
    for did, doc in table.items():
        if doc.get("approx_tokens", 0) > max_tokens:
            continue
        qs = [q for q in questions if q["doc"] == did and q.get("answers")]
        if not qs:
            continue
        t0 = time.time()
        eng = TextOnly(tokenizer)
        src = _open(doc)
        reader.read_source(eng, tokenizer, src, reader.SourceRecord(path=src.path, format=src.format))
        yield did, qs, eng, eng.derived(None, None, None), t0


def gold_rank(scores, gold) -> int:
    """The best rank (0 = first) of a unit of `gold` by `scores` (K,)."""
    order = torch.as_tensor(scores).argsort(descending=True)
    pos = torch.empty_like(order)
    pos[order] = torch.arange(len(order))
    return min(int(pos[g]) for g in gold)


def table(recs: list[dict], width: int = 26):
    """Prints the table's head; returns line(name, f): one row, how many gold units f(record)'s scores rank
    first, in the first 4, 10 and 30."""
    print(f"{'ranking':{width}s} top1 top4 top10 top30")

    def line(name, f):
        ps = [gold_rank(f(r), r["gold"]) for r in recs]
        print(f"{name:{width}s}", *[f"{sum(p < k for p in ps):4d}" for k in (1, 4, 10, 30)], f"  of {len(ps)}")
    return line


def probe_args(doc: str, max_tokens: int = 40000, cache: bool = False) -> argparse.Namespace:
    """The probes' command line: --corpus, --out, --report (print a saved --out file's table and stop),
    --max-tokens, and with `cache` --cache (a folder keeping each document's model outputs)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--corpus")
    ap.add_argument("--out")
    ap.add_argument("--report", help="print the table of a saved --out file and stop")
    ap.add_argument("--max-tokens", type=int, default=max_tokens)
    if cache:
        ap.add_argument("--cache", help="a folder keeping each document's model outputs (no second forward)")
    return ap.parse_args()


def variant_table(recs: list[dict], field: str, name: str, width: int = 30) -> None:
    """The table of the words' ranking and of each variant's (`recs[i][field][variant]`: its scores), `name`
    formatting the variant's row label."""
    line = table(recs, width)
    line("words", lambda r: r["words"])
    for key in recs[0][field]:
        line(name.format(key), lambda r, key=key: r[field][key])


def report(recs: list[dict]) -> None:
    """Where the gold unit ranks (first, first 4, 10, 30) by the words, by each layer's vectors, and fused."""
    def z(x):
        x = torch.as_tensor(x, dtype=torch.float)
        return (x - x.mean()) / (x.std() + 1e-9)

    line = table(recs)
    line("words", lambda r: r["words"])
    names = [f"layer {n}, last token" for n in LAYERS] + ["layer 16, mean"]
    for i, n in enumerate(names):
        line(n, lambda r, i=i: [c[i] for c in r["cos"]])
    for lam in (0.3, 1.0):
        line(f"words + {lam} layer 30", lambda r, lam=lam: (z(r["words"]) + lam * z([c[5] for c in r["cos"]])).tolist())


def main() -> None:
    a = probe_args(__doc__)
    if a.report:
        report(json.loads(Path(a.report).read_text()))
        return
    lm = load_model(None)
    lm.model.float()  # (as measured: float32; meaning_judge.py runs the model as `ask` does, bfloat16)
    recs = []
    for did, qs, eng, (_, seg, texts), t0 in documents(lm.tokenizer, a.corpus, a.max_tokens):
        E = embed(lm.model, lm.tokenizer, texts)                                        # (K, L+1, D)
        Q = embed(lm.model, lm.tokenizer, [q["question"] for q in qs])                  # (Q, L+1, D)
        En = torch.nn.functional.normalize(E - E.mean(0), dim=-1)
        Qn = torch.nn.functional.normalize(Q - E.mean(0), dim=-1)
        cos = torch.einsum("kld,qld->qkl", En, Qn)                                     # (Q, K, L+1)
        first = torch.full((len(texts),), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, torch.arange(seg.numel()), "amin")
        heading = retrieve.headings(eng, first, texts)
        for qi, q in enumerate(qs):
            gold = gold_units(texts, q)
            if not gold:
                continue
            w = retrieve.rank(texts, q["question"], heading)
            recs.append({"id": q["id"], "para": q.get("phrasing") == "paraphrase",
                         "words": w.tolist(), "cos": cos[qi].tolist(), "gold": sorted(gold)})
        print(f"{did}: {len(texts)} units, {len(qs)} questions, {time.time() - t0:.0f} s", flush=True)
    Path(a.out).write_text(json.dumps(recs))
    report(recs)


if __name__ == "__main__":
    main()
