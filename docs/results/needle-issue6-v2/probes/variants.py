"""Bench cells answered by several method specs (same input): answer, correct, held."""
import os, sys, torch
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../..")))
torch.set_num_threads(2)
from infinipot_cli.model import load_model
from infinipot_cli.prompts import Prompts
from infinipot_cli.evaluate.needle import NeedleConfig, run_trial
lm = load_model(None, None, None, progress=lambda m: None)
length, depth, trial = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
methods = sys.argv[4].split(",")
hay = sys.argv[5] if len(sys.argv) > 5 else None
cfg = NeedleConfig(lengths=[length], depths=[0.1, 0.5, 0.9], trials=max(2, trial + 1), methods=methods, haystack=hay)
for m in methods:
    rec = run_trial(lm, Prompts(lm.tokenizer), cfg, m, length, depth, trial)
    print(f"{m:40s} {length} d{depth} t{trial} ok={rec['correct']} held={rec['held']['share']} {rec['answer']!r}", flush=True)
