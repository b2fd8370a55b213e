#!/usr/bin/env python3
"""Can the model judge which sentence of the evidence answers a question? (docs/results/model-retrieval.md)

A probe, not a bench. For each question of a corpus folder (bench/corpus, bench/testset) it finds the passages
`ask` finds (retrieve.passages over the document's units, the words ranking), takes every sentence of them as a
candidate, and ranks the candidates two ways: the words (the passage's top unit first, as `quoted` and the span
weights do) and the model's likelihood of the question given the sentence (UPR, Sachan et al. 2022: log
P(question | the sentence, shown in the model's chat template as a text to write a question about; --style plain:
"Passage: <sentence> A question this passage answers:"). A question counts when a candidate holds one of its
answers; a ranking is right when its first candidate holds one; "gated": the model's first only where the words'
first sentence holds less than GATE of the question's words (what `ask` does: the judge's code is `ask`'s own,
infinipot_cli/answer/judge.py; model-retrieval.md).
Paraphrased questions are reported apart.

The document's units are made from its tokens as the reader cuts them (no model read is needed: the units of a
read are the units of its tokens).

    .venv/bin/python bench/probes/question_likelihood.py --corpus bench/testset --out /tmp/upr-testset.json
    .venv/bin/python bench/probes/question_likelihood.py --corpus bench/corpus --out /tmp/upr-corpus.json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import answering, evidence as ev, retrieve  # noqa: E402
from infinipot_cli.answer.judge import GATE, candidates, likelihoods, overlap, sentence  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot import reader  # noqa: E402
from infinipot_cli.pot.scoring.segments import BoundaryTable  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from attention_retrieval import by_phrasing, report_rows  # noqa: E402


class TextOnly:
    """What retrieve.passages needs of an engine, from the document's tokens alone (no forward)."""

    def __init__(self, tokenizer):
        self.tok = tokenizer
        self.boundaries = BoundaryTable(tokenizer)
        self.provenance: list[tuple[int, str]] = []
        self.ids: list[int] = []
        self.where = ""
        self._units = None

    @property
    def tokens_read(self) -> int:
        return len(self.ids)

    def feed(self, ids, where=""):
        if where and (not self.provenance or self.provenance[-1][1] != where):
            self.provenance.append((len(self.ids), where))
        self.ids.extend(ids)

    def finish(self):
        pass

    def drop_pending(self):
        pass

    def derived(self, name, key, compute):
        if self._units is None:
            n = len(self.ids)
            src = torch.arange(n)
            seg, texts = ev.units(src, torch.tensor(self.ids), self.tok, self.boundaries,
                                  parts=ev.part_ids(src, ev.part_starts(self.provenance)))
            self._units = (src, seg, texts)
        return self._units


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("-m", "--model", default=None, help="the reader, as `infinipot -m` takes it (default: the built-in model)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--style", default="chat", choices=("plain", "chat"), help="likelihoods' prompt")
    a = ap.parse_args()
    lm = load_model(a.model)
    table, questions = load_corpus(Path(a.corpus))
    rows = []
    for did, doc in table.items():
        t0 = time.time()
        eng = TextOnly(lm.tokenizer)
        src = _open(doc)
        reader.read_source(eng, lm.tokenizer, src, reader.SourceRecord(path=src.path, format=src.format))
        for q in [q for q in questions if q["doc"] == did and q.get("answers")]:
            got = retrieve.passages(eng, q["question"], (), n=ev.MAX_PASSAGES)
            if got is None:
                continue
            found, (_, seg, texts) = got[0], got[1]
            if not found:
                rows.append({"id": q["id"], "para": q.get("phrasing") == "paraphrase", "held": False})
                continue
            cands = candidates(found, texts)
            sent = [sentence(texts, u) for u in cands]
            holds = [any(x.lower() in s.lower() for x in q["answers"]) for s in sent]
            words_first = found[0].top
            lo, hi = answering.sentence_units(texts, words_first)
            w_holds = any(x.lower() in "".join(texts[lo:hi + 1]).lower() for x in q["answers"])
            scores = likelihoods(lm.model, lm.tokenizer, q["question"], sent, a.style)
            first = torch.full((len(texts),), 1 << 62, dtype=torch.long).scatter_reduce(
                0, seg, torch.arange(seg.numel()), "amin")
            wsc = retrieve.rank(texts, q["question"], retrieve.headings(eng, first, texts))
            order = sorted(range(len(cands)), key=lambda i: -scores[i])
            rank = next((r for r, i in enumerate(order) if holds[i]), None)
            rows.append({"id": q["id"], "para": q.get("phrasing") == "paraphrase", "held": any(holds),
                         "n": len(cands), "words_first": w_holds, "model_first": holds[order[0]],
                         "model_rank": rank, "upr": scores, "words": [float(wsc[u]) for u in cands],
                         "holds": holds, "tokens": [len(lm.tokenizer.encode(x)) for x in sent],
                         "in_first": [u in found[0].units for u in cands],
                         "overlap": [overlap(q["question"], x) for x in sent], "top_passage_first": any(holds[i] for i in order[:1]
                                                                      if cands[i] in found[0].units)})
        print(f"{did}: {eng.tokens_read} tokens, {time.time() - t0:.0f} s", flush=True)

    def line(rs):
        held = [r for r in rs if r["held"]]
        return {"questions": len(rs), "held": len(held), "words first": sum(r["words_first"] for r in held),
                "model first": sum(r["model_first"] for r in held),
                "model top 3": sum(r["model_rank"] is not None and r["model_rank"] < 3 for r in held),
                # the model's first where the words' first sentence holds < GATE of the question's words
                "gated first": sum(r["model_first"] if r["overlap"][0] < GATE else r["words_first"]
                                   for r in held),
                "gate fires": sum(r["overlap"][0] < GATE for r in rs if r.get("overlap"))}
    report_rows({"corpus": a.corpus, **by_phrasing(rows, line), "rows": rows}, a.out)


if __name__ == "__main__":
    main()
