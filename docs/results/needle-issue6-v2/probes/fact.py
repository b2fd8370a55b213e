"""Fact-needle misses with the needle held whole: does a tighter answer-time distillation help?"""
import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))  # the repository
import sys, copy, re, torch
sys.path.insert(0, ROOT)
torch.set_num_threads(2)
from infinipot_cli.model import load_model
from infinipot_cli.engine import Engine
from infinipot_cli.prompts import Prompts
from infinipot_cli.evaluate.needle import NeedleConfig, run_trial
lm = load_model(None, None, None, progress=lambda m: None)
tok = lm.tokenizer
length, depth, trial = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
keeps = [int(k) for k in sys.argv[4].split(",")]
methods = sys.argv[5].split(",") if len(sys.argv) > 5 else ["infinipot"]
orig = Engine.answer
def answer(self, prompt_ids, max_new_tokens=256, stop_ids=None, on_text=None, final_distill=True, focus=None):
    base = copy.deepcopy(self.pot)
    txt = tok.decode(self.pot.tok[0, 0][self.pot.src[0, 0] >= 0].tolist())
    print("   pot entries", len(self.pot), "| places-ish:", re.findall(r"in the ([a-z' ]{3,30})\.", txt)[:40], flush=True)
    for k in keeps:
        self.pot = copy.deepcopy(base)
        self._final_distill(prompt_ids, k, focus)
        a = orig(self, prompt_ids, max_new_tokens, stop_ids, on_text, final_distill, focus)
        print(f"   final distill to {k}: {a!r}", flush=True)
    self.pot = base
    return orig(self, prompt_ids, max_new_tokens, stop_ids, on_text, final_distill, focus)
Engine.answer = answer
cfg = NeedleConfig(lengths=[length], depths=[0.1, 0.5, 0.9], trials=max(2, trial + 1), methods=methods)
for m in methods:
    rec = run_trial(lm, Prompts(tok), cfg, m, length, depth, trial)
    print(m, length, depth, trial, rec["needle"], "->", repr(rec["answer"]), rec["correct"], rec["held"], flush=True)
