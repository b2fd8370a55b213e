"""Probe: run a document through the engine, log per-distillation fate of a target span."""
import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))  # the repository
import sys, time, torch
sys.path.insert(0, ROOT)
from infinipot_cli.model import load_model
from infinipot_cli.engine import Engine, PotConfig
from infinipot_cli.prompts import Prompts
from infinipot_cli.scoring import policies as P

_LM = None
def lm():
    global _LM
    if _LM is None:
        torch.set_num_threads(2)
        _LM = load_model(None, None, None, progress=lambda m: None)
    return _LM

def find_span(ids, sub):
    n = len(sub)
    for i in range(len(ids) - n + 1):
        if ids[i:i+n] == sub:
            return i
    return -1

def run(doc_ids, question, spec="infinipot", target=None, answer_prefix="", log=True, size=2048, keep=1024, chunk=1024, max_new=24):
    """target: (start, n) document token range. Returns (answer, per-cycle log, engine)."""
    L = lm()
    pr = Prompts(L.tokenizer)
    cfg = PotConfig.from_spec(spec, size=size, keep=keep, chunk=chunk)
    cat, focus = pr.catalyst("question", question)
    eng = Engine(L.model, L.tokenizer, cfg, catalyst_ids=cat, catalyst_focus=focus)
    logs = []
    pol = eng.policy
    orig = pol.select
    def sel(inp):
        out = orig(inp)
        if target is not None and inp.cap is not None:
            s0, n = target
            npin = eng.pot.n_pinned
            src = eng.pot.src[0, 0, npin:]
            m = (src >= s0) & (src < s0 + n)
            if m.any():
                # shared score as the policy sees it
                cap = inp.rel if getattr(pol, "relevance", False) and inp.rel is not None else inp.cap
                if getattr(pol, "share", False):
                    first = min(int(round(pol.share_from * cap.shape[0])), cap.shape[0] - 1)
                    c = cap[first:].mean(dim=(0, 1))
                else:
                    c = cap.mean(dim=(0, 1))
                if getattr(pol, "span", 0) > 1 and not getattr(pol, "segment", 0):
                    c = P._span_mean(c.view(1, 1, -1), pol.span)[0, 0]
                ranks = (-c).argsort().argsort()
                kept = torch.zeros(inp.n, dtype=torch.bool); kept[out[0, 0]] = True
                nuc = pol.last_nuc[0, 0] if getattr(pol, "last_nuc", None) is not None else torch.zeros(inp.n, dtype=torch.bool)
                logs.append(dict(cycle=eng.cycles + 1, read=eng.tokens_read, n=inp.n, best_rank=int(ranks[m].min()),
                                 med_rank=int(ranks[m].float().median()), kept=int((kept & m).sum()), of=int(m.sum()),
                                 by_nuc=int((nuc & m & kept).sum()), pos=int(m.nonzero()[0]) if m.any() else -1,
                                 cap_kept_cut=float(c[kept & ~nuc].min()) if (kept & ~nuc).any() else None,
                                 needle_cap=float(c[m].max())))
        return out
    pol.select = sel
    eng.pin(pr.header_ids())
    for i in range(0, len(doc_ids), 1024):
        eng.feed(doc_ids[i:i+1024])
    eng.finish()
    ask, afocus = pr.ask(question, answer_prefix=answer_prefix)
    ans = eng.answer(ask, max_new_tokens=max_new, stop_ids=pr.stop_ids(), focus=afocus)
    if log:
        for r in logs:
            print("   ", r)
    return ans, logs, eng

def kept_text(eng, layer=0, head=0):
    L = lm()
    src = eng.pot.src[layer, head]
    tok = eng.pot.tok[layer, head]
    segs, cur, last = [], [], None
    for s, t in zip(src.tolist(), tok.tolist()):
        if s < 0: continue
        if last is not None and s != last + 1:
            segs.append((cur_start, L.tokenizer.decode(cur))); cur = []
        if not cur: cur_start = s
        cur.append(t); last = s
    if cur: segs.append((cur_start, L.tokenizer.decode(cur)))
    return segs
