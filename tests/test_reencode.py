"""`reencode`: a question is answered over a fresh prefill of the tokens the pot holds, not over their KV states
as read (engine.Engine._reencoded)."""

import pytest
import torch
from transformers import DynamicCache

from infinipot_cli.pot.engine import PotConfig, split_method_spec
from infinipot_cli.runtime.loading import with_cache
from helpers import HEADER, PROMPT, doc_ids, run_engine
from tiny_models import ARCHS, make_model

QUESTION = (1, 3)  # the question's tokens inside PROMPT: marks the prompt as a question


def fresh_greedy(model, ids, prompt, n, chunk):
    """Greedy tokens after prefilling `ids` (in chunks, as the engine does) and then `prompt`, with no pot."""
    cache = DynamicCache()
    with torch.no_grad():
        for i in range(0, len(ids), chunk):
            model.model(input_ids=torch.tensor([ids[i:i + chunk]]), **with_cache(model.model, cache), use_cache=True)
        logits = model(input_ids=torch.tensor([prompt]), **with_cache(model, cache), use_cache=True).logits[0, -1]
        out = []
        for _ in range(n):
            nxt = int(logits.argmax())
            out.append(nxt)
            logits = model(input_ids=torch.tensor([[nxt]]), **with_cache(model, cache), use_cache=True).logits[0, -1]
    return " ".join(map(str, out))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_question_is_answered_over_a_fresh_prefill_of_the_pot_tokens(arch):
    model = make_model(arch)
    cfg = PotConfig(size=96, keep=48, chunk=16, final_keep=40, reencode=True)
    eng = run_engine(model, doc_ids(400), cfg)
    eng.set_catalyst(PROMPT, QUESTION)  # as if read with the question: narrowed to final_keep
    assert eng.cycles >= 3
    n = len(eng.pot)
    seen = []  # the pot while the answer is written: narrowed to 40
    answer = eng.answer(PROMPT, "question", max_new_tokens=6, focus=QUESTION,
                        on_text=lambda t: seen or seen.append(eng.pot.tok.clone()))
    tok = seen[0]
    assert tok.shape[-1] == 40 and bool((tok == tok[:1, :1]).all())  # one text in every (layer, head)
    assert tok[0, 0, :len(HEADER)].tolist() == HEADER
    assert answer == fresh_greedy(model, tok[0, 0].tolist(), PROMPT, 6, cfg.chunk)
    # the pot is restored as read: same entries, same KV states; asking again gives the same answer
    keys = [layer.keys.clone() for layer in eng.pot.cache.layers]
    assert len(eng.pot) == n
    assert eng.answer(PROMPT, "question", max_new_tokens=6, focus=QUESTION) == answer
    assert len(eng.pot) == n
    assert all(torch.equal(k, layer.keys) for k, layer in zip(keys, eng.pot.cache.layers))


def test_reencode_differs_from_the_pot_kv_and_is_off_where_it_does_not_apply():
    model = make_model("llama")
    docs = doc_ids(400)
    on = run_engine(model, docs, PotConfig(size=96, keep=48, chunk=16, final_keep=40, recall=0, reencode=True))
    off = run_engine(model, docs, PotConfig(size=96, keep=48, chunk=16, final_keep=40, recall=0, reencode=False))
    # the pot's KV states, carried through the cycles, are not those of its text read afresh (recall off: the
    # question's archived sentences would change the pot itself)
    for e in (on, off):
        e._final_distill(PROMPT, 40, QUESTION)  # the narrowing an answer does, kept here to compare against
    a_on, a_off = (e.answer(PROMPT, "question", max_new_tokens=8, focus=QUESTION) for e in (on, off))
    assert torch.equal(on.pot.tok, off.pot.tok)
    assert a_off == " ".join(map(str, _kv_greedy(off, 8)))
    assert a_on != a_off
    # no question (a summary): the pot's own KV, as with reencode off
    on2 = run_engine(model, docs, PotConfig(size=96, keep=48, chunk=16, final_keep=40, recall=0, reencode=True))
    off2 = run_engine(model, docs, PotConfig(size=96, keep=48, chunk=16, final_keep=40, recall=0, reencode=False))
    assert on2.answer(PROMPT, "summary", max_new_tokens=8) == off2.answer(PROMPT, "summary", max_new_tokens=8)
    # per-head selection (the paper's): the heads hold different tokens, no one text to prefill
    kw = dict(size=96, keep=48, chunk=16, final_keep=40, recall=0, share=False, segment=0, relevance=False)
    on3 = run_engine(model, docs, PotConfig(**kw, reencode=True))
    off3 = run_engine(model, docs, PotConfig(**kw, reencode=False))
    assert not bool((on3.pot.tok == on3.pot.tok[:1, :1]).all())
    assert on3._reencoded() is None
    assert on3.answer(PROMPT, "question", max_new_tokens=8, focus=QUESTION) == off3.answer(PROMPT, "question", max_new_tokens=8, focus=QUESTION)
    # baselines answer from their pot as it is
    s_on = run_engine(model, docs, PotConfig(size=96, keep=48, chunk=16, method="streaming", reencode=True))
    s_off = run_engine(model, docs, PotConfig(size=96, keep=48, chunk=16, method="streaming", reencode=False))
    assert s_on.answer(PROMPT, "question", max_new_tokens=8, focus=QUESTION) == s_off.answer(PROMPT, "question", max_new_tokens=8,
                                                                                 focus=QUESTION)


def _kv_greedy(eng, n):
    """Greedy tokens from the pot's own KV cache plus PROMPT (what reencode=False answers), then cropped back."""
    from infinipot_cli.pot.scoring.nuc import lm_head_logits

    base, out = len(eng.pot), []
    with torch.no_grad():
        h = eng.model.model(input_ids=torch.tensor([PROMPT]), **with_cache(eng.model.model, eng.pot.cache), use_cache=True)
        for _ in range(n):
            nxt = int(lm_head_logits(eng.model, h.last_hidden_state[0, -1:])[0].argmax())
            out.append(nxt)
            h = eng.model.model(input_ids=torch.tensor([[nxt]]), **with_cache(eng.model.model, eng.pot.cache), use_cache=True)
    eng.pot.crop(base)
    return out


def test_reencode_in_specs_and_presets():
    assert PotConfig().reencode is True  # on by default (measured: docs/results/needle.md)
    assert split_method_spec("infinipot+reencode=1")[1] == {"reencode": True}
    assert split_method_spec("infinipot-paper")[1]["reencode"] is False


@pytest.mark.parametrize("arch", ARCHS)
def test_the_pinned_header_is_copied_and_the_cache_is_a_fresh_prefills(arch):
    """The re-encoded cache takes the pinned header's entries from the pot (pin() prefilled them alone and CR-RoPE
    never moves them) and prefills the rest: together, what one fresh prefill of the pot's tokens computes."""
    model = make_model(arch)
    eng = run_engine(model, doc_ids(400), PotConfig(size=96, keep=48, chunk=16, final_keep=40, recall=0))
    eng._final_distill(PROMPT, 40, QUESTION)
    npin, ids = eng.pot.n_pinned, eng.pot.tok[0, 0].tolist()
    cache, lead = eng._reencoded(extra=8)
    assert lead == ids[-len(lead):] and 0 < len(lead) <= 16
    ref = DynamicCache()
    with torch.no_grad():
        model.model(input_ids=torch.tensor([lead]), use_cache=True, **with_cache(model.model, cache))
        model.model(input_ids=torch.tensor([ids]), use_cache=True, **with_cache(model.model, ref))
    for got, want, pot in zip(cache.layers, ref.layers, eng.pot.cache.layers):
        assert got.keys.shape == want.keys.shape == (1, pot.keys.shape[1], len(ids), pot.keys.shape[-1])
        assert torch.equal(got.keys[:, :, :npin], pot.keys[:, :, :npin])
        assert torch.equal(got.values[:, :, :npin], pot.values[:, :, :npin])
        torch.testing.assert_close(got.keys, want.keys, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(got.values, want.values, atol=1e-4, rtol=1e-4)
