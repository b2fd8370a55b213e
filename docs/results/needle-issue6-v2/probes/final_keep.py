"""One bench cell read once, answered from the pot as it is (KEEPS 0) and after a last distillation with the
question down to each of KEEPS entries -- what `final_keep` does (the default since issue 6, round 4).

final_keep.py LENGTH DEPTH TRIAL KEEPS [HAYSTACK|-] [METHOD]   e.g. final_keep.py 32768 0.5 1 0,1024,512
The needle and haystack are the ones `bench needle -l LENGTH` draws for that cell."""
import os, sys, torch
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../..")))
torch.set_num_threads(int(os.environ.get("THREADS", "2")))
from infinipot_cli.model import load_model
from infinipot_cli.evaluate.needle import needle_held
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cell import read_cell

lm = load_model(None, None, None, progress=lambda m: None)
length, depth, trial = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
keeps = [int(k) for k in sys.argv[4].split(",")]
hay = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "-" else None
method = sys.argv[6] if len(sys.argv) > 6 else "infinipot"
# the narrowing is done here, per KEEPS
eng, needle, pl, prompts, ask, ask_focus = read_cell(lm, length, depth, trial, method + "+final_keep=0", hay,
                                                     method=method)
pot = eng.pot
snap = ([(l.keys.clone(), l.values.clone()) for l in pot.cache.layers],
        pot.src.clone(), pot.tok.clone(), pot.nov.clone(), pot.acc.clone(), pot.n_distilled, eng.cycles)
def restore():
    for l, (k, v) in zip(pot.cache.layers, snap[0]):
        l.keys, l.values = k.clone(), v.clone()
    pot.src, pot.tok, pot.nov, pot.acc = (t.clone() for t in snap[1:5])
    pot.n_distilled, eng.cycles = snap[5], snap[6]
for k in keeps:
    restore()
    if k:
        eng._final_distill(ask, k, ask_focus)
    held = needle_held(pot, pl.needle_start, pl.needle_tokens)
    ans = eng.answer(ask, max_new_tokens=16, stop_ids=prompts.stop_ids(), focus=ask_focus)
    print(f"  final keep {k or 'as is':>6} entries {len(pot):5d} held {held} ok={needle.check(ans)} {ans!r}", flush=True)
