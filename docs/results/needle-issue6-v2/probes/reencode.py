"""One bench cell read once, then answered four ways: from the pot as it is and narrowed to 512 entries
(`final_keep`), each either from the pot's own KV cache (the default until round 5) or from a fresh prefill of
the pot's tokens (`reencode`: the KV states recomputed over just the text the pot holds).

reencode.py LENGTH DEPTH TRIAL [HAYSTACK|-] [SEED]     e.g. reencode.py 32768 0.9 0
The needle and haystack are the ones `bench needle -l LENGTH [--seed SEED]` draws for that cell."""
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
hay = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 0
cfg = NeedleConfig(lengths=[length], depths=[0.1, 0.5, 0.9], trials=max(3, trial + 1), methods=["infinipot"],
                   haystack=hay, seed=seed)
prompts = Prompts(lm.tokenizer)
stops = prompts.stop_ids()
needle = cell_needle(cfg, length, depth, trial)
ask, ask_focus = prompts.ask(needle.question, answer_prefix=needle.answer_prefix)
cat, cat_focus = prompts.catalyst("question", needle.question)
pcfg = PotConfig.from_spec("infinipot+final_keep=0+reencode=0", size=2048, keep=1024, chunk=1024)
eng = Engine(lm.model, lm.tokenizer, pcfg, catalyst_ids=cat, catalyst_focus=cat_focus)
pl = Placement()
eng.pin(prompts.header_ids())
t0 = time.perf_counter()
for ids in token_pieces(haystack_units(hay, f"{cfg.seed}:{length}:{depth}:{trial}"), lm.tokenizer, length, depth,
                        needle.text, piece=1024, placement=pl):
    eng.feed(ids)
eng.finish()
print(f"read {length} in {time.perf_counter()-t0:.0f}s, pot {len(eng.pot)}; needle {needle.text!r} expect {needle.expect!r}",
      flush=True)
pot = eng.pot


def fresh(ids: list[int]) -> str:
    """Greedy answer from a fresh prefill of ids (no pot)."""
    x = torch.tensor([ids])
    with torch.no_grad():
        out = lm.model.generate(x, max_new_tokens=16, do_sample=False, eos_token_id=sorted(stops), pad_token_id=0)
    return lm.tokenizer.decode(out[0, len(ids):], skip_special_tokens=True).strip()


for k in (0, 512):
    if k:
        eng._final_distill(ask, k, ask_focus)
    held = needle_held(pot, pl.needle_start, pl.needle_tokens)
    toks = pot.tok
    same = bool((toks == toks[:1, :1]).all())
    text_ids = toks[0, 0].tolist()
    a_fresh = fresh(text_ids + ask)
    a_kv = eng.answer(ask, max_new_tokens=16, stop_ids=stops, focus=ask_focus, final_distill=False)
    print(f"  keep {k or 'as is':>6} entries {len(pot):5d} held {held} same-tokens-all-heads={same} "
          f"kv ok={needle.check(a_kv)} {a_kv!r} | fresh ok={needle.check(a_fresh)} {a_fresh!r}", flush=True)
