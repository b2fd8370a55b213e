#!/usr/bin/env python3
"""Does the way the model is asked change what it writes from the best passage? A probe of the answer's request.

A probe, not a bench. For each question of a corpus, the words find the passages as `ask` does (no read, no
judge: `retrieve.passages` over the document's units), the model writes its answer over [header | the best
passage's core | the request] exactly as `Engine.answer_over` prefills it (the same decoding controls), and
`answering.decide` decides over what it wrote. Each variant of the request is scored the same way, so the rows
differ only in what the model was asked. `replay_decide.right` scores an answer.

    .venv/bin/python bench/probes/writer_prompt.py --corpus bench/paraphrases --out /tmp/wp-para.json
"""
import argparse
import json
import sys
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from transformers import DynamicCache  # noqa: E402

from infinipot_cli.answer import answering, evidence as ev, retrieve, spans  # noqa: E402
from infinipot_cli.answer.controls import answer_controls  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot import prompts as P, reader  # noqa: E402
from infinipot_cli.runtime.generate import generate  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from question_likelihood import TextOnly  # noqa: E402
from replay_decide import right  # noqa: E402

EXAMPLE = ("Example: Question: Which option makes grep ignore the case of letters? Answer: -i\n"
           "Example: Question: How many seconds does the server wait before it gives up? Answer: 30\n")
VARIANTS = {  # name: the request before the question
    "shipped": P.QUESTION_LEAD,
    "exact": ("Answer the question using the document above: give the exact option, command, name or number "
              "as the document writes it.\nQuestion: "),
    "examples": ("Answer the question using the document above, with the document's own words.\n" + EXAMPLE
                 + "Question: "),
}


class Writer:
    """The model's answer over [header | ids | request], greedy with `ask`'s stop and repetition controls (its
    default 128 tokens at most); the header, the stop ids and the controls are built once."""

    def __init__(self, lm, prompts):
        self.lm, self.prompts = lm, prompts
        self.c = answer_controls("ask", lm.tokenizer, 128)
        self.header, self.stops = prompts.header_ids(), prompts.stop_ids("question")

    def __call__(self, ids: list[int], question: str, lead: str) -> str:
        c, tok = self.c, self.lm.tokenizer
        tail = self.prompts.tail_ids(lead + question.strip())
        gen = generate(self.lm.model, DynamicCache(), self.header + ids + tail, c.limit, self.stops, None,
                       c.stopper.should_stop, tokenizer=tok, logits_fn=c.guard)
        return c.stopper.trim(tok.decode(gen, skip_special_tokens=True).strip()).strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("-m", "--model", default=None, help="the reader, as `infinipot -m` takes it (default: the built-in model)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--docs", default="")
    a = ap.parse_args()
    names = a.variants.split(",")
    lm = load_model(a.model)
    write = Writer(lm, P.Prompts(lm.tokenizer))
    table, questions = load_corpus(Path(a.corpus))
    rows = []
    for did, doc in table.items():
        if a.docs and did not in a.docs.split(","):
            continue
        t0 = time.time()
        eng = TextOnly(lm.tokenizer)
        src = _open(doc)
        reader.read_source(eng, lm.tokenizer, src, reader.SourceRecord(path=src.path, format=src.format))
        for q in [q for q in questions if q["doc"] == did]:
            if spans.wanted(q["question"]).many:
                continue
            got = retrieve.passages(eng, q["question"], (), n=ev.MAX_PASSAGES)
            found = got.found[:retrieve.PASSAGES] if got else []
            if not found:
                continue
            texts = got.doc[2]
            f = found[0]
            lo, hi = f.core if f.core else (f.start, f.stop)
            ids = eng.ids[lo:hi]
            golds = q.get("answers") or []
            row = {"id": q["id"], "para": q.get("phrasing") == "paraphrase" or bool(q.get("paraphrase_of")), "golds": golds,
                   "in_passage": any(g.lower() in lm.tokenizer.decode(ids).lower() for g in golds)}
            for name in names:
                written = write(ids, q["question"], VARIANTS[name])
                d = answering.decide(q["question"], written, found, texts)
                row[name] = {"written": written, "how": d[0], "short": d[1][:80], "right": right(texts, d, golds)}
            rows.append(row)
        print(f"{did}: {time.time() - t0:.0f} s " + " ".join(
            f"{n} {sum(r[n]['right'] for r in rows)}" for n in names), flush=True)
    Path(a.out).write_text(json.dumps(rows, indent=1))
    for sub, keep in (("all", lambda r: True), ("paraphrased", lambda r: r["para"]),
                      ("document's words", lambda r: not r["para"]), ("answer in the passage", lambda r: r["in_passage"])):
        rs = [r for r in rows if keep(r)]
        print(f"{sub} ({len(rs)}): " + ", ".join(f"{n} {sum(r[n]['right'] for r in rs)}" for n in names))


if __name__ == "__main__":
    main()
