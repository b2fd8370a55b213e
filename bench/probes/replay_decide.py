#!/usr/bin/env python3
"""How would the answer rules decide on the recorded answers? A replay, for measuring a rule before a run.

A probe, not a bench, text only. For each question of the recorded runs (bench/corpus, bench/testset,
bench/paraphrases, and the man pages piped of docs/results/runs/man-pages-piped), the passages are found anew
by the words (`retrieve.passages`; no judge: the model's judging of a paraphrase is not replayed) and
`answering.decide` decides again over the model's recorded written answer (`guess`). Run it before and after a
change to the rules and compare the two files; a question asking for several things is left out, and one the
document does not answer counts as right when it is answered "does not seem to say".

    .venv/bin/python bench/probes/replay_decide.py /tmp/before.json
    .venv/bin/python bench/probes/replay_decide.py /tmp/after.json --against /tmp/before.json
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from infinipot_cli.answer import answering, evidence as ev, quotes, retrieve, spans  # noqa: E402
from infinipot_cli.evaluate.qa import _open, load_corpus  # noqa: E402
from infinipot_cli.documents import open_source  # noqa: E402
from infinipot_cli.pot import reader  # noqa: E402
from infinipot_cli.runtime.loading import load_tokenizer  # noqa: E402
from question_likelihood import TextOnly  # noqa: E402

RUNS = ROOT / "docs/results/runs"
SETS = {"bench/corpus": ["qa-corpus-judged/qa.json", "qa-corpus-judged/long-documents/qa.json"],
        "bench/testset": ["qa-testset-expected-words/rerun/qa.json"],
        "bench/paraphrases": ["qa-paraphrases/expected-words-rerun/qa.json"]}
MAN = RUNS / "man-pages-piped"


def hit(text: str, golds: list[str]) -> bool:
    return any(re.search(r"(?<![\w-])" + re.escape(g) + r"(?![\w-])", text, re.I) for g in golds)


def right(texts: list[str], got: tuple, golds: list[str]) -> bool:
    """Whether the decided answer names an acceptable answer: the span, the written answer or the quoted
    sentence; for a question the document does not answer (no golds), whether it says so."""
    how, short, unit, _ = got
    if not golds:
        return how == "not-said"
    if how == "not-said":
        return False
    if how == "quoted":
        lo, hi = quotes.quote_units(texts, unit)
        return hit("".join(texts[lo:hi + 1]), golds)
    return hit(short, golds)


def read(tok, src, path: str):
    eng = TextOnly(tok)
    reader.read_source(eng, tok, src, reader.SourceRecord(path=path, format=src.format))
    return eng, eng.derived(None, None, None)[2]


def decide(eng, texts: list[str], question: str, guess: str, golds: list[str]) -> list | None:
    if spans.wanted(question).many:
        return None
    got = retrieve.passages(eng, question, (), n=ev.MAX_PASSAGES)
    found = got.found[:retrieve.PASSAGES] if got else []
    d = answering.decide(question, guess, found, texts)
    return [d[0], d[1][:80], right(texts, d, golds)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--against", help="an earlier replay's file: list the answers that changed")
    a = ap.parse_args()
    tok = load_tokenizer(None)[0]
    out: dict[str, list] = {}
    for corpus, files in SETS.items():
        table, questions = load_corpus(ROOT / corpus)
        recs = {r["id"]: r for f in files for r in json.loads((RUNS / f).read_text())["records"]
                if r["flow"] == "read-then-ask"}
        for did, doc in table.items():
            qs = [q for q in questions if q["doc"] == did and q["id"] in recs]
            if not qs:
                continue
            src = _open(doc)
            eng, texts = read(tok, src, src.path)
            for q in qs:
                got = decide(eng, texts, q["question"], recs[q["id"]]["guess"] or "", q.get("answers") or [])
                if got is not None:
                    out[f"{corpus}:{q['id']}"] = got
    rows = [ln.rstrip("\n").split("\t") for ln in (MAN / "qs.tsv").open()]
    pages: dict[str, tuple] = {}
    for i, (page, question, gold) in enumerate(rows, 1):
        if page not in pages:  # rendered as a user pipes it: `man PAGE | col -b`
            text = subprocess.run(f"man {page} 2>/dev/null | col -b", shell=True, capture_output=True).stdout
            with tempfile.NamedTemporaryFile(suffix=".txt") as f:
                f.write(text)
                f.flush()
                pages[page] = read(tok, open_source(f.name), "-")
        eng, texts = pages[page]
        guess = json.loads((MAN / "after" / f"{i}.json").read_text()).get("guess") or ""
        got = decide(eng, texts, question, guess, gold.split("|"))
        if got is not None:
            out[f"man:{page}:{i}"] = got
    Path(a.out).write_text(json.dumps(out, indent=0))
    n = Counter(k.split(":")[0] for k in out)
    ok = Counter(k.split(":")[0] for k, v in out.items() if v[2])
    print(", ".join(f"{k} {ok[k]}/{n[k]}" for k in n))
    if a.against:
        before = json.loads(Path(a.against).read_text())
        for k, v in out.items():
            if before.get(k) != v:
                print(f"{k}: {before.get(k)} -> {v}")


if __name__ == "__main__":
    main()
