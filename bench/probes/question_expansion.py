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

import json
import math
import sys
import time
from collections import Counter
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import retrieve  # noqa: E402
from infinipot_cli.pot.archive import STOPWORDS, words  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from attention_retrieval import gold_units  # noqa: E402
from predicted_words import cached, whole_words  # noqa: E402
from sentence_embeddings import documents, probe_args, variant_table  # noqa: E402

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


def report(recs: list[dict]) -> None:
    variant_table(recs, "exp", "{}", 44)


def main() -> None:
    a = probe_args(__doc__, cache=True)
    if a.report:
        report(json.loads(Path(a.report).read_text()))
        return
    lm = load_model(None)
    model, tok = lm.model.float().eval(), lm.tokenizer
    vocab = whole_words(tok)
    recs = []
    for did, qs, eng, (_, seg, texts), t0 in documents(tok, a.corpus, a.max_tokens):
        top, prob = cached(model, eng.ids, a.cache, a.corpus, did)              # (N, 50) each
        has = [set(words(t)) for t in texts]
        K = len(texts)
        sets = shipped(K, seg, top, prob, vocab)
        first = torch.full((K,), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, torch.arange(seg.numel()), "amin")
        heading = retrieve.headings(eng, first, texts)
        for q in qs:
            gold = gold_units(texts, q)
            if not gold:
                continue
            w = retrieve.rank(texts, q["question"], heading)
            terms = [x for x in dict.fromkeys(words(q["question"])) if x not in STOPWORDS]
            base = w + idf_part(terms, has, sets)                                        # as shipped
            scores = {"words + expected (shipped)": base.tolist()}
            for k in (5, 10, 20):
                extra = sorted(question_words(model, tok, q["question"], vocab, k))
                in_words = idf_part(extra, has, None)
                in_both = in_words + idf_part(extra, has, sets)
                for lam in (0.25, 0.5, 1.0):
                    scores[f"+ question's top {k} in words, x{lam}"] = (base + lam * in_words).tolist()
                    scores[f"+ question's top {k} in words or expected, x{lam}"] = (base + lam * in_both).tolist()
            recs.append({"id": q["id"], "words": w.tolist(), "exp": scores, "gold": sorted(gold)})
        print(f"{did}: {len(eng.ids)} tokens, {K} units, {len(qs)} questions, {time.time() - t0:.0f} s", flush=True)
    Path(a.out).write_text(json.dumps(recs))
    report(recs)


if __name__ == "__main__":
    main()
