#!/usr/bin/env python3
"""Does the model supply the words a paraphrased question lacks? (docs/results/model-retrieval.md, "Does the model
give a paraphrase's words their synonyms?")

A probe, not a bench. Query expansion from the model's own language: each content word of a question that the
document lacks is put at the end of a synonym list ("big = large" ... "shrink =") and the document's words the
model continues it with (the whole word: its tokens and the line's end, at least MIN_P likely, PER_WORD at most)
stand in for it in the ranking, at EXPANSION_WEIGHT of their idf. For each paraphrased question of a corpus folder
whose answer's sentence is found in the document's text (its sentences cut at . ! ? and line ends; no read is
needed), where that sentence ranks among the document's sentences by the words alone (idf of the question's
content words, evidence.word_scores) and with the alternatives beside them, at each weight asked for: first, in
the first 4, in the first 10. `--all-words`: every content word is asked about (the 8 rarest), not only those the
document lacks.

The end-to-end variant (the same alternatives re-ranking a paraphrase's passages before the judge, in `ask`) is
docs/results/runs/qa-paraphrases/synonym-expansion/variant.diff; measured there, not kept.

    .venv/bin/python bench/probes/synonyms.py --corpus bench/paraphrases --weights 0.5,1
    .venv/bin/python bench/probes/synonyms.py --corpus bench/testset --weights 0.5,1
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Sequence

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from infinipot_cli.answer import evidence as ev  # noqa: E402
from infinipot_cli.documents import open_source  # noqa: E402
from infinipot_cli.pot.archive import STOPWORDS, words  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from infinipot_cli.runtime.threads import configure  # noqa: E402

# the list the model continues: common words and their synonyms, one a line
SHOTS = "Synonyms:\nbig = large\nquick = fast\nbegin = start\nerase = delete\nshow = display\n"
FIRST = 32               # first tokens considered for each question word (the most likely ones)
MIN_P = 0.02             # an alternative the model gives at least this probability, whole word and line end
PER_WORD = 3             # alternatives kept for each question word, the likeliest
MAX_WORDS = 8            # question words asked about at most
EXPANSION_WEIGHT = 1.0   # an alternative's idf counts this much of its own
ALL_WORDS = False        # ask about every content word (the rarest first), not only those the document lacks
_SURFACE = re.compile(r"[a-z][a-z-]*[a-z]")


def asked(question: str) -> list[str]:
    """The question's content words the model is asked about: alphabetic, at least 3 letters, no stop word, in
    the question's order, each once."""
    out = [w for w in dict.fromkeys(words(question)) if w not in STOPWORDS and len(w) >= 3 and w.isalpha()]
    return out


def _related(a: str, b: str) -> bool:
    """Whether two words are forms of one ("shrink" / "shrinking" / "shrinkage"): a shared head of 5 letters,
    or one the other's head."""
    n = min(len(a), len(b))
    return a[:min(5, n)] == b[:min(5, n)] and (n >= 5 or a.startswith(b) or b.startswith(a))


def vocabulary(texts: Sequence[str]) -> dict[str, str]:
    """{surface: term} of the document's lower-case words (surface as written, at least 3 letters; term as
    words() counts it)."""
    out: dict[str, str] = {}
    for t in texts:
        for s in _SURFACE.findall(t.lower()):
            if s not in out and len(s) >= 3:
                w = words(s)
                if len(w) == 1 and w[0] not in STOPWORDS:
                    out[s] = w[0]
    return out


@torch.no_grad()
def alternatives(model, tokenizer, question: str, texts: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """{question word: [(document term, probability), ...]}: for each content word of the question (`asked`, the
    MAX_WORDS rarest in the document), the document's words the model continues "<word> =" with in SHOTS'
    synonym list, likeliest first (at least MIN_P, PER_WORD at most, none a form of a question word)."""
    vocab = vocabulary(texts)
    q = asked(question)
    if not q or not vocab:
        return {}
    df: dict[str, int] = {}
    for t in texts:
        for w in set(words(t)):
            df[w] = df.get(w, 0) + 1
    q = (sorted(q, key=lambda w: df.get(w, 0)) if ALL_WORDS else [w for w in q if not df.get(w)])[:MAX_WORDS]
    if not q:
        return {}
    dev = next(model.parameters()).device
    prompts = [tokenizer.encode(SHOTS + w + " =", add_special_tokens=False) for w in q]
    first = _last_logprobs(model, prompts, dev)                                  # (W, V)
    top = first.topk(min(FIRST, first.shape[-1]), dim=-1).indices.tolist()     # (W, FIRST)
    surfaces = [s for s in vocab if not any(_related(s, w) for w in q)]
    ids = tokenizer([" " + s for s in surfaces], add_special_tokens=False)["input_ids"]
    by_first: dict[int, list[int]] = {}
    for i, t in enumerate(ids):
        if t:
            by_first.setdefault(t[0], []).append(i)
    end = tokenizer.encode("\n", add_special_tokens=False)
    rows, owners = [], []
    for wi, tops in enumerate(top):
        for tid in tops:
            if float(first[wi, tid]) < math.log(MIN_P):  # the whole word is no likelier than its first token
                continue
            for i in by_first.get(tid, []):
                rows.append(prompts[wi] + ids[i] + end)
                owners.append((wi, i, len(prompts[wi])))
    out: dict[str, list[tuple[str, float]]] = {}
    if not rows:
        return out
    scores = _row_logprobs(model, rows, owners, dev)
    best: dict[tuple[int, str], float] = {}
    for (wi, i, _), lp in zip(owners, scores):
        term = vocab[surfaces[i]]
        key = (wi, term)
        best[key] = max(best.get(key, -math.inf), lp)
    for (wi, term), lp in best.items():
        p = math.exp(lp)
        if p >= MIN_P and term not in q:
            out.setdefault(q[wi], []).append((term, p))
    return {w: sorted(a, key=lambda x: -x[1])[:PER_WORD] for w, a in out.items()}


def _last_logprobs(model, prompts: list[list[int]], dev) -> torch.Tensor:
    """(W, V) log-probabilities of the token after each prompt (left-padded into one batch)."""
    n = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), n, dtype=torch.long)
    mask = torch.zeros(len(prompts), n, dtype=torch.long)
    for b, p in enumerate(prompts):
        ids[b, n - len(p):] = torch.tensor(p)
        mask[b, n - len(p):] = 1
    pos = (mask.cumsum(-1) - 1).clamp_min(0)
    logits = model(input_ids=ids.to(dev), attention_mask=mask.to(dev), position_ids=pos.to(dev)).logits
    return logits[:, -1].float().log_softmax(-1).cpu()


BATCH = 64


def _row_logprobs(model, rows: list[list[int]], owners: list[tuple[int, int, int]], dev) -> list[float]:
    """For each row (prompt + a word's tokens + the line's end), the summed log-probability of what follows its
    prompt (owners[r][2]: the prompt's length)."""
    out: list[float] = []
    for a in range(0, len(rows), BATCH):
        part = rows[a:a + BATCH]
        n = max(len(r) for r in part)
        ids = torch.zeros(len(part), n, dtype=torch.long)          # (B, n) right-padded
        mask = torch.zeros(len(part), n, dtype=torch.long)
        for b, r in enumerate(part):
            ids[b, :len(r)] = torch.tensor(r)
            mask[b, :len(r)] = 1
        logp = model(input_ids=ids.to(dev), attention_mask=mask.to(dev)).logits.float().log_softmax(-1).cpu()
        for b, r in enumerate(part):
            k = owners[a + b][2]
            at = torch.arange(k - 1, len(r) - 1)
            out.append(float(logp[b, at, torch.tensor(r[k:])].sum()))
    return out


def expanded(texts: Sequence[str], question: str, alt: dict[str, list[tuple[str, float]]]) -> torch.Tensor:
    """(K,) for each unit, what the alternatives add to its words' score: for each question word the unit lacks,
    EXPANSION_WEIGHT x the idf (over the units) of the best of its alternatives the unit has."""
    K = len(texts)
    out = torch.zeros(K)
    if not alt or not K:
        return out
    has = [set(words(t)) for t in texts]

    def idf(w: str) -> float:
        df = sum(w in h for h in has)
        return math.log(1 + (K - df + 0.5) / (df + 0.5)) if df else 0.0

    for w, terms in alt.items():
        weights = [(t, EXPANSION_WEIGHT * idf(t)) for t, _ in terms]
        for k in range(K):
            if w in has[k]:
                continue
            got = [x for t, x in weights if t in has[k]]
            if got:
                out[k] += max(got)
    return out


def main() -> None:
    global EXPANSION_WEIGHT, ALL_WORDS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--weights", default="0.5,1")
    ap.add_argument("--all-words", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    ALL_WORDS = a.all_words
    configure(a.threads)
    lm = load_model(None)
    base = Path(a.corpus)
    corpus = {d["id"]: d for d in json.load(open(base / "corpus.json"))}
    texts_of: dict[str, list[str]] = {}
    weights = [0.0] + [float(w) for w in a.weights.split(",")]
    hits = {w: [0, 0, 0] for w in weights}
    n, spent = 0, 0.0
    for q in json.load(open(base / "questions.json")):
        if q.get("phrasing") != "paraphrase" or not q.get("answers"):
            continue
        d = corpus[q["doc"]]
        if d["id"] not in texts_of:
            src = open_source(str(base / d["path"]))
            text = "\n".join(p.text for p in src.passages())
            texts_of[d["id"]] = [s for s in re.split(r"(?<=[.!?\n])\s+", text) if s.strip()]
        texts = texts_of[d["id"]]
        gw = set(words(q["passage"]))
        gold = {k for k, t in enumerate(texts) if any(x in t for x in q["answers"])
                and len(set(words(t)) & gw) >= max(2, 0.5 * len(set(words(t))))}
        if not gold:
            continue
        n += 1
        t0 = time.time()
        alt = alternatives(lm.model, lm.tokenizer, q["question"], texts)
        spent += time.time() - t0
        print(q["id"], {w: [t for t, _ in v] for w, v in alt.items()}, flush=True)
        plain = ev.word_scores(texts, q["question"])
        for w in weights:
            EXPANSION_WEIGHT = w
            s = plain + expanded(texts, q["question"], alt) if w else plain
            order = s.argsort(descending=True).tolist()
            r = min(order.index(g) for g in gold)
            for i, top in enumerate((1, 4, 10)):
                hits[w][i] += r < top
    print(f"{a.corpus}: {n} paraphrased questions with the answer's sentence found; {spent / max(n, 1):.2f} s a question")
    for w, (t1, t4, t10) in hits.items():
        print(f"  weight {w}: first {t1}, first 4 {t4}, first 10 {t10}")


if __name__ == "__main__":
    main()
