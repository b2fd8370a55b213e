"""Sentence segments (scoring/segments.py) and the InfiniPot `segment` / `relevance` options."""

import torch

from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.pot.scoring.policies.infinipot import InfiniPotPolicy
from infinipot_cli.pot.scoring.policy import SelectionInputs
from infinipot_cli.pot.scoring.segments import BoundaryTable, segment_ids, take_segments, unit_starts
from tiny_models import VOCAB, make_model


def seg_policy(**kw):
    return InfiniPotPolicy.from_config(PotConfig(**{"share": False, "relevance": False, "segment": 48, **kw}))

DOT, PARA, BANG, NL = 1, 2, 3, 4  # token ids the stand-in tokenizer decodes as ".", "\n\n", "!", "\n"


class Tok:
    """Decodes 1 as '.', 2 as a blank line, 3 as '!', 4 as a newline and every other id as a word."""

    def decode(self, ids, skip_special_tokens=True):
        return "".join({DOT: ".", PARA: "\n\n", BANG: "!", NL: "\n"}.get(i, f" w{i}") for i in ids)


def starts_of(src, tok):
    return unit_starts(torch.tensor([src]), torch.tensor([tok]), BoundaryTable(Tok()))[0].tolist()


def test_units_start_at_gaps_and_after_sentence_ends_keeping_trailing_punctuation():
    #          0   1   2    3     4   5   6   7    8   9   10  11  12
    src = [10, 11, 12, 13, 14, 15, 16, 30, 31, 32, 33, 34, 35]
    tok = [50, 51, DOT, PARA, 52, NL, 54, 55, BANG, 56, PARA, 57, 58]
    s = starts_of(src, tok)
    # 0 first; the blank line after '.' stays with its sentence; 4 starts after it; a single newline (5, a
    # wrapped line) ends nothing; 7 starts at the gap 16 -> 30; 9 after '!'; 11 after a blank line
    assert s == [True, False, False, False, True, False, False, True, False, True, False, True, False]


def test_long_units_split_into_near_equal_pieces():
    starts = torch.zeros(1, 50, dtype=torch.bool)
    starts[0, 0] = True
    seg = segment_ids(starts, max_len=48)
    counts = torch.bincount(seg[0]).tolist()
    assert counts == [25, 25]
    seg = segment_ids(starts, max_len=16)
    assert max(torch.bincount(seg[0]).tolist()) <= 16 and int(seg.max()) == 3
    assert bool((seg[0, 1:] >= seg[0, :-1]).all())


def test_take_segments_takes_whole_segments_best_mean_first_and_fills_exactly():
    seg = torch.tensor([[0, 0, 0, 1, 1, 2, 2, 2, 2, 3]])
    score = torch.tensor([[1.0, 1.0, 1.0, 5.0, 5.0, 2.0, 2.0, 2.0, 2.0, 0.0]])
    none = torch.zeros(1, 10, dtype=torch.bool)
    got = take_segments(seg, score, torch.tensor([6]), none, exact=False)
    assert got[0].nonzero().flatten().tolist() == [3, 4, 5, 6, 7, 8]          # segments 1 and 2 (2 + 4 entries)
    got = take_segments(seg, score, torch.tensor([7]), none, exact=True)
    assert got[0].nonzero().flatten().tolist() == [3, 4, 5, 6, 7, 8, 9]       # + segment 3, whole, further down
    got = take_segments(seg, score, torch.tensor([8]), none, exact=True)
    # no free segment fits the last 2 slots: single entries of the worst-ranked one (segment 3, then segment 0)
    assert got[0].nonzero().flatten().tolist() == [0, 3, 4, 5, 6, 7, 8, 9]
    got = take_segments(seg, score, torch.tensor([3]), none, exact=False)
    assert got[0].nonzero().flatten().tolist() == [3, 4]                     # the next best (4 entries) does not fit
    # a segment already partly taken is not taken again
    taken = none.clone()
    taken[0, 3] = True
    got = take_segments(seg, score, torch.tensor([4]), taken, exact=True)
    assert got[0].nonzero().flatten().tolist() == [3, 5, 6, 7, 8]


def _inputs(n=40, budget=12, L=2, H=2, gap_at=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.cat([torch.arange(gap_at), torch.arange(gap_at, n) + 100]).expand(L, H, n)
    tok = torch.full((n,), 50)
    tok[[5, 12, 27, 33]] = DOT
    starts = unit_starts(src, tok.expand(L, H, n), BoundaryTable(Tok()))
    cap = torch.rand(L, H, n, generator=g)
    nov = torch.rand(L, H, n, generator=g)
    return SelectionInputs(budget=budget, n=n, cap=cap, nov=nov, shape=(L, H), starts=starts), src


def test_segment_policy_keeps_exactly_the_budget_in_every_head_and_whole_units():
    inp, _ = _inputs()
    for share in (False, True):
        pol = seg_policy(alpha=0.5, share=share)
        idx = pol.select(inp)
        assert idx.shape == (2, 2, 12)
        assert bool((idx[..., 1:] > idx[..., :-1]).all())                   # ascending, no repeats
        if share:
            assert all(torch.equal(idx[l, h], idx[0, 0]) for l in range(2) for h in range(2))
        assert pol.last_nuc.shape == (2, 2, 40)


def _three_units(n=30):
    src = torch.arange(n).view(1, 1, n)
    tok = torch.full((1, 1, n), 50)
    tok[0, 0, [9, 19, 29]] = DOT                                             # units 0-9, 10-19, 20-29
    return unit_starts(src, tok, BoundaryTable(Tok()))


def test_segment_policy_prefers_the_unit_with_the_best_mean_not_the_best_token():
    n = 30
    starts = _three_units(n)
    cap = torch.zeros(1, 1, n)
    cap[0, 0, 3] = 9.0                                                       # one very high token in unit 0
    cap[0, 0, 20:30] = 1.5                                                   # a uniformly relevant unit 2
    inp = SelectionInputs(budget=10, n=n, cap=cap, nov=torch.zeros(1, 1, n), shape=(1, 1), starts=starts)
    idx = seg_policy(alpha=0.0).select(inp)
    assert idx[0, 0].tolist() == list(range(20, 30))
    inp.rel = -cap                                                           # relevance replaces the CaP sum
    idx = seg_policy(alpha=0.0, relevance=True).select(inp)
    assert idx[0, 0].tolist() == list(range(10, 20))


def test_engine_with_segments_and_relevance_respects_the_cap_and_keeps_one_subset():
    model = make_model("llama")
    cfg = PotConfig(size=96, keep=48, chunk=32, segment=16, relevance=True, share=True)
    eng = Engine(model, Tok(), cfg, catalyst_ids=[20, 21, 22, 23, 24], catalyst_focus=(2, 5))
    eng.pin([5, 6, 7])
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(4, VOCAB, (400,), generator=g)
    ids[::9] = DOT
    eng.feed(ids.tolist())
    eng.finish()
    assert eng.cycles > 3 and eng.pot.peak_entries <= 96
    src = eng.pot.src
    assert all(torch.equal(src[l, h], src[0, 0]) for l in range(src.shape[0]) for h in range(src.shape[1]))


# ---- sentence ends with a real tokenizer ("4.19.0" was once cut into "version 4." and "19.") -------------
def _sentences(tok, text):
    ids = tok.encode(text, add_special_tokens=False)
    starts = unit_starts(torch.arange(len(ids))[None], torch.tensor([ids]), BoundaryTable(tok))[0].tolist()
    out, cur = [], []
    for i, s in zip(ids, starts):
        if s and cur:
            out.append(tok.decode(cur).strip())
            cur = []
        cur.append(i)
    out.append(tok.decode(cur).strip())
    return out


def test_numbers_versions_abbreviations_and_initials_do_not_end_a_sentence(builtin_tok):
    tok = builtin_tok
    text = ("The kernel is version 4.19.0 on this host. It runs 1.5 times faster than X.680 parsers. "
            "Dr. Smith met J. R. R. Tolkien, e.g. at 3 p.m. in the U.S. office. Any file named Override.xml "
            "takes precedence.\n\nA new paragraph starts here! Does it? Yes.\n"
            "The end (really.) \"Quoted.\" Done")
    assert _sentences(tok, text) == [
        "The kernel is version 4.19.0 on this host.",
        "It runs 1.5 times faster than X.680 parsers.",
        "Dr. Smith met J. R. R. Tolkien, e.g. at 3 p.m. in the U.S. office.",
        "Any file named Override.xml takes precedence.",
        "A new paragraph starts here!",
        "Does it?",
        "Yes.",
        "The end (really.)",
        "\"Quoted.\"",
        "Done",
    ]


def test_a_blank_line_ends_a_paragraph_without_a_period_and_a_wrapped_line_does_not(builtin_tok):
    assert _sentences(builtin_tok, "Chapter One\n\nIt was late\nand dark. Then") == [
        "Chapter One", "It was late\nand dark.", "Then"]


def test_a_planted_sentence_at_the_budget_edge_is_never_cut_mid_way():
    """The best sentence that does not fit the room left is kept whole or not at all; the room goes
    to whole smaller sentences further down and, last, to single entries of the worst-ranked ones."""
    torch.manual_seed(0)
    for trial in range(200):
        lens = torch.randint(1, 30, (12,)).tolist()
        seg = torch.repeat_interleave(torch.arange(len(lens)), torch.tensor(lens))[None]  # (1, N)
        n = seg.shape[1]
        score = torch.rand(len(lens))[seg]                      # (1, N) one score per segment
        planted = int(torch.randint(0, len(lens), ()))
        # budget: the planted sentence ranks next but sticks out past the budget's edge
        order = sorted(range(len(lens)), key=lambda i: -float(score[0, seg[0] == i][0]))
        better = [i for i in order if i != planted][: int(torch.randint(0, len(lens) - 1, ()))]
        score[0, seg[0] == planted] = min(float(score[0, seg[0] == i][0]) for i in better) - 1e-3 if better else 2.0
        budget = sum(lens[i] for i in better) + int(torch.randint(0, lens[planted], ()))
        got = take_segments(seg, score, torch.tensor([budget]), torch.zeros(1, n, dtype=torch.bool), exact=True)
        assert int(got.sum()) == min(budget, n)
        kept = int(got[0, seg[0] == planted].sum())
        others_full = bool(got[0, seg[0] != planted].all())  # cut only when nothing else is left to take
        assert kept in (0, lens[planted]) or others_full, (trial, lens, planted, budget, kept)
        if kept == 0 and budget - sum(lens[i] for i in better) >= 1:
            assert got[0, seg[0] != planted].sum() == budget  # the room went to other sentences, whole first
