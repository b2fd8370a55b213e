"""Tally reencode.py output (reencode-cells.txt): per length, right answers after the final narrowing to 512
entries, answered from the pot's KV states (`--no-reencode`) and re-encoded (`--reencode`), and the cells where
the two differ.

reencode_tally.py [FILE]     (default: ../reencode-cells.txt)"""
import os, re, sys
from collections import defaultdict

path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                          "../reencode-cells.txt")
tally = defaultdict(lambda: [0, 0, 0])  # (length, haystack) -> [cells, kv right, re-encoded right]
cell, differ = None, []
for line in open(path):
    if line.startswith("== "):
        cell = line[3:].strip()
    m = re.match(r"\s+keep\s+512 .* kv ok=(\w+) (.*) \| fresh ok=(\w+) (.*)$", line)
    if m and cell:
        parts = cell.split()
        hay = next((p for p in parts[3:] if not re.fullmatch(r"[-\d,]+|seed\d", p)), "builtin")
        t = tally[(int(parts[0]), hay)]
        kv, fresh = m.group(1) == "True", m.group(3) == "True"
        t[0] += 1; t[1] += kv; t[2] += fresh
        if kv != fresh:
            differ.append(f"  {cell:32s} kv {m.group(2)} -> re-encoded {m.group(4)}")
print("length  haystack      cells  from the KV  re-encoded")
tot = [0, 0, 0]
for (n, hay), (c, kv, fr) in sorted(tally.items()):
    print(f"{n:7d}  {hay:12s} {c:5d}  {kv:11d}  {fr:10d}")
    tot = [a + b for a, b in zip(tot, (c, kv, fr))]
print(f"{'all':>7s}  {'':12s} {tot[0]:5d}  {tot[1]:11d}  {tot[2]:10d}")
print("cells answered differently:")
print("\n".join(differ))
