"""Engine invariants (DESIGN.md) on tiny random-weight models of every supported RoPE architecture."""

import pytest
import torch

from infinipot_cli.pot.engine import Engine, PotConfig, split_method_spec
from infinipot_cli.pot.scoring import capture as cap_scores
from infinipot_cli.pot.scoring.nuc import lm_head_logits
from infinipot_cli.pot.config import METHODS, UNBOUNDED
from infinipot_cli.runtime.loading import with_cache
from helpers import CATALYST, HEADER, PROMPT, IdTok, doc_ids, run_engine
from tiny_models import ARCHS, make_model


@pytest.fixture(scope="module", params=ARCHS)
def arch_model(request):
    return request.param, make_model(request.param)


# ---- the cap holds at any length, for every architecture and every policy -------------------------

def _cap_checker(size):
    seen = []

    def on_event(ev):
        assert ev.entries <= size
        seen.append(ev)

    return on_event, seen


def test_cap_holds_every_arch(arch_model):
    arch, model = arch_model
    cfg = PotConfig(size=64, keep=32, chunk=16)
    on_event, seen = _cap_checker(64)
    eng = run_engine(model, doc_ids(700), cfg, events=on_event)
    assert eng.cycles >= 10
    assert eng.pot.peak_entries <= 64
    assert {layer.keys.shape[2] for layer in eng.pot.cache.layers} == {len(eng.pot)}
    # pinned header never evicted, kept entries in document order
    assert torch.equal(eng.pot.src[..., :len(HEADER)], (-1 - torch.arange(len(HEADER))).expand(eng.pot.src.shape[0], eng.pot.src.shape[1], -1))
    body = eng.pot.src[..., len(HEADER):]
    assert bool((body[..., 1:] > body[..., :-1]).all())
    eng.answer(PROMPT, "summary", max_new_tokens=4)
    assert eng.pot.peak_entries <= 64


@pytest.mark.parametrize("method", [m for m in METHODS if m not in UNBOUNDED])
def test_every_policy_respects_cap(method):
    model = make_model("llama")
    cfg = PotConfig(size=80, keep=40, chunk=24, method=method)
    on_event, seen = _cap_checker(80)
    eng = run_engine(model, doc_ids(500), cfg, events=on_event)
    assert eng.cycles >= 5
    ans_budget = 6
    eng.answer(PROMPT, "summary", max_new_tokens=ans_budget)
    assert eng.pot.peak_entries <= 80
    assert any(ev.kind == "distill" for ev in seen)


def test_unbounded_references_read_everything():
    model = make_model("llama")
    ids = doc_ids(300)
    full = run_engine(model, ids, PotConfig(size=64, keep=32, method="full"))
    assert len(full.pot) == len(HEADER) + 300 and full.cycles == 0
    seen = []
    snap = run_engine(model, ids, PotConfig(size=64, keep=32, method="snapkv"), events=seen.append)
    snap.answer(PROMPT, "summary", max_new_tokens=2)
    # SnapKV compresses once, to C entries, for the answer (not a reading cycle); the pot is kept as read
    assert [e.entries for e in seen if e.kind == "distill"] == [32] and snap.cycles == 0
    assert len(snap.pot) == len(HEADER) + 300


def test_streaming_token_by_token():
    model = make_model("llama")
    eng = run_engine(model, doc_ids(120), PotConfig(size=40, keep=39, chunk=1, method="streaming"), pieces=(5,))
    assert eng.pot.peak_entries <= 40 and eng.cycles > 50


# ---- CR-RoPE: re-rotation is exact ------------------------------------------------------------------

def test_rerotation_matches_fresh_keys(arch_model):
    """Layer-0 keys depend only on (token, position): after distillations, every head's kept layer-0 keys
    must equal the keys a fresh forward computes for those tokens at positions 0..K-1."""
    arch, model = arch_model
    eng = run_engine(model, doc_ids(300, seed=3), PotConfig(size=64, keep=32, chunk=16))
    assert eng.cycles > 0
    keys = eng.pot.cache.layers[0].keys[0]  # (H, S, D)
    for h in range(keys.shape[0]):
        toks = eng.pot.tok[0, h]
        fresh = Engine(model, None, PotConfig(size=None, keep=1, method="full"))
        fresh.pin(toks.tolist())
        ref = fresh.pot.cache.layers[0].keys[0, h]
        torch.testing.assert_close(keys[h], ref, atol=2e-5, rtol=1e-4)


def test_rerotation_unrotates_to_same_prerope_key(arch_model):
    """Un-rotating a kept key at its new position gives the pre-RoPE key that un-rotating the original at its
    old position gives (the convention itself is checked against the model in the test above)."""
    from infinipot_cli.pot.rope import apply_rotation

    arch, model = arch_model
    rr = Engine(model, None, PotConfig(size=64, keep=32)).pot.rerotator
    H, K, D = 2, 10, 16
    pre = torch.randn(1, H, K, D)
    old = torch.randint(0, 60, (H, K))
    new = torch.arange(K).view(1, K).expand(H, K)
    for layer in range(rr.num_layers):
        cos, sin = rr.cos_sin(layer, old, pre)
        at_old = apply_rotation(pre[0], cos, sin)[None]
        moved = rr.rerotate(layer, at_old, old, new)
        cos_n, sin_n = rr.cos_sin(layer, new, pre)
        back = apply_rotation(moved[0], cos_n, -sin_n)  # inverse rotation at the new position
        torch.testing.assert_close(back, pre[0], atol=1e-5, rtol=1e-5)


def test_shared_keep_equals_gathering_and_rerotating_each_head(arch_model):
    """Entries every (layer, head) keeps alike are taken with one index and one rotation per layer type: the same
    keys and values as gathering and re-rotating each layer on its own."""
    arch, model = arch_model
    eng = run_engine(model, doc_ids(40, seed=3), PotConfig(size=128, keep=64, chunk=16))
    pot = eng.pot
    S = len(pot)
    row = torch.tensor(sorted(torch.randperm(S, generator=torch.Generator().manual_seed(2))[:20].tolist()))
    idx = row.view(1, 1, -1).expand(pot.num_layers, pot.num_kv_heads, -1)
    new = torch.arange(20).view(1, -1).expand(pot.num_kv_heads, -1)
    want = [(pot.rerotator.rerotate(li, layer.keys[:, :, row], idx[li], new), layer.values[:, :, row])
            for li, layer in enumerate(pot.cache.layers)]
    pot.keep(idx)
    for layer, (k, v) in zip(pot.cache.layers, want):
        assert torch.equal(layer.keys, k) and torch.equal(layer.values, v)


def test_only_the_layers_shared_scores_read_are_captured(arch_model, monkeypatch):
    """With shared scores from the deeper half (the default), the shallower layers' CaP rows are not computed,
    and the pot keeps exactly what it keeps when every layer is captured."""
    arch, model = arch_model
    cfg = PotConfig(size=64, keep=32, chunk=16, segment=0)
    ids = doc_ids(200, seed=4)
    L = model.config.num_hidden_layers
    made = []

    class Seen(cap_scores.Capture):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            made.append(self)

    monkeypatch.setattr(cap_scores, "Capture", Seen)
    fast = run_engine(model, ids, cfg)
    first = fast.policy.cap_from(L)
    assert 0 < first < L and fast.cycles > 0
    catalysts = [c for c in made if c.rows]
    assert catalysts and all(sorted(c.scores) == list(range(first, L)) for c in catalysts)
    full = Engine(model, IdTok(), cfg, catalyst_ids=CATALYST)
    monkeypatch.setattr(full.policy, "cap_from", lambda n: 0)
    full.pin(HEADER)
    full.feed(ids)
    full.finish()
    assert full.cycles == fast.cycles and torch.equal(full.pot.src, fast.pot.src)


# ---- CaP scores from the wrapper equal eager attention weights ------------------------------------

def test_cap_scores_equal_eager_attention(arch_model):
    arch, model = arch_model
    eager = make_model(arch, attn="eager")
    eager.load_state_dict(model.state_dict())
    ids = doc_ids(40, seed=5)
    x = torch.tensor([ids + CATALYST])
    P = len(CATALYST)
    with torch.no_grad():
        with cap_scores.capture(rows=P, focus=(2, 4)) as capt:
            model(x)
        att = eager(x, output_attentions=True).attentions
    cfg = model.config
    H, Hq = cfg.num_key_value_heads, cfg.num_attention_heads
    for layer, a in enumerate(att):
        rows = a[0, :, -P:, :]  # (Hq, P, S)
        ref = rows.sum(1).view(H, Hq // H, -1).sum(1)  # (H_kv, S)
        torch.testing.assert_close(capt.scores[layer], ref.float(), atol=1e-5, rtol=1e-4)
        # question relevance: the mean of the focus rows minus the mean of the template rows before them
        rel = (rows[:, 2:4].mean(1) - rows[:, :2].mean(1)).view(H, Hq // H, -1).sum(1)
        torch.testing.assert_close(capt.relevance[layer], rel.float(), atol=1e-5, rtol=1e-4)


def test_cap_scores_over_a_cache_equal_eager(arch_model):
    """The same with a pot already holding entries (the mask path used while reading)."""
    arch, model = arch_model
    eager = make_model(arch, attn="eager")
    eager.load_state_dict(model.state_dict())
    from transformers import DynamicCache

    first, second = doc_ids(30, seed=6), doc_ids(20, seed=7) + CATALYST
    P = len(CATALYST)
    with torch.no_grad():
        c1, c2 = DynamicCache(), DynamicCache()
        model(torch.tensor([first]), **with_cache(model, c1))
        eager(torch.tensor([first]), **with_cache(eager, c2))
        with cap_scores.capture(rows=P) as capt:
            model(torch.tensor([second]), **with_cache(model, c1))
        att = eager(torch.tensor([second]), **with_cache(eager, c2), output_attentions=True).attentions
    H, Hq = model.config.num_key_value_heads, model.config.num_attention_heads
    for layer, a in enumerate(att):
        ref = a[0, :, -P:, :].sum(1).view(H, Hq // H, -1).sum(1)
        torch.testing.assert_close(capt.scores[layer], ref.float(), atol=1e-5, rtol=1e-4)


def test_a_catalyst_forwarded_alone_attends_with_its_captured_probabilities(arch_model):
    """The final distillation forwards the question alone with every row captured: the wrapper attends with the
    captured probabilities instead of a second attention; the outputs stay the eager model's."""
    arch, model = arch_model
    eager = make_model(arch, attn="eager")
    eager.load_state_dict(model.state_dict())
    from transformers import DynamicCache

    first = doc_ids(90, seed=8)  # past gemma's 64-entry sliding window
    with torch.no_grad():
        c1, c2 = DynamicCache(), DynamicCache()
        model(torch.tensor([first]), **with_cache(model, c1))
        eager(torch.tensor([first]), **with_cache(eager, c2))
        with cap_scores.capture(rows=len(CATALYST)) as capt:
            got = model(torch.tensor([CATALYST]), **with_cache(model, c1)).logits
        want = eager(torch.tensor([CATALYST]), **with_cache(eager, c2)).logits
    assert len(capt.scores) == model.config.num_hidden_layers
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


# ---- keeping everything changes nothing -----------------------------------------------------------

def test_chunked_reading_without_eviction_matches_one_forward(arch_model):
    arch, model = arch_model
    ids = doc_ids(150, seed=8)
    eng = run_engine(model, ids, PotConfig(size=1024, keep=512, chunk=16))
    assert eng.cycles == 0
    with torch.no_grad():
        out = model(torch.tensor([HEADER + ids + PROMPT]))
        x = torch.tensor([PROMPT])
        h = model.model(input_ids=x, **with_cache(model.model, eng.pot.cache)).last_hidden_state[0, -1:]
        got = lm_head_logits(model, h)
    torch.testing.assert_close(got[0], out.logits[0, -1].float(), atol=1e-4, rtol=1e-4)


def test_nuc_equals_cross_entropy_of_full_forward():
    model = make_model("llama")
    ids = doc_ids(120, seed=9)
    eng = run_engine(model, ids, PotConfig(size=1024, keep=512, chunk=16))
    with torch.no_grad():
        logits = model(torch.tensor([HEADER + ids])).logits[0].float()
    n = len(HEADER)
    ce = torch.nn.functional.cross_entropy(logits[n - 1:-1], torch.tensor(ids), reduction="none")
    torch.testing.assert_close(eng.pot.nov[0, 0, n:], ce, atol=1e-4, rtol=1e-4)


def test_answer_leaves_pot_unchanged_and_is_repeatable():
    model = make_model("qwen2")
    eng = run_engine(model, doc_ids(400), PotConfig(size=96, keep=48, chunk=16))
    before = [l.keys.clone() for l in eng.pot.cache.layers]
    n = len(eng.pot)
    a1 = eng.answer(PROMPT, "summary", max_new_tokens=6)
    a2 = eng.answer(PROMPT, "summary", max_new_tokens=6)
    assert a1 == a2 and a1
    assert len(eng.pot) == n
    assert all(torch.equal(b, l.keys) for b, l in zip(before, eng.pot.cache.layers))


def test_reading_and_answering_pass_the_cache_by_the_name_the_model_declares(arch_model):
    """transformers 5.24 renamed the forward's `past_key_values` to `cache`: the old name warns on every call."""
    import warnings

    _, model = arch_model
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        eng = run_engine(model, doc_ids(200), PotConfig(size=96, keep=48, chunk=16))
        assert eng.answer(PROMPT, "question", max_new_tokens=3)


def test_final_keep_narrows_for_one_question_and_the_pot_is_restored_after():
    model = make_model("llama")
    seen = []
    eng = run_engine(model, doc_ids(400), PotConfig(size=96, keep=48, chunk=16, final_keep=24), events=seen.append)
    n, cycles = len(eng.pot), eng.cycles
    src, keys = eng.pot.src.clone(), [l.keys.clone() for l in eng.pot.cache.layers]
    assert n > 24
    eng.answer(PROMPT, "summary", max_new_tokens=6)  # no question (a summary): the pot is not narrowed
    assert len(eng.pot) == n and eng.cycles == cycles
    seen.clear()
    eng.answer(PROMPT, "question", max_new_tokens=6, focus=(1, 3))  # a question the pot was not read with: C
    assert [e.entries for e in seen if e.kind == "distill"] == [48] and len(eng.pot) == n
    eng.set_catalyst(PROMPT, (1, 3))  # as if read with this question (the catalyst's question tokens)
    seen.clear()
    a1 = eng.answer(PROMPT, "question", max_new_tokens=6, focus=(1, 3))
    narrowed = [e for e in seen if e.kind == "distill"]
    assert len(narrowed) == 1 and narrowed[0].entries == 24 and eng.cycles == cycles  # undone: not a cycle
    # the answer's distillation is undone: the next question starts from the pot as read
    assert len(eng.pot) == n and torch.equal(eng.pot.src, src)
    assert all(torch.equal(k, l.keys) for k, l in zip(keys, eng.pot.cache.layers))
    assert eng.answer(PROMPT, "question", max_new_tokens=6, focus=(1, 3)) == a1
    assert split_method_spec("infinipot+final_keep=512")[1] == {"final_keep": 512}
    # a final_keep beyond what the pot holds changes nothing: as final_keep=0 (the paper)
    big = run_engine(model, doc_ids(400), PotConfig(size=96, keep=48, chunk=16, final_keep=500))
    off = run_engine(model, doc_ids(400), PotConfig(size=96, keep=48, chunk=16, final_keep=0))
    assert big.answer(PROMPT, "question", max_new_tokens=6, focus=(1, 3)) == off.answer(
        PROMPT, "question", max_new_tokens=6, focus=(1, 3))
    assert len(big.pot) == len(off.pot) and big.cycles == off.cycles
    # baselines that do not score with the prompt answer from the pot as it is
    base = run_engine(model, doc_ids(400), PotConfig(size=96, keep=48, chunk=16, method="streaming", final_keep=24))
    n, cycles = len(base.pot), base.cycles
    base.answer(PROMPT, "question", max_new_tokens=6, focus=(1, 3))
    assert len(base.pot) == n > 24 and base.cycles == cycles


def test_final_keep_is_validated():
    from infinipot_cli.errors import UsageError

    model = make_model("llama")
    with pytest.raises(UsageError):
        Engine(model, None, PotConfig(size=64, keep=32, final_keep=-1), catalyst_ids=CATALYST)
    eng = run_engine(model, doc_ids(200), PotConfig(size=96, keep=48, chunk=16, final_keep=len(HEADER)))
    eng.set_catalyst(PROMPT, (1, 3))  # read with this question: narrowed to final_keep
    with pytest.raises(UsageError, match="final-keep"):
        eng.answer(PROMPT, "question", max_new_tokens=6, focus=(1, 3))


def test_sizes_are_validated():
    from infinipot_cli.errors import UsageError

    model = make_model("llama")
    with pytest.raises(UsageError):
        Engine(model, None, PotConfig(size=64, keep=64), catalyst_ids=CATALYST)
    with pytest.raises(UsageError):
        Engine(model, None, PotConfig(size=64, keep=60), catalyst_ids=CATALYST)
