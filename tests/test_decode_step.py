"""One decoding step without transformers' module stack (infinipot_cli/runtime/decode_step.py): the model's logits and cache
rows for every tiny architecture (Llama, Llama 3 RoPE, Qwen2, Qwen3, Mistral, Phi-3, Gemma 2, Gemma 3), the same
greedy answers as the model's forward (across a cache that grows and past sliding windows), an unsupported
architecture left to the forward, and the 4-bit layers' joint products."""

import pytest
import torch
from transformers import DynamicCache

from infinipot_cli.runtime import decode_step, q4
from infinipot_cli.runtime.generate import AnswerCache, answer_room, generate
from infinipot_cli.runtime.loading import with_cache
from helpers import PROMPT, doc_ids, forward_cache, perturbed_model
from tiny_models import make_config

FUSED = ["llama", "llama3", "qwen2", "qwen3", "mistral", "phi3", "gemma2", "gemma3"]  # every tiny architecture


@pytest.mark.parametrize("arch", FUSED)
def test_a_step_gives_the_models_logits_and_cache_rows(arch):
    model = perturbed_model(arch)
    step = decode_step.for_model(model)
    assert step is not None
    ctx = doc_ids(60, seed=1)
    ref = forward_cache(model, ctx)
    kv = AnswerCache.from_cache(forward_cache(model, ctx), 10)
    for tok in (5, 17, 99):
        with torch.no_grad():
            want = model(input_ids=torch.tensor([[tok]]), **with_cache(model, ref), use_cache=True).logits[0, -1]
            got = model.lm_head(step(tok, kv))[0]
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    for a, b in zip(kv.layers, ref.layers):
        torch.testing.assert_close(a.keys, b.keys, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(a.values, b.values, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("arch", FUSED)
def test_greedy_answers_match_the_models_forward_across_growth(arch):
    model = perturbed_model(arch)
    ctx = doc_ids(80, seed=2)
    src = forward_cache(model, ctx)
    n = 200  # more than decode.GROW: the cache grows once on the way
    decode_step.enable(model, False)  # the model's own forward for every token
    want = generate(model, AnswerCache.from_cache(src, answer_room(len(PROMPT), n)), PROMPT, n)
    decode_step.enable(model)  # built again: the step
    kv = AnswerCache.from_cache(src, answer_room(len(PROMPT), n))
    assert generate(model, kv, PROMPT, n) == want
    assert kv.layers[0].capacity > len(ctx) + answer_room(len(PROMPT), n)  # it grew
    assert src.get_seq_length() == len(ctx)


def test_past_a_sliding_window_the_step_masks_as_the_model_does():
    cfg = make_config("mistral")
    cfg.sliding_window = 100
    from transformers import AutoModelForCausalLM

    from infinipot_cli.runtime.attention import register_attention

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation=register_attention("sdpa")).eval()
    ctx = doc_ids(80, seed=3)  # the window is crossed while answering
    src = forward_cache(model, ctx)
    step = decode_step.for_model(model)
    assert [L.window for L in step.layers] == [100, 100]
    kv = AnswerCache.from_cache(src, 64)
    decode_step.enable(model, False)
    want = generate(model, AnswerCache.from_cache(src, 64), PROMPT, 40)
    decode_step.enable(model)
    assert generate(model, kv, PROMPT, 40) == want
    assert kv.get_seq_length() > 100  # 80 + prompt + 39
    assert not step.usable(DynamicCache())  # only the preallocated answer cache
    gemma = decode_step.for_model(perturbed_model("gemma3"))  # sliding layers beside a global one, each with its RoPE
    assert [(L.window, L.rope_type) for L in gemma.layers] == [
        (64, "sliding_attention"), (64, "sliding_attention"), (None, "full_attention")]


def test_other_architectures_decode_through_the_forward():
    import transformers as tf

    from tiny_models import _common

    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(tf.GraniteConfig(**_common())).eval()  # Llama-like, with multipliers
    assert decode_step.for_model(model) is None
    assert len(generate(model, AnswerCache(64), PROMPT, 6, stop_ids=set())) == 6


@pytest.mark.skipif(not q4.kernel_available(), reason="this torch build has no CPU int4 kernel")
def test_four_bit_layers_run_as_joint_products(tmp_path):
    from test_q4 import _q4_model

    _, model = _q4_model(tmp_path)
    q4.attach(model, tmp_path)
    ids = doc_ids(50, seed=4)
    ref = forward_cache(model, ids)
    kv = AnswerCache.from_cache(forward_cache(model, ids), 8)
    step = decode_step.for_model(model)
    layer = step.layers[0]
    mlp, att = model.model.layers[0].mlp, model.model.layers[0].self_attn
    assert layer.gate_up.groups == [(1, False)]  # gate and up: one product (128 + 128 rows)
    assert layer.qkv.groups == [(1, False)] * 3  # k has 32 rows: the 64-row blocks would not line up: three products
    assert mlp.up_proj.q4_parts[0][0].data_ptr() != mlp.gate_proj.q4_parts[0][0].data_ptr()  # views of the joint pack
    x = torch.randn(1, mlp.gate_proj.in_features).bfloat16()
    with torch.no_grad():
        assert torch.equal(layer.gate_up(x), torch.cat([mlp.gate_proj(x), mlp.up_proj(x)], -1))
        dense = torch.nn.functional.linear(x.float(), mlp.gate_proj.weight.float())
        assert torch.allclose(mlp.gate_proj(x).float(), dense, rtol=2e-2, atol=2e-2)  # the layer's view still works
        assert torch.equal(layer.qkv(x), torch.cat([att.q_proj(x), att.k_proj(x), att.v_proj(x)], -1))
        want = model(input_ids=torch.tensor([[7]]), **with_cache(model, ref), use_cache=True).logits[0, -1].float()
        got = model.lm_head(step(7, kv))[0].float()
    assert (got - want).abs().max() < 0.02 * want.abs().max()


def test_the_builtin_model_writes_the_same_answer_either_way(builtin):
    model, tok = builtin.model, builtin.tokenizer
    assert decode_step.for_model(model) is not None  # a Llama: the step is used
    text = ("The lighthouse on Kestrel Rock was kept by Ada Merrow for thirty years. Her cat was called Biscuit. "
            "Every spring the survey counted the puffins on the rock; the last count was 412. ") * 8
    src = forward_cache(model, tok(text)["input_ids"])
    ask = tok.apply_chat_template([{"role": "user", "content": "What was the cat called?"}],
                                  add_generation_prompt=True, tokenize=True)
    ask = ask["input_ids"] if isinstance(ask, dict) or hasattr(ask, "keys") else ask
    try:
        decode_step.enable(model, False)
        want = generate(model, AnswerCache.from_cache(src, answer_room(len(ask), 40)), ask, 40)
    finally:
        decode_step.enable(model)
    assert generate(model, AnswerCache.from_cache(src, answer_room(len(ask), 40)), ask, 40) == want
    # the same 40 tokens either way, and an answer rather than a loop: the words in this dtype vary by CPU
    assert len(want) == 40 and len(set(want)) >= 8, tok.decode(want)


@pytest.mark.skipif(not q4.kernel_available(), reason="this torch build has no CPU int4 kernel")
def test_five_bit_layers_share_their_two_products(tmp_path):
    from test_q4 import _q4_model

    _, model = _q4_model(tmp_path, mixed=True)  # q, k, gate, up Q5_0; o Q4_K; v, down Q4_1
    q4.attach(model, tmp_path)
    mlp, att = model.model.layers[0].mlp, model.model.layers[0].self_attn
    assert [len(m.q4_parts) for m in (att.q_proj, att.k_proj, att.v_proj, att.o_proj, mlp.gate_proj)] == [2, 2, 1, 1, 2]
    ids = doc_ids(50, seed=5)
    ref = forward_cache(model, ids)
    kv = AnswerCache.from_cache(forward_cache(model, ids), 8)
    layer = decode_step.for_model(model).layers[0]
    assert layer.gate_up.groups == [(2, False)]  # gate and up: two joint products, one per 4-bit part
    assert layer.qkv.groups == [(2, False), (2, False), (1, False)]  # v holds one product, q and k two: each its own
    x = torch.randn(1, mlp.gate_proj.in_features).bfloat16()
    with torch.no_grad():
        assert torch.equal(layer.gate_up(x), torch.cat([mlp.gate_proj(x), mlp.up_proj(x)], -1))
        want = model(input_ids=torch.tensor([[7]]), **with_cache(model, ref), use_cache=True).logits[0, -1].float()
        got = model.lm_head(decode_step.for_model(model)(7, kv))[0].float()
    assert (got - want).abs().max() < 0.02 * want.abs().max()


@pytest.mark.parametrize("arch", FUSED)
def test_rope_tables_by_block_are_the_tables_of_each_position(arch):
    step = decode_step.for_model(perturbed_model(arch))
    x = step.embed(torch.tensor([1]))
    assert step._rope_blocks
    for pos in (0, 1, 63, 64, 65, 1000, 4095, 130):
        got = step.rope_tables(x, pos)
        want = step._rope_at(x, torch.tensor([[pos]]))
        assert len(got) == len(want) and all(torch.equal(a, b) for a, b in zip(got, want))
