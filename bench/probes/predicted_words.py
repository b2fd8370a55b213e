#!/usr/bin/env python3
"""Do the words the model expects while reading bridge a paraphrase? (docs/results/model-retrieval.md)

A probe, not a bench. While it reads, the model predicts every next token (NuC scores each token by that
prediction), so at each word it also ranks the words that could have stood there: "try to [recover] data"
expects "recover", "restore", "repair" … — contextual substitutes (lexical substitution from a language
model's own distribution; document expansion as in TILDE, Zhuang & Zuccon 2021, from the model that reads).
Each unit is given whole words the model expected at its positions that it does not hold (`variants`: by rank,
or the most probable in all, per unit or per window of positions), and a question's word that the unit lacks but
was expected there counts `lam` x its idf. Where the gold unit ranks
is compared with the words alone.

The documents are read here in independent windows of WINDOW tokens (the product's read predicts with the pot
as context; this is its stand-in).

    .venv/bin/python bench/probes/predicted_words.py --corpus bench/paraphrases --out /tmp/pw-para.json \
        --cache /tmp/pw-cache
    .venv/bin/python bench/probes/predicted_words.py --report /tmp/pw-para.json
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import retrieve  # noqa: E402
from infinipot_cli.pot.archive import STOPWORDS, words  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from attention_retrieval import gold_units  # noqa: E402
from sentence_embeddings import documents, probe_args, variant_table  # noqa: E402

WINDOW = 1024
TOP = 50  # predictions kept per position
LAM = 1.0


def variants(K: int, seg: torch.Tensor, top: torch.Tensor, prob: torch.Tensor, vocab: dict[int, str],
             has: list[set[str]]) -> dict[str, list[set[str]]]:
    """{name: each unit's expected words}: the whole words among the top k predictions at its positions ("rank
    k"), or the M words of the most probability summed over its positions ("mass M"), or over fixed windows of
    16 positions, each unit taking those of the windows it overlaps ("window16 M")."""
    N = top.shape[0]
    out: dict[str, list[set[str]]] = {}
    for k in (5, 20, 50):
        sets = [set() for _ in range(K)]
        for t in range(N):
            u = int(seg[t])
            for i in top[t, :k].tolist():
                w = vocab.get(i)
                if w is not None and w not in has[u]:
                    sets[u].add(w)
        out[f"rank {k}"] = sets
    mass = [Counter() for _ in range(K)]
    win = [Counter() for _ in range((N + 15) // 16)]
    for t in range(N):
        u = int(seg[t])
        for i, p in zip(top[t].tolist(), prob[t].tolist()):
            w = vocab.get(i)
            if w is not None:
                mass[u][w] += p
                win[t // 16][w] += p
    for M in (16, 32, 64):
        out[f"mass {M}"] = [{w for w, _ in c.most_common(M) if w not in has[u]} for u, c in enumerate(mass)]
        kept = [{w for w, _ in c.most_common(M)} for c in win]
        sets = [set() for _ in range(K)]
        for t in range(0, N, 16):
            for u in set(seg[t:t + 16].tolist()):
                sets[u] |= kept[t // 16] - has[u]
        out[f"window16 {M}"] = sets
    return out


def whole_words(tok) -> dict[int, str]:
    """{token id: word} for the vocabulary's tokens that are a whole word of 3+ letters after a space."""
    out = {}
    for i in range(len(tok)):
        s = tok.decode([i])
        if s.startswith(" ") and s[1:].isalpha() and len(s) >= 4:
            w = words(s)
            if w and w[0] not in STOPWORDS:
                out[i] = w[0]
    return out


def expected(model, ids: list[int], k: int = TOP) -> tuple[torch.Tensor, torch.Tensor]:
    """(N, k) ids and (N, k) probabilities of the top-k predictions for each position's token (row t: the
    prediction made at t - 1; row 0: none, id -1)."""
    top = torch.full((len(ids), k), -1, dtype=torch.long)
    prob = torch.zeros(len(ids), k)
    for a in range(0, len(ids), WINDOW):
        x = torch.tensor(ids[a:a + WINDOW])[None]
        with torch.no_grad():
            logp = model(input_ids=x).logits[0].float().log_softmax(-1)          # (W, V)
        v, i = logp.topk(k, dim=-1)                                              # (W, k)
        top[a + 1:a + x.shape[1]] = i[:-1]
        prob[a + 1:a + x.shape[1]] = v[:-1].exp()
    return top, prob


def cached(model, ids: list[int], cache: str | None, corpus: str, did: str) -> tuple[torch.Tensor, torch.Tensor]:
    """`expected(model, ids)`, kept per document in the folder `cache` (None: not kept) and read from it after."""
    kept = Path(cache) / f"{Path(corpus).name}-{did}.pt" if cache else None
    if kept is not None and kept.exists():
        return torch.load(kept)
    got = expected(model, ids)
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        torch.save(got, kept)
    return got


@dataclass
class Doc:
    """A document of a probe's corpus: its units (`seg`: each token's unit; `has`: each unit's words) and the model's
    predictions at every position (`top`, `prob`: (N, TOP) each, as `expected` gives them)."""
    did: str
    eng: object
    seg: torch.Tensor
    texts: list[str]
    has: list[set[str]]
    top: torch.Tensor
    prob: torch.Tensor


def run(doc: str, label: str, width: int, per_doc) -> None:
    """The command line and loop of a probe that ranks units with the model's predictions: --report prints a saved
    --out file's table; else each document of --corpus is read and predicted (`cached`), `per_doc(model, tok,
    vocab, d, questions)` gives a scorer, and for every question whose answer's unit is located its variants'
    scores `scorer(q, w)` ({name: (K,)}; w: the words' ranking) are saved to --out and tabled (`label` formats
    a variant's name)."""
    a = probe_args(doc, cache=True)
    if a.report:
        variant_table(json.loads(Path(a.report).read_text()), "exp", label, width)
        return
    lm = load_model(None)
    model, tok = lm.model.float().eval(), lm.tokenizer
    vocab = whole_words(tok)
    recs = []
    for did, qs, eng, (_, seg, texts), t0 in documents(tok, a.corpus, a.max_tokens):
        top, prob = cached(model, eng.ids, a.cache, a.corpus, did)              # (N, TOP) each
        K = len(texts)
        d = Doc(did, eng, seg, texts, [set(words(t)) for t in texts], top, prob)
        score = per_doc(model, tok, vocab, d, qs)
        first = torch.full((K,), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, torch.arange(seg.numel()), "amin")
        heading = retrieve.headings(eng, first, texts)
        for q in qs:
            gold = gold_units(texts, q)
            if not gold:
                continue
            w = retrieve.rank(texts, q["question"], heading)
            recs.append({"id": q["id"], "words": w.tolist(), "gold": sorted(gold),
                         "exp": {k: v.tolist() for k, v in score(q, w).items()}})
        print(f"{did}: {len(eng.ids)} tokens, {K} units, {len(qs)} questions, {time.time() - t0:.0f} s", flush=True)
    Path(a.out).write_text(json.dumps(recs))
    variant_table(recs, "exp", label, width)


def main() -> None:
    def per_doc(model, tok, vocab, d: Doc, qs):
        K = len(d.texts)
        exp = variants(K, d.seg, d.top, d.prob, vocab, d.has)

        def score(q, w):
            terms = [x for x in dict.fromkeys(words(q["question"])) if x not in STOPWORDS]
            scores = {}
            for name, sets in exp.items():
                e = torch.zeros(K)
                for x in terms:
                    df = sum(x in h or x in c for h, c in zip(d.has, sets))
                    if not df:
                        continue
                    idf = math.log(1 + (K - df + 0.5) / (df + 0.5))
                    e += torch.tensor([idf if x in c else 0.0 for c in sets])
                for lam in (LAM, 2 * LAM):
                    scores[f"{name}, x{lam}"] = w + lam * e
            return scores
        return score

    run(__doc__, "+ expected words k,lam={}", 32, per_doc)


if __name__ == "__main__":
    main()
