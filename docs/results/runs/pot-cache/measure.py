"""Usage: python measure.py DOC_IDS [TREE] (built-in model, one thread; /work/corpus).

Second questions and summaries from pots read with other catalysts (issue 49's cache choice), on main-to-be.

For each document: three pots (ask's CaP-Q with the first question; chat's general read; summarize's general read
with spread 16), the other questions answered from each and directly (a read with that question), and a summary
from each pot with its section coverage (bench summary's measure)."""
import json, sys, time
import torch
sys.path.insert(0, sys.argv[2] if len(sys.argv) > 2 else ".")  # the tree measured: here the integrator's, with answering.py
from infinipot_cli.runtime.threads import configure
from infinipot_cli.runtime.loading import load_model
from infinipot_cli.pot.config import PotConfig, SUMMARY_SPREAD
from infinipot_cli.session import Session, Catalyst
from infinipot_cli.documents import open_source
from infinipot_cli.evaluate.summary import remeasure, load_corpus

torch.set_num_threads(1)
lm = load_model(None)
docs = load_corpus("/work/corpus/corpus.json", sys.argv[1].split(","))
qs = json.load(open("/work/corpus/questions.json"))
out = {"rows": []}

def read(cfg, cat, path, q=None):
    s = Session.start(lm, cfg, cat)
    if q: s.expect(q)
    t = time.perf_counter(); s.read(open_source(path)); return s, time.perf_counter() - t

def ans(s, q):
    a = s.ask(q, max_new_tokens=128, grounded=True)
    ev = [e.get("text") for e in (a.grounded.as_json().get("evidence") or [])] if a.grounded else []
    return {"text": a.text, "evidence": ev}

for d in docs:
    qq = [x["question"] for x in qs if x["doc"] == d["id"]]
    text = "\n\n".join(p.text for p in open_source(d["path"]).passages())
    base = PotConfig.resolve(None, {})
    pots = {"capq": read(base, Catalyst("question", qq[0]), d["path"], qq[0]),
            "general": read(base, Catalyst("general"), d["path"]),
            "spread16": read(PotConfig.resolve(None, {"spread": SUMMARY_SPREAD}), Catalyst("general"), d["path"])}
    row = {"doc": d["id"], "tokens": pots["general"][0].engine.tokens_read,
           "read_s": {k: round(v[1], 1) for k, v in pots.items()}, "questions": [], "summaries": {}}
    for q in qq[1:]:
        r = {"q": q, "direct": ans(read(base, Catalyst("question", q), d["path"], q)[0], q)}
        for k, (s, _) in pots.items():
            r[k] = ans(s, q)
        r["identical"] = all(r[k] == r["direct"] for k in pots)
        row["questions"].append(r)
        print(d["id"], q, "identical" if r["identical"] else {k: r[k]["text"] for k in ["direct", *pots]}, flush=True)
    for k, (s, _) in pots.items():
        a = s.summarize(max_new_tokens=384)
        m = remeasure({"key_points": a.summary.key_points, "overview": a.summary.overview, "summary": a.text}, text, d)
        row["summaries"][k] = {"coverage": m["coverage"], "overview_only": m.get("overview_only", {}).get("coverage"),
                               "key_points": [p["text"] for p in a.summary.key_points], "overview": a.summary.overview,
                               "degeneration": m["degeneration"], "unsupported": m["unsupported"]["count"]}
        print(d["id"], k, "coverage", m["coverage"]["covered"], "/", m["coverage"]["parts"],
              "overview alone", (m.get("overview_only") or {}).get("coverage"), flush=True)
    kp = {k: v["key_points"] for k, v in row["summaries"].items()}
    row["key_points_identical"] = kp["capq"] == kp["general"] == kp["spread16"]
    print(d["id"], "key points identical across pots:", row["key_points_identical"], flush=True)
    out["rows"].append(row)
    json.dump(out, open("measure.json", "w"), indent=1)
