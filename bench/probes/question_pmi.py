#!/usr/bin/env python3
"""Where, while reading, did the model expect the question's own words? (the question known while reading;
docs/results/model-retrieval.md)

A probe, not a bench. The read keeps each window's 32 most probable words (scoring/expected.py), the head of the
distribution: a question's word that the model gave 1 % where the answer stands, and 0.001 % elsewhere, is not
among them. When the question is known while reading (`ask DOC Q`), the read could keep instead, at every
position, the probability of the question's words themselves. This probe measures whether that would rank the
answer's unit higher: for each content word w of the question (its first token, when that is a whole word), the
pointwise mutual information of w at each position, log p(w | before t) - mean over the document; a unit that
lacks w but where the PMI reaches THETA nats at one of its positions counts `lam` x idf(w), on top of the shipped
ranking (the words and the read's expected words). Read in windows of 1,024 tokens, float32, as
predicted_words.py.

    .venv/bin/python bench/probes/question_pmi.py --corpus bench/paraphrases --out /tmp/qp-para.json
    .venv/bin/python bench/probes/question_pmi.py --report /tmp/qp-para.json
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.pot.archive import content_terms  # noqa: E402
from predicted_words import WINDOW, Doc, run  # noqa: E402
from question_expansion import idf_part, shipped  # noqa: E402

THETAS = (2.0, 4.0, 6.0)
LAMS = (0.5, 1.0)


def first_tokens(tok, terms: list[str], vocab: dict[int, str]) -> dict[str, int]:
    """{word: the id of its first token after a space} for the words whose first token is a whole word."""
    out = {}
    for w in terms:
        ids = tok.encode(" " + w, add_special_tokens=False)
        if ids and ids[0] in vocab:
            out[w] = ids[0]
    return out


def logprobs(model, ids: list[int], want: list[int]) -> torch.Tensor:
    """(N, len(want)) log p(want[j] | tokens before position t) for every position t (row 0: the mean of the
    others: no prediction)."""
    out = torch.zeros(len(ids), len(want))
    cols = torch.tensor(want)
    for a in range(0, len(ids), WINDOW):
        x = torch.tensor(ids[a:a + WINDOW])[None]
        with torch.no_grad():
            logp = model(input_ids=x).logits[0].float().log_softmax(-1)          # (W, V)
        out[a + 1:a + x.shape[1]] = logp[:-1, cols]
    if len(ids) > 1:
        out[0] = out[1:].mean(0)
    return out


def main() -> None:
    def per_doc(model, tok, vocab, d: Doc, qs):
        K = len(d.texts)
        sets = shipped(K, d.seg, d.top, d.prob, vocab)
        asked = {q["id"]: first_tokens(tok, content_terms(q["question"]), vocab) for q in qs}
        union = sorted({i for m in asked.values() for i in m.values()})
        lp = logprobs(model, d.eng.ids, union) if union else torch.zeros(len(d.eng.ids), 0)   # (N, U)
        pmi = lp - lp.mean(0, keepdim=True)                                                    # (N, U) nats
        col = {i: j for j, i in enumerate(union)}
        # each unit's highest PMI of each asked word over its positions: (K, U)
        best = torch.full((K, len(union)), -1e9).scatter_reduce(
            0, d.seg[:, None].expand(-1, len(union)), pmi, "amax")

        def score(q, w):
            base = w + idf_part(content_terms(q["question"]), d.has, sets)
            scores = {"words + expected (shipped)": base}
            for theta in THETAS:
                e = torch.zeros(K)
                for word, i in asked[q["id"]].items():
                    hit = [bool(best[u, col[i]] >= theta) and word not in d.has[u] for u in range(K)]
                    df = sum(hit) + sum(word in h for h in d.has)
                    if not any(hit) or df >= K:
                        continue
                    e += math.log(1 + (K - df + 0.5) / (df + 0.5)) * torch.tensor(hit, dtype=torch.float)
                for lam in LAMS:
                    scores[f"+ question words' PMI >= {theta}, x{lam}"] = base + lam * e
            return scores
        return score

    run(__doc__, "{}", 40, per_doc)


if __name__ == "__main__":
    main()
