#!/usr/bin/env python3
"""Do the words the model expects in the question bridge a paraphrase, beside those it expected in the document?
(docs/results/model-retrieval.md)

A probe, not a bench. The read keeps, per 16 document positions, the words the model expected there
(scoring/expected.py: document expansion). This is the other side: the question is read by the same model
("Question: <question>"), and at each of its words the model ranks the words that could have stood there
("How do I force a [repaint] ..." -> refresh, redraw, restart ...): query expansion from the reader's own
distribution (lexical substitution by a language model). A unit holding such a word the question lacks counts
`lam` x its idf, on top of the words and the document's expected words as shipped (top 20 a position, 32 words a
window of 16). Where the gold unit ranks is compared with the shipped ranking.

    .venv/bin/python bench/probes/question_expansion.py --corpus bench/paraphrases --out /tmp/qe-para.json \
        --cache /tmp/pw-cache            # (the same cache as predicted_words.py)
    .venv/bin/python bench/probes/question_expansion.py --report /tmp/qe-para.json
"""

from __future__ import annotations

import math
import sys
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.pot.archive import STOPWORDS, content_terms, words  # noqa: E402
from predicted_words import Doc, run  # noqa: E402

SHIPPED_TOP, SHIPPED_KEEP, WINDOW = 20, 32, 16  # scoring/expected.py's TOP, KEEP, WINDOW


def shipped(K: int, seg: torch.Tensor, top: torch.Tensor, prob: torch.Tensor, vocab: dict[int, str]) -> list[set[str]]:
    """Each unit's expected words as the read keeps them: per window of 16 positions the 32 whole words of most
    probability summed over the positions' 20 best predictions, a unit taking its windows' words."""
    N = top.shape[0]
    win = [Counter() for _ in range((N + WINDOW - 1) // WINDOW)]
    for t in range(N):
        for i, p in zip(top[t, :SHIPPED_TOP].tolist(), prob[t, :SHIPPED_TOP].tolist()):
            w = vocab.get(i)
            if w is not None:
                win[t // WINDOW][w] += p
    kept = [{w for w, _ in c.most_common(SHIPPED_KEEP)} for c in win]
    sets = [set() for _ in range(K)]
    for t in range(0, N, WINDOW):
        for u in set(seg[t:t + WINDOW].tolist()):
            sets[u] |= kept[t // WINDOW]
    return sets


def question_words(model, tok, question: str, vocab: dict[int, str], k: int) -> set[str]:
    """The whole words among the model's k most probable tokens at each whole word of the question, given the
    words before it, less the question's own words."""
    ids = tok.encode("Question: " + question.strip(), add_special_tokens=False)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(ids)[None]).logits[0].float()          # (n, V)
    own = set(words(question))
    out: set[str] = set()
    for t in range(1, len(ids)):
        if ids[t] not in vocab:  # a piece, a number, a mark: no word stood there
            continue
        for i in logits[t - 1].topk(k).indices.tolist():
            w = vocab.get(i)
            if w is not None and w not in own and w not in STOPWORDS:
                out.add(w)
    return out


def idf_part(terms, has: list[set[str]], sets: list[set[str]] | None) -> torch.Tensor:
    """Each unit's summed idf of the `terms` it holds (in its words, or with `sets` in its expected words only,
    counted where its words lack them)."""
    K = len(has)
    e = torch.zeros(K)
    for x in terms:
        df = sum(x in h or (sets is not None and x in c) for h, c in zip(has, sets or has))
        if not df:
            continue
        idf = math.log(1 + (K - df + 0.5) / (df + 0.5))
        e += torch.tensor([idf if (x in c if sets is not None else x in h) and (sets is None or x not in h) else 0.0
                           for h, c in zip(has, sets or has)])
    return e


def main() -> None:
    def per_doc(model, tok, vocab, d: Doc, qs):
        sets = shipped(len(d.texts), d.seg, d.top, d.prob, vocab)

        def score(q, w):
            base = w + idf_part(content_terms(q["question"]), d.has, sets)                # as shipped
            scores = {"words + expected (shipped)": base}
            for k in (5, 10, 20):
                extra = sorted(question_words(model, tok, q["question"], vocab, k))
                in_words = idf_part(extra, d.has, None)
                in_both = in_words + idf_part(extra, d.has, sets)
                for lam in (0.25, 0.5, 1.0):
                    scores[f"+ question's top {k} in words, x{lam}"] = base + lam * in_words
                    scores[f"+ question's top {k} in words or expected, x{lam}"] = base + lam * in_both
            return scores
        return score

    run(__doc__, "{}", 44, per_doc)


if __name__ == "__main__":
    main()
