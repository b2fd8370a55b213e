import json, sys, statistics as st
recs = json.load(open(sys.argv[1]))
keys = [k for k in recs[0] if isinstance(recs[0][k], list)]
print("n records", len(recs), "cells", len({r['cell'] for r in recs}))
print(f"{'variant':18s} {'tokrank med':>11s} {'segrank med':>11s} {'above med':>9s} {'above p90':>9s} {'max':>6s} {'>300':>5s}")
for k in keys:
    tr = [r[k][0] for r in recs]; sr = [r[k][1] for r in recs]; ab = sorted(r[k][2] for r in recs)
    print(f"{k:18s} {st.median(tr):11.0f} {st.median(sr):11.0f} {st.median(ab):9.0f} {ab[int(.9*len(ab))]:9d} {max(ab):6d} {sum(a>300 for a in ab):5d}")
