"""One bench cell read once, answered from the pot as it is (KEEPS 0) and after a last distillation with the
question down to each of KEEPS entries -- what `final_keep` does (the default since issue 6, round 4).

final_keep.py LENGTH DEPTH TRIAL KEEPS [HAYSTACK|-] [METHOD]   e.g. final_keep.py 32768 0.5 1 0,1024,512
The needle and haystack are the ones `bench needle -l LENGTH` draws for that cell."""
import os, sys, time, torch
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../..")))
torch.set_num_threads(int(os.environ.get("THREADS", "2")))
from infinipot_cli.model import load_model
from infinipot_cli.prompts import Prompts
from infinipot_cli.engine import Engine, PotConfig
from infinipot_cli.evaluate.needle import NeedleConfig, cell_needle, needle_held
from infinipot_cli.evaluate.haystack import haystack_units, token_pieces, Placement

lm = load_model(None, None, None, progress=lambda m: None)
length, depth, trial = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
keeps = [int(k) for k in sys.argv[4].split(",")]
hay = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] != "-" else None
method = sys.argv[6] if len(sys.argv) > 6 else "infinipot"
cfg = NeedleConfig(lengths=[length], depths=[0.1, 0.5, 0.9], trials=max(3, trial + 1), methods=[method], haystack=hay)
prompts = Prompts(lm.tokenizer)
needle = cell_needle(cfg, length, depth, trial)
ask, ask_focus = prompts.ask(needle.question, answer_prefix=needle.answer_prefix)
cat, cat_focus = prompts.catalyst("question", needle.question)
pcfg = PotConfig.from_spec(method + "+final_keep=0", size=2048, keep=1024, chunk=1024)  # the narrowing is done here, per KEEPS
eng = Engine(lm.model, lm.tokenizer, pcfg, catalyst_ids=cat, catalyst_focus=cat_focus)
pl = Placement()
eng.pin(prompts.header_ids())
t0 = time.perf_counter()
for ids in token_pieces(haystack_units(hay, f"{cfg.seed}:{length}:{depth}:{trial}"), lm.tokenizer, length, depth,
                        needle.text, piece=1024, placement=pl):
    eng.feed(ids)
eng.finish()
print(f"read {length} in {time.perf_counter()-t0:.0f}s, pot {len(eng.pot)}; needle {needle.text!r} expect {needle.expect!r}", flush=True)
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
