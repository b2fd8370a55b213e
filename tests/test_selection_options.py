"""InfiniPot selection options beyond the paper (issue 6): segment, relevance, span, share, pool, recent,
nuc_decay, and the presets: `infinipot-paper` (the paper's per-head selection) and `infinipot-span` (the previous
default). Segments and relevance themselves: test_segments.py."""

import pytest
import torch

from infinipot_cli.cli import Options, _options, pot_config
from infinipot_cli.engine import PAPER_OPTIONS, Engine, PotConfig, split_method_spec
from infinipot_cli.errors import UsageError
from infinipot_cli.scoring.policies import InfiniPotPolicy, SelectionInputs
from tiny_models import VOCAB, make_model

L, H, N = 3, 2, 64


class WordTok:
    """A stand-in tokenizer: id 7 is a full stop, every other id a word."""

    def decode(self, ids, skip_special_tokens=True):
        return "".join("." if i == 7 else f" w{i}" for i in ids)


def inputs(cap, nov=None, budget=8):
    nov = torch.zeros_like(cap) if nov is None else nov
    return SelectionInputs(budget=budget, n=cap.shape[-1], cap=cap, nov=nov, acc=None, shape=tuple(cap.shape[:2]))


def rand(seed, shape=(L, H, N)):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed))


# ---- presets and specs ----------------------------------------------------------------------------------
def test_defaults_and_paper_preset():
    d = PotConfig()
    assert (d.segment, d.relevance, d.span, d.share, d.share_from, d.final_keep, d.reencode) == (
        48, True, 0, True, 0.5, 512, True)
    assert split_method_spec("infinipot-paper") == ("infinipot", PAPER_OPTIONS)
    assert split_method_spec("infinipot-paper+span=8+alpha=0") == (
        "infinipot", {"span": 8, "share": False, "share_from": 0.0, "segment": 0, "relevance": False, "rel_share": 1.0,
                      "final_keep": 0, "reencode": False, "recall": 0, "alpha": 0.0})
    assert split_method_spec("infinipot+rel_share=0.25") == ("infinipot", {"rel_share": 0.25})
    prev = PotConfig.from_spec("infinipot-span")
    assert (prev.segment, prev.relevance, prev.span, prev.share, prev.final_keep, prev.reencode) == (
        0, False, 32, True, 0, False)
    assert split_method_spec("infinipot+relevance=off+segment=16") == ("infinipot", {"relevance": False, "segment": 16})
    cfg = PotConfig.from_spec("infinipot-paper", size=96, keep=48)
    assert (cfg.method, cfg.span, cfg.share, cfg.size) == ("infinipot", 0, False, 96)
    pol = cfg.policy()
    assert (pol.span, pol.share, pol.alpha, pol.segment, pol.relevance) == (0, False, 0.5, 0, False)
    with pytest.raises(UsageError):
        split_method_spec("infinipot+spam=3")


def test_cli_options_override_the_preset():
    d = pot_config(Options())
    assert (d.segment, d.relevance, d.span, d.share, d.share_from) == (48, True, 0, True, 0.5)
    assert pot_config(Options(segment=0, relevance=False)).segment == 0
    assert pot_config(Options(method="infinipot-paper", segment=32)).segment == 32
    with pytest.raises(UsageError):
        _options(segment=-1)
    assert pot_config(Options(share_from=0.0)).share_from == 0.0
    with pytest.raises(UsageError):
        _options(share_from=1.5)
    paper = pot_config(Options(method="infinipot-paper"))
    assert (paper.method, paper.span, paper.share) == ("infinipot", 0, False)
    mixed = pot_config(Options(method="infinipot-paper", span=16))
    assert (mixed.span, mixed.share) == (16, False)
    assert pot_config(Options(share=False)).share is False
    assert pot_config(Options(final_keep=256)).final_keep == 256
    assert pot_config(Options(method="infinipot-paper", final_keep=256)).final_keep == 256
    with pytest.raises(UsageError):
        _options(final_keep=-1)
    assert pot_config(Options()).reencode is True
    assert pot_config(Options(reencode=False)).reencode is False
    assert pot_config(Options(method="infinipot-paper")).reencode is False
    assert pot_config(Options(method="infinipot-paper", reencode=True)).reencode is True
    assert pot_config(Options(method="infinipot+reencode=1")).reencode is True


# ---- the policy ----------------------------------------------------------------------------------------
def test_paper_selection_differs_per_head_and_share_makes_it_one_set():
    cap = rand(1)
    paper = InfiniPotPolicy(alpha=0.0).select(inputs(cap))
    assert paper.shape == (L, H, 8)
    assert not all(torch.equal(paper[l, h], paper[0, 0]) for l in range(L) for h in range(H))
    shared = InfiniPotPolicy(alpha=0.0, share=True).select(inputs(cap))
    assert all(torch.equal(shared[l, h], shared[0, 0]) for l in range(L) for h in range(H))
    # the shared score is the mean over all layers and heads
    assert set(shared[0, 0].tolist()) == set(cap.mean(dim=(0, 1)).topk(8).indices.tolist())


def test_share_from_averages_only_the_deeper_layers():
    cap = rand(6, (4, H, N))
    kept = InfiniPotPolicy(alpha=0.0, share=True, share_from=0.5).select(inputs(cap))
    assert set(kept[0, 0].tolist()) == set(cap[2:].mean(dim=(0, 1)).topk(8).indices.tolist())
    assert (kept == kept[:1, :1]).all()                  # still one set for every layer, early ones included
    cap[2:, :, 7] = 10.0                                  # salient in the deep layers only
    assert 7 in InfiniPotPolicy(alpha=0.0, share=True, share_from=0.5).select(inputs(cap))[0, 0].tolist()


def test_span_keeps_a_contiguous_block_around_a_salient_token():
    cap = torch.zeros(L, H, N)
    cap[..., 40] = 1.0                      # one salient token
    cap[..., 5] = 0.5                       # and a weaker one elsewhere
    single = InfiniPotPolicy(alpha=0.0).select(inputs(cap))
    assert 40 in single[0, 0].tolist() and 5 in single[0, 0].tolist()
    spans = InfiniPotPolicy(alpha=0.0, span=8).select(inputs(cap, budget=8))
    kept = spans[0, 0].tolist()
    assert kept == list(range(kept[0], kept[0] + 8)) and kept[0] <= 40 <= kept[-1]


def test_nuc_share_then_cap_and_recent_window():
    cap, nov = rand(2), rand(3)
    pol = InfiniPotPolicy(alpha=0.5, recent=2)
    kept = pol.select(inputs(cap, nov, budget=8))
    for l in range(L):
        for h in range(H):
            ks = set(kept[l, h].tolist())
            assert {N - 2, N - 1} <= ks                                   # the recent window
            top_nov = nov[l, h, : N - 2].topk(4).indices.tolist()         # round(0.5 * 8) = 4 by novelty
            assert set(top_nov) <= ks
    assert pol.last_nuc.sum(-1).eq(6).all()                               # 4 by NuC + 2 recent, marked


def test_pool_keeps_neighbours_and_decay_ages_novelty():
    cap = torch.zeros(L, H, N)
    cap[..., 20] = 1.0
    kept = InfiniPotPolicy(alpha=0.0, pool=3).select(inputs(cap, budget=3))
    assert kept[0, 0].tolist() == [19, 20, 21]
    nov = rand(4)
    assert torch.allclose(InfiniPotPolicy(nuc_decay=0.5).age(nov), nov * 0.5)
    assert InfiniPotPolicy().age(nov) is nov


# ---- in the engine ---------------------------------------------------------------------------------------
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
    src = read(PotConfig(size=96, keep=48, chunk=32, segment=0, span=8))
    assert (src == src[:1, :1]).all()
    paper = read(PotConfig.from_spec("infinipot-paper", size=96, keep=48, chunk=32))
    assert not (paper == paper[:1, :1]).all()            # the paper selects per (layer, head)
