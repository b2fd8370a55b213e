"""The InfiniPot scorer and selector (§3.3): per-head or shared scores, NuC first then CaP, tokens or segments."""

import pytest
import torch

from infinipot_cli.pot.config import PotConfig
from infinipot_cli.pot.engine import Engine
from infinipot_cli.pot.scoring.policies.infinipot import InfiniPotPolicy
from infinipot_cli.pot.scoring.policy import SelectionInputs
from infinipot_cli.pot.scoring.scorer import InfiniPotScorer
from infinipot_cli.pot.scoring.selector import select_tokens
from tiny_models import VOCAB, make_model

L, H, N = 3, 2, 64


class WordTok:
    """A stand-in tokenizer: id 7 is a full stop, every other id a word."""

    def decode(self, ids, skip_special_tokens=True):
        return "".join("." if i == 7 else f" w{i}" for i in ids)


def inputs(cap, nov=None, budget=8):
    nov = torch.zeros_like(cap) if nov is None else nov
    return SelectionInputs(budget=budget, n=cap.shape[-1], cap=cap, nov=nov, shape=tuple(cap.shape[:2]))


def rand(seed, shape=(L, H, N)):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed))


def policy(**kw):
    return InfiniPotPolicy.from_config(PotConfig(segment=0, **{"share": False, "relevance": False, **kw}))


def test_paper_selection_differs_per_head_and_share_makes_it_one_set():
    cap = rand(1)
    paper = policy(alpha=0.0).select(inputs(cap))
    assert paper.shape == (L, H, 8)
    assert not all(torch.equal(paper[l, h], paper[0, 0]) for l in range(L) for h in range(H))
    shared = policy(alpha=0.0, share=True, share_from=0.0).select(inputs(cap))
    assert all(torch.equal(shared[l, h], shared[0, 0]) for l in range(L) for h in range(H))
    assert set(shared[0, 0].tolist()) == set(cap.mean(dim=(0, 1)).topk(8).indices.tolist())


def test_share_from_averages_only_the_deeper_layers():
    cap = rand(6, (4, H, N))
    kept = policy(alpha=0.0, share=True, share_from=0.5).select(inputs(cap))
    assert set(kept[0, 0].tolist()) == set(cap[2:].mean(dim=(0, 1)).topk(8).indices.tolist())
    assert (kept == kept[:1, :1]).all()
    cap[2:, :, 7] = 10.0                                  # salient in the deep layers only
    assert 7 in policy(alpha=0.0, share=True, share_from=0.5).select(inputs(cap))[0, 0].tolist()


def test_nuc_share_first_then_cap():
    cap, nov = rand(2), rand(3)
    pol = policy(alpha=0.5)
    kept = pol.select(inputs(cap, nov, budget=8))
    for l in range(L):
        for h in range(H):
            ks = set(kept[l, h].tolist())
            assert set(nov[l, h].topk(4).indices.tolist()) <= ks         # round(0.5 * 8) = 4 by novelty
            rest = cap[l, h].masked_fill(torch.zeros(N, dtype=torch.bool).index_fill(0, nov[l, h].topk(4).indices, True),
                                         float("-inf"))
            assert set(rest.topk(4).indices.tolist()) <= ks              # the other 4 by CaP
    assert pol.last_nuc.sum(-1).eq(4).all()


def test_relevance_replaces_the_cap_sum_only_with_a_question():
    cap, rel = rand(7), torch.zeros(L, H, N)
    rel[..., 11] = 5.0
    scorer = InfiniPotScorer(relevance=True)
    assert torch.equal(scorer.score(cap, cap, rel).cap, rel)
    assert torch.equal(scorer.score(cap, cap, None).cap, cap)
    idx, _ = select_tokens(scorer.score(cap, torch.zeros_like(cap), rel), 1, 0.0)
    assert idx.flatten().eq(11).all()


def test_snapkv_pools_neighbours():
    from infinipot_cli.pot.scoring.policies import make_policy

    cap = torch.zeros(L, H, N)
    cap[..., 20] = 1.0
    kept = make_policy(PotConfig(method="snapkv", size=None, keep=3)).select(inputs(cap, budget=3))
    assert set(kept[0, 0].tolist()) <= set(range(17, 24))   # neighbours of the salient entry (window 7)


@pytest.mark.parametrize("arch", ["llama", "gemma3"])
def test_engine_default_keeps_one_document_subset_for_every_head(arch):
    torch.manual_seed(0)
    model = make_model(arch)
    ids = torch.randint(10, VOCAB, (300,), generator=torch.Generator().manual_seed(5)).tolist()

    def read(cfg):
        eng = Engine(model, WordTok(), cfg, catalyst_ids=[20, 21, 22])
        eng.pin([3, 4, 5])
        eng.feed(ids)
        eng.finish()
        assert eng.cycles > 0
        return eng.pot.src

    src = read(PotConfig(size=96, keep=48, chunk=32))
    assert (src == src[:1, :1]).all()                    # one subset of the document, the same in every head
    paper = read(PotConfig.resolve("infinipot-paper", dict(size=96, keep=48, chunk=32)))
    assert not (paper == paper[:1, :1]).all()            # the paper selects per (layer, head)
