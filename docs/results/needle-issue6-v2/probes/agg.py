"""Which aggregation of the catalyst's attention ranks the needle highest? One pass over several cells."""
import os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "../../../.."))  # the repository
import sys, json, time, torch; sys.path.insert(0, HERE)
from probe import *
from infinipot_cli.scoring import cap as capmod
from infinipot_cli.evaluate.haystack import builtin_units, token_pieces, Placement, file_units
from infinipot_cli.evaluate.needles import make_needle
L = lm()
tokz = L.tokenizer
vocab_bound = torch.zeros(len(tokz), dtype=torch.bool)
for i in range(len(tokz)):
    s = tokz.decode([i])
    if any(c in s for c in ".!?\n"):
        vocab_bound[i] = True

STASH = {}
orig_gl = capmod._group_logits
def gl(module, query, key, mask, scaling, softcap):
    p = orig_gl(module, query, key, mask, scaling, softcap)
    if query.shape[2] > 1 and capmod._ACTIVE is not None and capmod._ACTIVE.rows > 1:
        STASH[module.layer_idx] = p[0].detach().clone()  # (Hkv, G, R, S)
    return p
capmod._group_logits = gl

def variants(P, npin, S, qrows):
    # P: (L, Hkv, G, R, S_all) -> candidates only
    C = P[..., npin:S]
    Lc = P.shape[0]
    deep = C[Lc // 2:]
    out = {}
    out["deep_all"] = deep.sum((2, 3)).mean((0, 1))
    out["all_layers"] = C.sum((2, 3)).mean((0, 1))
    out["deep_qrows"] = deep[:, :, :, qrows[0]:qrows[1]].sum((2, 3)).mean((0, 1))
    out["deep_tail"] = deep[:, :, :, qrows[1]:].sum((2, 3)).mean((0, 1))
    out["deep_last"] = deep[:, :, :, -1].sum(2).mean((0, 1))
    out["deep_doc_rows"] = deep[:, :, :, :qrows[0]].sum((2, 3)).mean((0, 1))
    out["deep_maxhead"] = deep.sum((2, 3)).flatten(0, 1).max(0).values
    rn = deep / deep.sum(-1, keepdim=True).clamp_min(1e-9)
    out["deep_rownorm"] = rn.mean((0, 1, 2, 3))
    out["deep_logmean"] = torch.log(deep + 1e-6).mean((0, 1, 2, 3))
    out["L20_29"] = C[20:].sum((2, 3)).mean((0, 1))
    out["L10_19"] = C[10:20].sum((2, 3)).mean((0, 1))
    out["L25_29"] = C[25:].sum((2, 3)).mean((0, 1))
    out["L5_14"] = C[5:15].sum((2, 3)).mean((0, 1))
    # contrast: question rows minus document-template rows (relevance beyond generic attention)
    q = deep[:, :, :, qrows[0]:qrows[1]].mean(3)
    d = deep[:, :, :, :qrows[0]].mean(3)
    out["deep_q_minus_tpl"] = (q - d).sum(2).mean((0, 1))
    out["deep_q_over_tpl"] = (torch.log(q + 1e-6) - torch.log(d + 1e-6)).mean((0, 1, 2))
    qa = C[:, :, :, qrows[0]:qrows[1]].mean(3); da = C[:, :, :, :qrows[0]].mean(3)
    out["all_qmt"] = (qa - da).sum(2).mean((0, 1))
    out["L20_qmt"] = (qa[20:] - da[20:]).sum(2).mean((0, 1))
    out["L10_qmt"] = (qa[10:] - da[10:]).sum(2).mean((0, 1))
    out["deep_qmt_relu"] = (q - d).sum(2).clamp_min(0).mean((0, 1))
    out["deep_qmt_maxhead"] = (q - d).sum(2).flatten(0, 1).max(0).values
    t = deep[:, :, :, qrows[1]:].mean(3)
    out["deep_q_minus_tail"] = (q - t).sum(2).mean((0, 1))
    out["deep_qtail_minus_tpl"] = (deep[:, :, :, qrows[0]:].mean(3) - d).sum(2).mean((0, 1))
    return out

def segments(src, tok, maxlen=48):
    """segment id per candidate: break at doc gaps, after sentence-boundary tokens, and at maxlen."""
    n = src.shape[0]
    seg = torch.zeros(n, dtype=torch.long)
    cur, ln = 0, 0
    for i in range(n):
        if i > 0 and (src[i] != src[i - 1] + 1 or vocab_bound[tok[i - 1]] or ln >= maxlen):
            cur += 1; ln = 0
        seg[i] = cur; ln += 1
    return seg

def rank_stats(score, m, seg):
    r = (-score).argsort().argsort()
    tok_rank = int(r[m].min())
    nseg = int(seg.max()) + 1
    ssum = torch.zeros(nseg).index_add_(0, seg, score)
    cnt = torch.zeros(nseg).index_add_(0, seg, torch.ones_like(score))
    smean = ssum / cnt
    sr = (-smean).argsort().argsort()
    nsegs = seg[m].unique()
    # share of candidates ranked above the needle's best segment (token-weighted)
    best = nsegs[smean[nsegs].argmax()]
    above = cnt[smean > smean[best]].sum()
    return tok_rank, int(sr[nsegs].min()), int(above), nseg

def run_cell(doc, start, n, question, spec="infinipot-span"):  # the default when the study was run
    pr = Prompts(tokz)
    cat = pr.catalyst_ids("question", question)
    qi = [i for i, t in enumerate(cat) if tokz.decode([t]) == "Question"][0]
    ei = len(cat) - 5
    cfg = PotConfig.from_spec(spec)
    eng = Engine(L.model, tokz, cfg, catalyst_ids=cat)
    pol = eng.policy
    orig = pol.select
    recs = []
    def sel(inp):
        npin = eng.pot.n_pinned
        S = len(eng.pot)
        src = eng.pot.src[0, 0, npin:]; tk = eng.pot.tok[0, 0, npin:]
        m = (src >= start) & (src < start + n)
        if m.any() and STASH:
            P = torch.stack([STASH[l] for l in range(len(STASH))])
            vs = variants(P, npin, S, (qi, ei))
            seg = segments(src, tk)
            age = eng.tokens_read - start
            rec = {"cycle": eng.cycles + 1, "age": age, "n": inp.n, "held": int(m.sum())}
            for k, v in vs.items():
                rec[k] = rank_stats(v, m, seg)
            recs.append(rec)
        STASH.clear()
        return orig(inp)
    pol.select = sel
    eng.pin(pr.header_ids())
    for i in range(0, len(doc), 1024):
        eng.feed(doc[i:i + 1024])
    eng.finish()
    return recs

if __name__ == "__main__":
    length = int(sys.argv[1]); depth = float(sys.argv[2]); ncell = int(sys.argv[3]); out = sys.argv[4]
    hay = sys.argv[5] if len(sys.argv) > 5 else None
    allrecs = []
    for c in range(ncell):
        kind = ["passkey", "name", "fact"][c % 3]
        nd = make_needle(kind, f"agg:{c}")
        pl = Placement()
        units = file_units(hay) if hay else builtin_units(f"agg:{c}")
        doc = [t for p in token_pieces(units, tokz, length, depth, nd.text, placement=pl) for t in p]
        t0 = time.time()
        recs = run_cell(doc, pl.needle_start, pl.needle_tokens, nd.question)
        for r in recs: r["kind"] = kind; r["cell"] = c
        allrecs += recs
        print(f"cell {c} {kind}: {len(recs)} distillations with the needle, {time.time()-t0:.0f}s", flush=True)
    json.dump(allrecs, open(out, "w"))
