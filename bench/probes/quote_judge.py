#!/usr/bin/env python3
"""Does the model pick the sentence to quote better than the words, among the quoted sentence and its neighbours?

A probe, not a bench. Where `ask` answers with a quoted sentence (the model's own answer gave way), the words
chose that sentence: the one of the best passage that shares most of the question's words. A question in a
reader's own words shares few, and the sentence that answers it is often the one before or after ("The c
(confirm) flag tells :substitute to ask you for confirmation ..." before "Vim finds the first occurrence ...").
For each quoted answer of a recorded `bench qa` run (its qa.json), the quoted sentence and the sentences right
before and after it are judged by the model: log P(question | sentence) (judge.likelihoods, UPR, the chat
prompt `ask` uses). Reported, per set: right as quoted; the model's likeliest of the three quoted instead
("replace"); the model's likeliest neighbour quoted with the sentence when it is likelier than the sentence
("add"); each beside how many quotes the model moved.

    .venv/bin/python bench/probes/quote_judge.py --corpus bench/paraphrases --run OUT/qa.json --out F
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import answering, quotes  # noqa: E402
from infinipot_cli.answer.judge import likelihoods  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot import reader  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from attention_retrieval import by_phrasing, paraphrased, report_rows  # noqa: E402
from question_likelihood import TextOnly  # noqa: E402
from replay_decide import hit  # noqa: E402


def flat(text: str) -> str:
    return " ".join(text.split())


def neighbours(texts: list[str], lo: int, hi: int) -> list[tuple[int, int]]:
    """The sentence [lo, hi] and the sentences right before and after it (units with words only)."""
    out = [(lo, hi)]
    k = lo - 1
    while k >= 0 and not any(c.isalnum() for c in texts[k]):
        k -= 1
    if k >= 0:
        out.append(answering.sentence_units(texts, k))
    k = hi + 1
    while k < len(texts) and not any(c.isalnum() for c in texts[k]):
        k += 1
    if k < len(texts):
        out.append(answering.sentence_units(texts, k))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--run", required=True, help="a bench qa run's qa.json")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lm = load_model(None)
    table, questions = load_corpus(Path(a.corpus))
    qs = {q["id"]: q for q in questions}
    recs = [r for r in json.loads(Path(a.run).read_text())["records"]
            if r["flow"] == "read-then-ask" and r["how"] == "quoted" and not r["unanswerable"]]
    rows = []
    for did, doc in table.items():
        mine = [r for r in recs if r["doc"] == did]
        if not mine:
            continue
        eng = TextOnly(lm.tokenizer)
        src = _open(doc)
        reader.read_source(eng, lm.tokenizer, src, reader.SourceRecord(path=src.path, format=src.format))
        texts = eng.derived(None, None, None)[2]
        shown = {}
        for u in range(len(texts)):
            lo, hi = quotes.quote_units(texts, u)
            shown.setdefault(flat("".join(texts[lo:hi + 1])), (lo, hi, u))
        for r in mine:
            got = shown.get(flat(r["short"]))
            if got is None:
                print(f"{r['id']}: quote not found", flush=True)
                continue
            at, unit = got[:2], got[2]
            alone = (answering.sentence_units(texts, unit)[0], at[1])  # without the sentence its pronoun names
            sents = neighbours(texts, *at)
            said = [flat("".join(texts[lo:hi + 1])) for lo, hi in sents]
            scores = likelihoods(lm.model, lm.tokenizer, r["question"], said, "chat")
            golds = r["answers"]
            best = max(range(len(said)), key=lambda i: scores[i])
            add = r["short"] if best == 0 else (said[best] + " " + r["short"] if sents[best][0] < at[0]
                                                 else r["short"] + " " + said[best])
            rows.append({"id": r["id"], "para": paraphrased(qs[r["id"]]),
                         "quoted": hit(r["short"], golds), "replace": hit(said[best], golds),
                         "add": hit(add, golds), "moved": best != 0, "scores": scores,
                         "holds": [hit(s, golds) for s in said],
                         "referred": alone[0] != at[0],
                         "alone": hit(flat("".join(texts[alone[0]:alone[1] + 1])), golds)})
            print(f"{r['id']}: quoted {rows[-1]['quoted']} model {rows[-1]['replace']} (moved {best != 0})",
                  flush=True)

    def line(rs):
        return {"quotes": len(rs), "a neighbour holds it": sum(any(r["holds"][1:]) and not r["holds"][0] for r in rs),
                "right as quoted": sum(r["quoted"] for r in rs), "replace": sum(r["replace"] for r in rs),
                "add": sum(r["add"] for r in rs), "moved": sum(r["moved"] for r in rs),
                "pronoun's sentence added": sum(r["referred"] for r in rs),
                "right without it": sum(r["alone"] for r in rs)}
    report_rows({"corpus": a.corpus, "run": a.run, **by_phrasing(rows, line), "rows": rows}, a.out)


if __name__ == "__main__":
    main()
