"""The segment fill (InfiniPot §3.3.3 with whole sentence segments, scoring/segments.py) as a fixed sequence of tensor
operations — a stable rank, one cumsum and mask for the prefix that fits, the first-fit scan of smaller segments by
doubling (`first_fit`), one top-k for the last entries — against the loop it replaced, kept here as the reference:
the same entries bit for bit on random pots, on the distillations of real reads (a tiny random-weight model, and the
built-in model), on the CPU's paths and the accelerator's."""

from __future__ import annotations

import contextlib

import pytest
import torch

from infinipot_cli.pot.engine import Engine, PotConfig
from infinipot_cli.pot.scoring import selector
from infinipot_cli.pot.scoring.segments import first_fit, segment_ids, take_segments
from infinipot_cli.runtime.devices import as_if_on_accelerator


# ---- the reference: the loop of take_segments as it was, one take per step --------------------------------
def reference_take(seg, score, budget, taken, exact, longest=None, stable=False):
    """The former take_segments, its host reads included (a CPU reference): the segment count read, the greedy
    fill a take per step until nothing fits, the last entries from a top-k of what is left. `stable`: rank equal
    means in segment order (the fill's rank now); else the former unstable argsort."""
    R, N = seg.shape
    out = taken.clone()
    S = int(seg.max()) + 1 if seg.numel() else 0
    total = torch.zeros(R, S).scatter_add_(-1, seg, score.float())
    count = torch.zeros(R, S).scatter_add_(-1, seg, torch.ones_like(score, dtype=torch.float32))
    mean = torch.where(count > 0, total / count.clamp_min(1), torch.full_like(total, float("-inf")))
    length = count.long()
    busy = torch.zeros_like(length).scatter_add_(-1, seg, taken.long()) > 0
    mean = mean.masked_fill(busy | (length == 0), float("-inf"))
    order = (torch.sort(mean, dim=-1, descending=True, stable=True).indices if stable
             else mean.argsort(-1, descending=True))
    valid = mean.gather(-1, order) > float("-inf")
    olen = length.gather(-1, order)
    cum = olen.cumsum(-1)
    fits = (cum <= budget[:, None]) & valid
    longest = min(N, longest or N)
    if exact:
        left = budget - (cum * fits).max(-1).values
        nxt = fits.long().sum(-1)
        cols = torch.arange(order.shape[-1])
        for _ in range(longest):
            cand = valid & (olen <= left[:, None]) & (cols >= nxt[:, None])
            has = cand.any(-1)
            if not bool(has.any()):
                break
            j = cand.long().argmax(-1)
            fits.scatter_(-1, j[:, None], (has | fits.gather(-1, j[:, None])[:, 0])[:, None])
            left = left - olen.gather(-1, j[:, None])[:, 0] * has
            nxt = torch.where(has, j + 1, nxt)
    chosen = torch.zeros_like(mean, dtype=torch.bool).scatter_(-1, order, fits)
    out |= chosen.gather(-1, seg)
    if exact:
        left = budget - (out.long().sum(-1) - taken.long().sum(-1))
        k = int(left.max())
        if k > 0:
            seg_rank = torch.empty_like(order).scatter_(-1, order, torch.arange(S).expand(R, S))
            pos = torch.arange(N).expand(R, N)
            key = seg_rank.gather(-1, seg) * (N + 1) + (N - pos)
            free = ~out & valid.gather(-1, seg_rank).gather(-1, seg)
            key = torch.where(free, key, torch.full_like(key, -1))
            top = key.topk(min(k, N), dim=-1)
            ranks = torch.arange(top.indices.shape[-1]).expand_as(top.indices)
            pick = (top.values >= 0) & (ranks < left[:, None])
            out.scatter_(-1, top.indices, pick | out.gather(-1, top.indices))
    return out


def reference_first_fit(olen, free, room):
    """The first-fit walk, a column at a time."""
    R, S = olen.shape
    out = torch.zeros_like(free)
    for r in range(R):
        left = int(room[r])
        for c in range(S):
            if bool(free[r, c]) and int(olen[r, c]) <= left:
                out[r, c] = True
                left -= int(olen[r, c])
    return out


# ---- random pots ------------------------------------------------------------------------------------------
def random_pot(g, rows, n, longest, ties=False):
    """Segment ids (rows, n) from random sentence starts cut to `longest`, scores (rows, n), part already taken."""
    starts = torch.rand(rows, n, generator=g) < float(torch.rand((), generator=g)) * 0.4 + 0.02
    starts[:, 0] = True
    seg = segment_ids(starts, longest)
    if ties:  # few distinct values: many equal segment means
        score = torch.randint(0, 3, (rows, n), generator=g).float()
    else:
        score = torch.rand(rows, n, generator=g)
    taken = torch.zeros(rows, n, dtype=torch.bool)
    if bool(torch.rand((), generator=g) < 0.5):  # a NuC share taken first: whole segments
        taken = reference_take(seg, torch.rand(rows, n, generator=g), torch.full((rows,), n // 4), taken, exact=False,
                               longest=longest)
    return seg, score, taken


def test_first_fit_is_the_walk():
    g = torch.Generator().manual_seed(0)
    for _ in range(150):
        R, S, W = int(torch.randint(1, 4, (), generator=g)), int(torch.randint(1, 70, (), generator=g)), 49
        olen = torch.randint(1, W, (R, S), generator=g)
        free = torch.rand(R, S, generator=g) < 0.7
        room = torch.randint(0, W, (R,), generator=g)
        assert torch.equal(first_fit(olen, free, room, W), reference_first_fit(olen, free, room))


@pytest.mark.parametrize("accel", [False, True])
def test_the_fill_takes_the_loops_entries_on_random_pots(accel):
    """Tie-free scores (what real reads give): the same entries as the former loop with its unstable rank; one row
    (shared) and several (per head), with and without a NuC share taken first, budgets from 0 to past the pot."""
    g = torch.Generator().manual_seed(1)
    with as_if_on_accelerator() if accel else contextlib.nullcontext():
        for trial in range(150):
            rows = 1 if trial % 3 else int(torch.randint(2, 6, (), generator=g))
            n = int(torch.randint(1, 400, (), generator=g))
            longest = int(torch.randint(1, 60, (), generator=g))
            seg, score, taken = random_pot(g, rows, n, longest)
            budget = torch.randint(0, n + 10, (rows,), generator=g)
            budget = torch.minimum(budget, torch.full_like(budget, n) - taken.long().sum(-1) + 5).clamp_min(0)
            for exact in (False, True):
                want = reference_take(seg, score, budget, taken, exact, longest)
                got = take_segments(seg, score, budget, taken, exact, longest)
                assert torch.equal(got, want), (trial, exact)


def test_equal_means_rank_in_segment_order_on_every_path():
    """Equal segment means rank in segment order (a stable sort): the same entries whatever the padding of the
    segment columns (the bound N or the count) and whatever the device, the loop's entries with that rank."""
    g = torch.Generator().manual_seed(2)
    for trial in range(100):
        rows = 1 if trial % 2 else 3
        n = int(torch.randint(1, 300, (), generator=g))
        seg, score, taken = random_pot(g, rows, n, 48, ties=True)
        budget = torch.randint(0, n + 1, (rows,), generator=g)
        want = reference_take(seg, score, budget, taken, True, 48, stable=True)
        assert torch.equal(take_segments(seg, score, budget, taken, True, 48), want)
        with as_if_on_accelerator():
            assert torch.equal(take_segments(seg, score, budget, taken, True, 48), want)


def test_the_fill_is_a_fixed_sequence_of_operations():
    """One row: the same operations whatever the scores and the budget (nothing stops early, nothing read)."""
    from torch.overrides import TorchFunctionMode

    class Count(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            self.calls.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    g = torch.Generator().manual_seed(3)
    seen = set()
    for _ in range(20):
        seg, score, taken = random_pot(g, 1, 300, 48)
        c = Count()
        with c:
            take_segments(seg, score, torch.randint(0, 300, (1,), generator=g), taken, True, 48)
        seen.add(tuple(c.calls))
        assert not {"item", "tolist", "__bool__", "__int__", "__float__"} & set(c.calls)
    assert len(seen) == 1


# ---- real reads: every distillation's fill checked against the reference ---------------------------------------
class Checked:
    """Patches selector.take_segments to run the reference beside it at every call, asserting the same entries."""

    def __init__(self):
        self.calls = 0

    def __call__(self, seg, score, budget, taken, exact, longest=None):
        got = take_segments(seg, score, budget, taken, exact, longest)
        with torch.no_grad():
            want = reference_take(seg.cpu(), score.cpu(), budget.cpu(), taken.cpu(), exact, longest)
        assert torch.equal(got.cpu(), want)
        self.calls += 1
        return got


class SentenceTok:
    """Every seventh id ends a sentence."""

    def decode(self, ids, skip_special_tokens=True):
        return "".join(" w." if i % 7 == 0 else f" w{i}" for i in ids)

    def batch_decode(self, batch, skip_special_tokens=True):
        return [self.decode(x) for x in batch]


@pytest.mark.parametrize("accel", [False, True])
def test_a_tiny_models_read_fills_as_the_loop(monkeypatch, accel):
    from tiny_models import VOCAB, make_model

    check = Checked()
    monkeypatch.setattr(selector, "take_segments", check)
    model = make_model("llama3")
    g = torch.Generator().manual_seed(4)
    ids = torch.randint(10, VOCAB, (900,), generator=g).tolist()
    with as_if_on_accelerator() if accel else contextlib.nullcontext():
        eng = Engine(model, SentenceTok(), PotConfig(size=160, keep=80, chunk=32, nuc_sample=False),
                     catalyst_ids=[20, 21, 22, 23, 24, 25, 26], catalyst_focus=(3, 6))
        eng.pin(list(range(3, 9)))
        eng.feed(ids)
        eng.finish()
    assert eng.cycles >= 8 and check.calls >= 2 * eng.cycles


def test_the_builtin_models_read_fills_as_the_loop(builtin, monkeypatch):
    """sample_docs/lighthouse.txt's first 1,200 tokens through a 384-entry pot, the question as the catalyst."""
    import os

    from infinipot_cli.pot.prompts import Prompts

    check = Checked()
    monkeypatch.setattr(selector, "take_segments", check)
    tok = builtin.tokenizer
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = open(os.path.join(root, "sample_docs", "lighthouse.txt"), encoding="utf-8").read()
    ids = tok.encode(text, add_special_tokens=False)[:1200]
    P = Prompts(tok)
    cat, focus = P.catalyst("question", "What was the keeper's cat called?")
    eng = Engine(builtin.model, tok, PotConfig(size=384, keep=192, chunk=128), catalyst_ids=cat, catalyst_focus=focus)
    eng.pin(P.header_ids())
    eng.feed(ids)
    eng.finish()
    assert eng.cycles >= 5 and check.calls >= 2 * eng.cycles

