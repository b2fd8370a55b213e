#!/usr/bin/env python3
"""Does the live view's focus point at the answer? (docs/results/model-retrieval.md)

A probe, not a bench. For every question it runs `infinipot ask DOC Q`'s read (the question the catalyst,
expected by the last forward) and takes the engine's focus (scoring/focus.py: where the question's attention was
strongest while reading, what the live view names). The focus counts as on the answer when its unit lies within
`--side` units of a unit of the gold passage; the words' first unit (retrieve.rank, what `ask` ranks first) is
counted the same way beside it.

    .venv/bin/python bench/probes/focus.py --corpus bench/paraphrases --out /tmp/focus.json
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
from infinipot_cli.runtime.threads import configure  # noqa: E402
from infinipot_cli.session import Catalyst, Session  # noqa: E402
from attention_retrieval import gold_units, paraphrased  # noqa: E402


def near(unit: int, gold: set[int], side: int) -> bool:
    return any(abs(unit - g) <= side for g in gold)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--max-tokens", type=int, default=22000, help="skip longer documents (approx_tokens)")
    ap.add_argument("--side", type=int, default=2, help="units each side of the gold passage that count")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    configure()
    lm = load_model(None)
    table, questions = load_corpus(Path(a.corpus))
    rows = []
    for did, doc in table.items():
        if doc.get("approx_tokens", 0) > a.max_tokens:
            continue
        for q in [q for q in questions if q["doc"] == did]:
            t0 = time.time()
            s = Session.start(lm, PotConfig().validate(), Catalyst("question", q["question"]))
            s.expect(q["question"])
            s.read(_open(doc))
            eng = s.engine
            src, seg, texts = ev.document_units(eng)
            gold = gold_units(texts, q)
            if not gold or eng.focus is None or eng.focus.pos < 0:
                continue
            first = torch.full((len(texts),), 1 << 62, dtype=torch.long).scatter_reduce(0, seg, src, "amin")
            words = int(retrieve.rank(texts, q["question"], retrieve.headings(eng, first, texts)).argmax())
            focus = int(seg[eng.focus.pos])
            row = {"id": q["id"], "para": paraphrased(q),
                   "focus": near(focus, gold, a.side), "words": near(words, gold, a.side),
                   "where": eng.focus_where, "tokens": eng.tokens_read}
            rows.append(row)
            print(f"{q['id']}: focus {row['focus']} words {row['words']} ({row['where']}), {time.time() - t0:.0f} s",
                  flush=True)
    out = {"corpus": a.corpus, "side": a.side, "questions": len(rows),
           "focus on the answer": sum(r["focus"] for r in rows), "words' first on the answer": sum(r["words"] for r in rows),
           "paraphrased": {"questions": sum(r["para"] for r in rows),
                           "focus": sum(r["focus"] for r in rows if r["para"]),
                           "words": sum(r["words"] for r in rows if r["para"])},
           "rows": rows}
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "rows"}, indent=1))


if __name__ == "__main__":
    main()
