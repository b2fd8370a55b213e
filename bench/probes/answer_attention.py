#!/usr/bin/env python3
"""Does the model's attention while it writes its answer point at the sentence that answers? (model-retrieval.md)

A probe, not a bench. `ask` has the model write over its best passage's core (the top unit with a unit on each
side: retrieve.context), then decides from the words which sentence to quote or which span to take
(answering.decide): the sentence of the top unit, the span closest to the question's words. Here the model's own
reading decides instead: while it writes, each answer token's attention over the passage says what it draws on.

For each answerable question (not one asking for several things) of a corpus folder, the document is read as
text (no forward: `TextOnly`), its best passage is found by the words (retrieve.passages, no expected words, as
the decision replay does), and the model writes its answer greedily over [header | the passage's core | the ask
prompt], as `ask` does (at most 48 tokens). One more forward over all of it with eager attention gives every
answer token's attention over the core's tokens, averaged over the heads of the deep half of the layers (and,
apart, of every layer); summed per sentence (evidence.sentence_units) and per span of the kind asked for
(spans.spans).

Reported, over the questions whose core holds the answer in some sentence and has more than one sentence:
the words' sentence (the top unit's) holds it, the most-attended sentence holds it; and, where the core holds
spans of the kind asked for and one of them is an answer, the closest span (spans' score: the words) against the
most-attended span.

    .venv/bin/python bench/probes/answer_attention.py --corpus bench/paraphrases --out /tmp/aa.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from infinipot_cli.answer import evidence as ev, retrieve, spans  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.pot import reader  # noqa: E402
from infinipot_cli.pot.prompts import Prompts  # noqa: E402
from infinipot_cli.runtime.loading import load_model  # noqa: E402
from attention_retrieval import by_phrasing, paraphrased, report_rows  # noqa: E402
from question_likelihood import TextOnly  # noqa: E402
from replay_decide import hit  # noqa: E402

MAX_NEW = 48


@torch.no_grad()
def written_attention(model, ids: list[int], core: tuple[int, int], stop: set[int]) -> tuple[list[int], dict]:
    """(answer ids, {name: (n_core,) attention}) of the greedy answer to `ids`; core = [a, b) token indices of
    the passage in `ids`: the answer tokens' attention over them, mean over answer tokens and the heads of the
    deep half of the layers ("deep") and of all layers ("all")."""
    x = torch.tensor([ids])
    out = model(x, use_cache=True)
    kv, gen = out.past_key_values, []
    nxt = int(out.logits[0, -1].argmax())
    while nxt not in stop and len(gen) < MAX_NEW:
        gen.append(nxt)
        out = model(torch.tensor([[nxt]]), past_key_values=kv, use_cache=True)
        kv = out.past_key_values
        nxt = int(out.logits[0, -1].argmax())
    if not gen:
        return gen, {}
    full = torch.tensor([ids + gen])
    att = model(full, output_attentions=True).attentions         # L x (1, H, T, T)
    rows = slice(len(ids), len(ids) + len(gen))
    per = torch.stack([a[0, :, rows, core[0]:core[1]].mean(1) for a in att])  # (L, H, n_core)
    L = per.shape[0]
    return gen, {"deep": per[L // 2:].mean((0, 1)), "all": per.mean((0, 1))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--max-tokens", type=int, default=22000, help="skip longer documents (approx_tokens)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lm = load_model(None)
    model, tok = lm.model, lm.tokenizer
    model.set_attn_implementation("eager")
    prompts = Prompts(tok)
    header = prompts.header_ids()
    stop = prompts.stop_ids()
    table, questions = load_corpus(Path(a.corpus))
    rows = []
    for did, doc in table.items():
        qs = [q for q in questions if q["doc"] == did and q.get("answers") and not spans.wanted(q["question"]).many]
        if not qs or doc.get("approx_tokens", 0) > a.max_tokens:
            continue
        eng = TextOnly(tok)
        src = _open(doc)
        reader.read_source(eng, tok, src, reader.SourceRecord(path=src.path, format=src.format))
        _, seg, texts = eng.derived(None, None, None)  # (TextOnly: a token's position is its index)
        for q in qs:
            got = retrieve.passages(eng, q["question"], (), n=retrieve.PASSAGES)
            if not got or not got.found:
                continue
            f = got.found[0]
            lo, hi = f.core or (f.start, f.stop)
            body = eng.ids[lo:hi]
            ids = header + body + prompts.ask_ids(q["question"])
            gen, att = written_attention(model, ids, (len(header), len(header) + len(body)), stop)
            if not att:
                continue
            units = seg[lo:hi].tolist()                               # (n_core,) the unit of each core token
            sents: dict[tuple[int, int], list[int]] = {}
            for i, u in enumerate(units):
                sents.setdefault(ev.sentence_units(texts, u), []).append(i)
            golds = q["answers"]
            text_of = {s: "".join(texts[s[0]:s[1] + 1]) for s in sents}
            holds = {s: hit(t, golds) for s, t in text_of.items()}
            words_sent = ev.sentence_units(texts, f.top)
            row = {"id": q["id"], "para": paraphrased(q), "sentences": len(sents), "core_holds": any(holds.values()),
                   "words": holds.get(words_sent, False), "answer": tok.decode(gen, skip_special_tokens=True)}
            for name, w in att.items():
                mass = {s: float(w[ix].sum()) for s, ix in sents.items()}
                row[name] = holds[max(mass, key=mass.get)]
            # spans of the kind asked for, in the core's sentences: the words' closest against the most attended
            want = spans.wanted(q["question"])
            pieces = [tok.decode([t]) for t in body]
            at = [0]
            for piece in pieces:
                at.append(at[-1] + len(piece))
            core_text = "".join(pieces)
            cands, seen = [], set()
            for s in sents:
                for sp in spans.spans(text_of[s], want, q["question"]):
                    c = core_text.find(sp.text)
                    if c < 0 or sp.text in seen:  # outside the core (its sentence reaches past it), or judged already
                        continue
                    seen.add(sp.text)
                    ix = [i for i in range(len(body)) if at[i] < c + len(sp.text) and at[i + 1] > c]
                    cands.append((sp, ix))
            if cands and any(hit(sp.text, golds) for sp, _ in cands) and len({sp.text for sp, _ in cands}) > 1:
                row["span_words"] = hit(max(cands, key=lambda c: c[0].score)[0].text, golds)
                for name, w in att.items():
                    row["span_" + name] = hit(max(cands, key=lambda c: float(w[c[1]].sum()))[0].text, golds)
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "answer"}), flush=True)

    def line(rs):
        judged = [r for r in rs if r["core_holds"] and r["sentences"] > 1]
        spanned = [r for r in rs if "span_words" in r]
        return {"questions": len(rs), "core holds it": sum(r["core_holds"] for r in rs),
                "sentence: judged": len(judged), "words": sum(r["words"] for r in judged),
                "attention deep": sum(r["deep"] for r in judged), "attention all": sum(r["all"] for r in judged),
                "span: judged": len(spanned), "span words": sum(r["span_words"] for r in spanned),
                "span attention deep": sum(r["span_deep"] for r in spanned),
                "span attention all": sum(r["span_all"] for r in spanned)}
    report_rows({"corpus": a.corpus, **by_phrasing(rows, line), "rows": rows}, a.out)


if __name__ == "__main__":
    main()
