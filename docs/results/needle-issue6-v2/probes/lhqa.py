"""Lighthouse QA: 10 questions, correct + whether the answer's source sentence is held in the pot."""
import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))  # the repository
import sys, re; sys.path.insert(0, HERE)
from probe import *
L = lm()
text = open(os.path.join(ROOT, "sample_docs", "lighthouse.txt")).read()
ids = L.tokenizer.encode(text, add_special_tokens=False)
QA = [("Who kept the lighthouse?", ["Fenwick"], "Tobias Fenwick\nwas not one"),
      ("What is the island called?", ["Skerrow"], "Skerrow Island lies"),
      ("When was the lighthouse built?", ["1871"], "built in 1871"),
      ("How many steps lead to the lamp room?", ["137"], "137"),
      ("What was the keeper's cat called?", ["Biscuit"], "cat was named Biscuit"),
      ("What was the supply boat called?", ["Margaret Ann"], "called the Margaret Ann"),
      ("How far can the light be seen?", ["twenty-two", "22"], "twenty-two"),
      ("Who came to count the seabirds in 1962?", ["Clara", "Voss"], "Her name was Clara"),
      ("Which ship got into trouble in the storm?", ["Aldebaran"], "Aldebaran"),
      ("When was the light automated?", ["1987"], "automated in 1987")]
def src_range(snippet):
    i = text.index(snippet)
    pre = len(L.tokenizer.encode(text[:i], add_special_tokens=False))
    n = len(L.tokenizer.encode(snippet, add_special_tokens=False))
    return pre, n
size = int(sys.argv[1]); keep = int(sys.argv[2])
for spec in sys.argv[3:]:
    ok = held = 0
    rows = []
    for q, exp, snip in QA:
        s0, n = src_range(snip)
        ans, logs, eng = run(ids, q, spec, log=False, size=size, keep=keep, max_new=32)
        src = eng.pot.src[0, 0]
        h = int(((src >= s0) & (src < s0 + n)).sum()) if spec != "full" else n
        c = any(e.lower() in ans.lower() for e in exp)
        ok += c; held += (h >= n)
        rows.append(f"    {'OK ' if c else 'bad'} held {h}/{n} | {q[:40]:40s} | {ans[:70]!r}")
    print(f"== {spec} M={size} C={keep}: correct {ok}/10, answer sentence held {held}/10", flush=True)
    print("\n".join(rows), flush=True)
