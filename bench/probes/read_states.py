#!/usr/bin/env python3
"""Could the read itself leave the sketch? Its own last-layer states at each unit, as a question-free vector
(docs/results/model-retrieval.md).

A probe, not a bench. Each document is read once with the product's read (`Session`, the general catalyst, as
`read --save-pot` does) while the output of the model's final norm is kept for every document token, as that
read computes it (in the context of the pot: no forward of its own). Each unit gets its last token's state and
its tokens' mean, centred on the units' mean; the question gets the PromptEOL vector that
sentence_embeddings.py measured (the last layer at the end of 'This sentence : "<question>" means in one
word:"') and its own last token's state alone. Units are ranked by cosine; where the gold unit ranks is compared
with the words' (`retrieve.rank`), as sentence_embeddings.py reports.

    .venv/bin/python bench/probes/read_states.py --corpus bench/paraphrases --out /tmp/read-states-para.json
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
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot.config import PotConfig  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from infinipot_cli.session import Catalyst, Session  # noqa: E402
from attention_retrieval import gold_units  # noqa: E402
import sentence_embeddings as se  # noqa: E402

WAYS = ("unit's last state · PromptEOL question", "unit's mean state · PromptEOL question",
        "unit's last state · question's last state", "unit's mean state · question's last state")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-tokens", type=int, default=22000)
    a = ap.parse_args()
    lm = load_model(None)
    m = lm.model
    rows = {"n": 0}
    states: list[torch.Tensor] = []

    def hook(_mod, _inp, out):
        if rows["n"]:
            states.append(out[0, :rows["n"]].detach().float())

    m.model.norm.register_forward_hook(hook)

    def on_event(e) -> None:  # a document forward starts ("forward", its rows) / has ended ("read")
        rows["n"] = e.chunk if e.kind == "forward" else 0

    table, questions = load_corpus(Path(a.corpus))
    recs = []
    for did, doc in table.items():
        qs = [q for q in questions if q["doc"] == did and q.get("answers")]
        if doc.get("approx_tokens", 0) > a.max_tokens or not qs:
            continue
        t0 = time.time()
        states.clear()
        s = Session.start(lm, PotConfig().validate(), Catalyst("general"), on_event=on_event)
        s.read(_open(doc))
        rows["n"] = 0
        X = torch.cat(states)                                                           # (N, D)
        eng = s.engine
        assert X.shape[0] == eng.tokens_read, (X.shape, eng.tokens_read)
        src, seg, texts = ev.document_units(eng)
        K = len(texts)
        n = torch.bincount(seg, minlength=K).clamp_min(1).unsqueeze(1).float()
        mean = torch.zeros(K, X.shape[1]).index_add_(0, seg, X[src]) / n                # (K, D)
        lastpos = torch.zeros(K, dtype=torch.long).scatter_reduce(0, seg, src, "amax")
        last = X[lastpos]                                                               # (K, D)
        keep = torch.tensor([any(c.isalnum() for c in t) for t in texts])
        first = torch.full((K,), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, src, "amin")
        heading = retrieve.headings(eng, first, texts)
        qeol = se.embed(m, lm.tokenizer, [q["question"] for q in qs])[:, 5].float()      # (Q, D)
        qlast = []
        for q in qs:
            with torch.no_grad():
                h = m.model(input_ids=torch.tensor([lm.tokenizer.encode(q["question"], add_special_tokens=False)]))
            qlast.append(h.last_hidden_state[0, -1].float())
        qlast = torch.stack(qlast)

        def cos(U, Q):
            mu = U[keep].mean(0)
            Un = torch.nn.functional.normalize(U - mu, dim=-1) * keep.unsqueeze(1)
            return torch.nn.functional.normalize(Q - mu, dim=-1) @ Un.T                  # (Q, K)
        sims = [cos(last, qeol), cos(mean, qeol), cos(last, qlast), cos(mean, qlast)]
        for qi, q in enumerate(qs):
            gold = gold_units(texts, q)
            if not gold:
                continue
            recs.append({"id": q["id"], "para": q.get("phrasing") == "paraphrase", "gold": sorted(gold),
                         "words": retrieve.rank(texts, q["question"], heading).tolist(),
                         "cos": torch.stack([x[qi] for x in sims], 1).tolist()})
        print(f"{did}: {eng.tokens_read} tokens, {K} units, {time.time() - t0:.0f} s", flush=True)
    Path(a.out).write_text(json.dumps(recs))
    report(recs)


def report(recs: list[dict]) -> None:
    line = se.table(recs, 44)
    line("words", lambda r: r["words"])
    for i, w in enumerate(WAYS):
        line(w, lambda r, i=i: [c[i] for c in r["cos"]])


if __name__ == "__main__":
    main()
