#!/usr/bin/env python3
"""Does ranking the later evidence passages by where the read expected the question's words help `ask DOC Q`?
(retrieve.passages with scoring/asked.py; docs/results/model-retrieval.md)

A probe, not a bench: `ask DOC Q` as `bench qa`'s direct flow runs it (one read per question, the question the
catalyst and expected while reading, Session.ask grounded), answered twice from the same read: with the read's
AskedWords (as shipped) and without them (`engine.asked = None`: the passages the words and the read's relevance
find, as before). Each answer is scored by `bench qa`'s own record; the report counts right and evidence per
phrasing, and names the questions whose rightness or evidence changed.

    .venv/bin/python bench/probes/asked_passages.py --corpus bench/testset --out /tmp/asked-test.json
    .venv/bin/python bench/probes/asked_passages.py --report /tmp/asked-test.json
"""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from infinipot_cli.evaluate.qa import QAConfig, load_corpus, pick, record  # noqa: E402

ARMS = ("asked", "without")


def run(args) -> None:
    import torch

    from infinipot_cli.documents import open_source
    from infinipot_cli.pot.config import PotConfig
    from infinipot_cli.runtime.loading import load_model
    from infinipot_cli.session import Catalyst, Session

    torch.set_num_threads(args.threads)
    table, questions = load_corpus(Path(args.corpus))
    cfg = QAConfig(corpus=Path(args.corpus), docs=args.docs, max_tokens=args.max_tokens)
    lm = load_model(None)
    out = []
    for doc, qs in pick(table, questions, cfg):
        for q in qs:
            t0 = time.perf_counter()
            s = Session.start(lm, PotConfig(size=2048, keep=1024).validate(), Catalyst("question", q["question"]))
            s.expect(q["question"])
            s.read(open_source(doc["path"], "auto"))
            asked = s.engine.asked
            rec = {"id": q["id"], "doc": q["doc"], "phrasing": q.get("phrasing") or (
                "paraphrase" if q.get("paraphrase_of") else "document")}
            for arm in ARMS:
                s.engine.asked = asked if arm == "asked" else None
                rec[arm] = record(q, "direct", s, s.ask(q["question"], max_new_tokens=256, grounded=True), s.read_s)
            out.append(rec)
            print(f"{q['id']:8s} {time.perf_counter() - t0:6.1f}s",
                  *[f"{arm}: {_mark(rec[arm])}" for arm in ARMS], flush=True)
            Path(args.out).write_text(json.dumps(out, indent=1))


def _mark(r: dict) -> str:
    if r["correct"] is None:
        return "refused" if r["refused"] else "answered"
    return ("right" if r["correct"] else "wrong") + (" +ev" if r["evidence_recall"] else " -ev")


def report(path: str) -> None:
    recs = json.loads(Path(path).read_text())
    print(f"{path}: {len(recs)} questions")
    for ph in ("document", "paraphrase", None):
        rs = [r for r in recs if ph is None or r["phrasing"] == ph]
        ans = [r for r in rs if r["asked"]["correct"] is not None]
        line = [f"{ph or 'all':10s} answerable {len(ans):3d}"]
        for arm in ARMS:
            line.append(f"{arm}: right {sum(r[arm]['correct'] for r in ans):3d} "
                        f"evidence {sum(r[arm]['evidence_recall'] for r in ans):3d}")
        un = [r for r in rs if r["asked"]["correct"] is None]
        if un:
            line.append("refused " + " / ".join(str(sum(r[a]["refused"] for r in un)) for a in ARMS) + f" of {len(un)}")
        print("  ".join(line))
    for r in recs:
        a, b = r["asked"], r["without"]
        if (a["correct"], a["evidence_recall"], a["refused"]) != (b["correct"], b["evidence_recall"], b["refused"]):
            print(f"  {r['id']:8s} without: {_mark(b):12s} asked: {_mark(a):12s} {a['answer'][:70]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus")
    ap.add_argument("--docs", type=lambda s: s.split(","))
    ap.add_argument("--max-tokens", type=int)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--report")
    args = ap.parse_args()
    if args.report:
        report(args.report)
    else:
        run(args)
        report(args.out)


if __name__ == "__main__":
    main()
