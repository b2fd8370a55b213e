"""What should `summarize` print after its key points? Each document of the corpus is read once (as `summarize`
reads it: infinipot, spread 16) and its summary written with every overview variant over the same pot:

    pot        the model's overview over the pot, --max-new-tokens 384 (the CLI's)
    pot-short  the same, 96 tokens
    none       key points only (the built-in model's default since this measurement)

(An overview written over the key points alone in place of the document, "points" and "points-short", was
measured with this script at commit 669884c and not kept: docs/results/summary.md, "The overview".)

Measured per variant, on what the model wrote and on what is printed after summary.SupportedSentences' checks
(docs/results/summary.md, "The overview"):

    written     sentences the model wrote (printed + withheld + trimmed)
    printed     sentences printed; words printed
    withheld    sentences naming a number, identifier or name the document lacks
    filler / fragments   chat talk; pieces of sentences, list headings, code
    grounded    share of the printed overview's content words that the document contains
    new_parts   parts of the document (corpus.json's distinctive terms) the printed overview names and the key
                points do not: what a reader learns from the overview beyond the key points
    repeat      share of the printed overview's content words already in the key points
    seconds     time to write the overview (a "-short" variant is cut from its long variant's text: SHORT)

Usage (the machine's contention makes seconds comparable only within a run):

    python bench/overview_choice.py --corpus /work/corpus/corpus.json \\
        --docs users-and-groups,gzip-man,vim-usr02,shared-mime-info-spec,python-logging-howto,libtasn1 \\
        --out overview-choice.jsonl
    python bench/overview_choice.py --table overview-choice.jsonl     # the totals per variant
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

VARIANTS = {"pot": (True, 384), "pot-short": (True, 96), "none": (False, 384)}
SHORT = 96  # a "-short" variant is its long variant's text cut at the first sentence end after this many tokens:
            # greedy decoding writes the same tokens, and a summary stops at its first sentence end past its budget
_CONTENT = re.compile(r"[a-z][a-z'-]{3,}")


def content_words(text: str) -> set[str]:
    from infinipot_cli.pot.archive import STOPWORDS

    return {w for w in _CONTENT.findall(text.lower()) if w not in STOPWORDS}


def measure_variant(summary, seconds: float, document: str, parts: list[dict]) -> dict:
    from infinipot_cli.evaluate.summary_metrics import coverage

    points_text = "\n".join(p["text"] for p in summary.key_points)
    over = summary.overview
    ow, pw = content_words(over), content_words(points_text)
    doc_low = document.lower()
    printed = len(re.findall(r"[.!?\u2026][\"')\]\u201d\u2019]*(?:\s|$)", over)) if over else 0
    kp = {r["title"] for r in coverage(points_text, parts)["per_part"] if r["hits"]}
    ov = {r["title"] for r in coverage(over, parts)["per_part"] if r["hits"]}
    reasons = [t["reason"] for t in summary.trimmed]
    return {"written": printed + len(summary.dropped) + len(reasons), "printed": printed,
            "words": len(over.split()), "withheld": len(summary.dropped), "filler": reasons.count("filler"),
            "fragments": reasons.count("fragment"),
            "grounded": round(sum(w in doc_low for w in ow) / len(ow), 3) if ow else None,
            "new_parts": len(ov - kp), "parts_named": len(ov), "key_point_parts": len(kp),
            "parts": coverage(points_text, parts)["parts"],
            "repeat": round(len(ow & pw) / len(ow), 3) if ow else None, "seconds": round(seconds, 2),
            "overview": over, "withheld_text": summary.dropped, "trimmed_text": summary.trimmed}


def shortened(summary, tokenizer, document: str):
    """`summary` as a SHORT-token budget would have ended it: its written overview cut at the first sentence end
    after SHORT tokens, then checked again."""
    import dataclasses

    from infinipot_cli.answer.endings import sentence_ends
    from infinipot_cli.answer.summary import SupportedSentences

    written = summary.written
    ids = tokenizer.encode(written, add_special_tokens=False)
    past = len(tokenizer.decode(ids[:SHORT])) if len(ids) > SHORT else len(written)
    cut = next((e for e in sentence_ends(written) if e >= past), len(written))
    checked = SupportedSentences(None, document)
    checked(written[:cut])
    text = checked.finish()
    return dataclasses.replace(summary, overview=text, dropped=checked.dropped, trimmed=checked.trimmed,
                               written=written[:cut])


def table(rows: list[dict]) -> str:
    """Totals per variant, as docs/results/summary.md shows them."""
    out = ["| variant | written | printed | withheld | filler | fragments | words printed | parts named beyond the "
           "key points | documents with no overview | content words found in the document |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for v in dict.fromkeys(r["variant"] for r in rows):
        rs = [r for r in rows if r["variant"] == v]
        tot = {k: sum(r[k] for r in rs) for k in ("written", "printed", "withheld", "filler", "fragments", "words",
                                                   "new_parts")}
        g = [r["grounded"] for r in rs if r["grounded"] is not None]
        out.append(f"| {v} | {tot['written']} | {tot['printed']} | {tot['withheld']} | {tot['filler']} | "
                   f"{tot['fragments']} | {tot['words']} | {tot['new_parts']} | {sum(r['printed'] == 0 for r in rs)} "
                   f"of {len(rs)} | {sum(g) / len(g):.0%} |" if g else f"| {v} | 0 | 0 | 0 | 0 | 0 | 0 | 0 | "
                   f"{len(rs)} of {len(rs)} | – |")
    return "\n".join(out)


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus")
    ap.add_argument("--docs", help="comma-separated corpus ids")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--table", metavar="JSONL", help="print the totals of a run's rows instead")
    a = ap.parse_args(argv)
    if a.table:
        print(table([json.loads(line) for line in open(a.table, encoding="utf-8")]))
        return
    if not (a.corpus and a.docs and a.out):
        ap.error("--corpus, --docs and --out are needed to run")

    from infinipot_cli.pot.config import SUMMARY_SPREAD, PotConfig
    from infinipot_cli.documents import open_source
    from infinipot_cli.evaluate.summary import load_corpus
    from infinipot_cli.answer.honesty import document_text
    from infinipot_cli.runtime.loading import load_model
    from infinipot_cli.session import Session
    from infinipot_cli.answer.summary import write_summary
    from infinipot_cli.runtime.threads import configure

    configure(a.threads)
    lm = load_model(None)
    out = open(a.out, "a", encoding="utf-8")
    for doc in load_corpus(Path(a.corpus), a.docs.split(",")):
        t0 = time.perf_counter()
        s = Session.start(lm, PotConfig(spread=SUMMARY_SPREAD).validate())
        s.read(open_source(doc["path"]))
        read_s = time.perf_counter() - t0
        text = document_text(s.engine) or ""
        done = {}
        for name in a.variants.split(","):
            overview, budget = VARIANTS[name]
            t1 = time.perf_counter()
            if name.endswith("-short") and name[:-6] in done:
                summary, seconds = shortened(done[name[:-6]], lm.tokenizer, text), None
            else:
                summary = write_summary(s.engine, s.prompts, budget, overview=overview, source=doc["path"])
                seconds = time.perf_counter() - t1
                done[name] = summary
            row = {"doc": doc["id"], "tokens": s.engine.tokens_read, "read_s": round(read_s, 1), "variant": name,
                   **measure_variant(summary, seconds or 0.0, text, doc.get("parts") or []),
                   "written_text": summary.written, "derived": seconds is None}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            out.flush()
            sys.stderr.write(f"{doc['id']} {name}: printed {row['printed']}/{row['written']}, withheld "
                             f"{row['withheld']}, filler {row['filler']}, fragments {row['fragments']}, new parts "
                             f"{row['new_parts']}, grounded {row['grounded']}, {row['seconds']} s\n")


if __name__ == "__main__":
    main(sys.argv[1:])
