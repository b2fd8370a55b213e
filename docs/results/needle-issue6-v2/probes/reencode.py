"""One bench cell read once, then answered four ways: from the pot as it is and narrowed to 512 entries
(`final_keep`), each either from the pot's own KV cache (the default until round 5) or from a fresh prefill of
the pot's tokens (`reencode`: the KV states recomputed over just the text the pot holds).

reencode.py LENGTH DEPTH TRIAL [HAYSTACK|-] [SEED] [LENGTHS]     e.g. reencode.py 131072 0.5 0 - 1 32768,131072
The needle and haystack are the ones `bench needle -l LENGTHS [--seed SEED]` draws for that cell (LENGTHS: the
bench run's length list, default LENGTH alone; the needle kind rotates with the length's place in it)."""
import os, sys, torch
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../..")))
torch.set_num_threads(int(os.environ.get("THREADS", "2")))
from infinipot_cli.model import load_model
from infinipot_cli.evaluate.needle import needle_held
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cell import read_cell

lm = load_model(None, None, None, progress=lambda m: None)
length, depth, trial = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
hay = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
seed = int(sys.argv[5]) if len(sys.argv) > 5 else 0
lengths = [int(x) for x in sys.argv[6].split(",")] if len(sys.argv) > 6 else None
eng, needle, pl, prompts, ask, ask_focus = read_cell(lm, length, depth, trial, "infinipot+final_keep=0+reencode=0",
                                                     hay, seed, lengths=lengths)
stops = prompts.stop_ids()
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
