#!/usr/bin/env python3
"""Would the model's own sentence embeddings put a paraphrase's answer before the judge? (model-retrieval.md)

A probe, not a bench. For each question: the sentences of the passages `ask` finds by the words (judge.candidates)
and those of the units the model's embedding ranks first (sentence_embeddings.embed: PromptEOL, layer LAYER), each
with its UPR likelihood (judge.likelihoods), its cosine with the question and whether it holds an answer; the
overlap of the words' best sentence with the question (the judge's gate). A simulation then tries pools and
rankings on the saved rows.

    .venv/bin/python bench/probes/meaning_judge.py --corpus bench/paraphrases --out /tmp/mj-para.json
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
from infinipot_cli.answer.judge import candidates, likelihoods, overlap, sentence  # noqa: E402
from infinipot_cli.answer.evidence import sentence_units  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
import sentence_embeddings as se  # noqa: E402

EXTRA = 8   # the embedding's first units whose sentences join the pool


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-tokens", type=int, default=40000)
    ap.add_argument("--layer", type=int, default=5, help="index into sentence_embeddings.LAYERS")
    a = ap.parse_args()
    lm = load_model(None)
    rows = []
    for did, qs, eng, (_, seg, texts), t0 in se.documents(lm.tokenizer, a.corpus, a.max_tokens):
        E = se.embed(lm.model, lm.tokenizer, texts)[:, a.layer].float()               # (K, D)
        t_emb = time.time() - t0
        mu = E.mean(0)
        En = torch.nn.functional.normalize(E - mu, dim=-1)
        Q = se.embed(lm.model, lm.tokenizer, [q["question"] for q in qs])[:, a.layer].float()
        Qn = torch.nn.functional.normalize(Q - mu, dim=-1)
        cos = Qn @ En.T                                                                 # (Q, K)
        for qi, q in enumerate(qs):
            got = retrieve.passages(eng, q["question"], (), n=ev.MAX_PASSAGES)
            if got is None or not got.found:
                continue
            found = got.found
            words_c = candidates(found, texts)
            spans = {sentence_units(texts, u) for u in words_c}
            extra = []
            for u in cos[qi].argsort(descending=True).tolist():
                if len(extra) >= EXTRA:
                    break
                if not any(c.isalnum() for c in texts[u]):
                    continue
                sp = sentence_units(texts, u)
                if sp in spans:
                    continue
                spans.add(sp)
                extra.append(u)
            cands = words_c + extra
            sent = [sentence(texts, u) for u in cands]
            upr = likelihoods(lm.model, lm.tokenizer, q["question"], sent, "chat")
            ccos = [float(cos[qi, sentence_units(texts, u)[0]:sentence_units(texts, u)[1] + 1].max()) for u in cands]
            rows.append({"id": q["id"], "para": q.get("phrasing") == "paraphrase",
                         "src": ["w"] * len(words_c) + ["m"] * len(extra),
                         "holds": [any(x.lower() in s.lower() for x in q["answers"]) for s in sent],
                         "upr": upr, "cos": ccos, "overlap": [overlap(q["question"], s) for s in sent],
                         "gate": overlap(q["question"], sentence(texts, found[0].top)),
                         "mrank": [int((cos[qi] > cos[qi, u]).sum()) for u in cands]})
        print(f"{did}: {len(texts)} units, embedded in {t_emb:.0f} s, {time.time() - t0:.0f} s", flush=True)
    Path(a.out).write_text(json.dumps(rows))


if __name__ == "__main__":
    main()
