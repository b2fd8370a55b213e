"""The decode step compiled ahead of time (infinipot_cli/runtime/compiled_step.py): built from the step's own arithmetic for
tiny Llama, Qwen2 (q/k/v biases), Qwen3 (q/k norms) and Gemma 3 (four norms, sliding windows) models, it gives the
eager step's logits and cache rows bit for bit across a cache that grows, and its greedy answers; so does a bf16
model whose attention products go through the verified kernels; Gemma 2 stays eager; a damaged library is not
used; layers of different structures get a library each; and the built-in model's compiled summary, where
`make setup` built its library, is the eager step's token for token. The tests that build libraries are marked
`native` (make test-all runs them); make test runs the built-in model's, on the library `make setup` built."""

import shutil

import pytest
import torch

from infinipot_cli.runtime import compiled_step, decode_step
from infinipot_cli.runtime.generate import AnswerCache, answer_room, generate
from helpers import PROMPT, doc_ids, forward_cache, perturbed_model

needs_compiler = pytest.mark.skipif(shutil.which("c++") is None and shutil.which("g++") is None,
                                    reason="no C++ compiler to build the library")


@needs_compiler
@pytest.mark.native  # an AOTInductor build per architecture
@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "gemma3"])
def test_the_compiled_step_gives_the_eager_steps_logits_and_rows(arch, tmp_path, monkeypatch):
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path))
    model = perturbed_model(arch)
    step = decode_step.for_model(model)
    assert step.compiled is None  # nothing built yet: eager
    paths = compiled_step.build(step)
    assert all(p.is_file() and p.parent == tmp_path / "compiled" for p in paths.values())
    compiled = compiled_step.load(step)
    assert compiled is not None
    ctx = doc_ids(60, seed=3)
    src = forward_cache(model, ctx)
    eager_kv = AnswerCache.from_cache(src, 4)
    comp_kv = AnswerCache.from_cache(src, 4)  # 4 rows of room: the buffers grow on the fifth token
    for tok in (5, 17, 99, 3, 41, 8):
        with torch.no_grad():
            step.compiled = None
            want = model.lm_head(step(tok, eager_kv))[0]
            step.compiled = compiled
            got = model.lm_head(step(tok, comp_kv))[0]
        assert torch.equal(got, want)  # bit for bit
    assert comp_kv.layers[0].capacity > 64  # grown: the library's capacity is a dynamic size
    for a, b in zip(comp_kv.layers, eager_kv.layers):
        assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
    want = generate(model, AnswerCache.from_cache(src, answer_room(len(PROMPT), 20)), PROMPT, 20)
    decode_step.enable(model)  # built again: finds its library
    assert decode_step.for_model(model).compiled is not None
    assert generate(model, AnswerCache.from_cache(src, answer_room(len(PROMPT), 20)), PROMPT, 20) == want


@needs_compiler
@pytest.mark.native
def test_a_bf16_layer_library_with_the_attention_kernels_gives_the_eager_steps_bits(tmp_path, monkeypatch):
    """bf16 with 32-dim heads: the attention products go through exact_ops' kernels where this CPU passed their
    check; odd and even capacities, across the values' block change at 512 rows."""
    import transformers as tf

    from infinipot_cli.runtime import exact_ops
    from tiny_models import _common

    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path))
    torch.manual_seed(0)
    model = tf.AutoModelForCausalLM.from_config(tf.LlamaConfig(**_common(head_dim=32)), dtype=torch.bfloat16).eval()
    step = decode_step.for_model(model)
    compiled_step.build(step)
    compiled = compiled_step.load(step)
    assert compiled is not None
    used = exact_ops.verified_rows(compiled_step.folder(), step.hkv, step.hq // step.hkv, step.d)
    assert used is not None  # checked at build, at these threads
    for n, room in ((509, 4), (600, 5)):  # capacities 513 (grows to 514+) and 605
        src = forward_cache(model, doc_ids(n, seed=n))
        eager_kv, comp_kv = AnswerCache.from_cache(src, room), AnswerCache.from_cache(src, room)
        for tok in (5, 17, 99, 3, 41, 8):
            with torch.no_grad():
                step.compiled = None
                want = step(tok, eager_kv)
                step.compiled = compiled
                got = step(tok, comp_kv)
            assert torch.equal(got, want)
        for a, b in zip(comp_kv.layers, eager_kv.layers):
            assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)


def test_gemma2_and_damaged_libraries_stay_eager(tmp_path, monkeypatch):
    monkeypatch.setenv("INFINIPOT_CACHE", str(tmp_path))
    step = decode_step.for_model(perturbed_model("gemma2"))  # soft-capped attention logits
    assert not compiled_step.supported(step) and compiled_step.load(step) is None
    with pytest.raises(RuntimeError):
        compiled_step.build(step)
    a, b = decode_step.for_model(perturbed_model("llama")), decode_step.for_model(perturbed_model("qwen2"))
    assert compiled_step.key(a) != compiled_step.key(b)
    for path in compiled_step.library_paths(a).values():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"not a library")  # damaged files: the step stays eager
    assert compiled_step.load(a) is None and compiled_step.load(b) is None


def test_layers_of_two_structures_get_a_library_each():
    """A GGUF may quantize some layers' matrices differently (Gemma 3 270M's Q4_K_M): one library per structure."""
    step = decode_step.for_model(perturbed_model("llama"))
    keys = compiled_step.layer_keys(step)
    assert len(set(keys)) == 1 and len(compiled_step.library_paths(step)) == 1
    step.layers[1].down.groups = [(1, False)]  # as if layer 1's down projection were a 4-bit product
    keys = compiled_step.layer_keys(step)
    assert keys[0] != keys[1] and list(compiled_step.library_paths(step)) == keys


def test_the_builtin_models_compiled_summary_is_the_eager_one_token_for_token(builtin):
    model, tok = builtin.model, builtin.tokenizer
    step = decode_step.for_model(model)
    if step.compiled is None:
        pytest.skip("the built-in model's compiled step is not built here (make setup builds it)")
    text = open("sample_docs/lighthouse.txt").read()
    src = forward_cache(model, tok(text)["input_ids"][:1500])
    ask = tok.apply_chat_template([{"role": "user", "content": "Summarize the story in detail."}],
                                  add_generation_prompt=True, tokenize=True)
    ask = ask["input_ids"] if hasattr(ask, "keys") else ask
    compiled = step.compiled
    try:
        step.compiled = None
        want = generate(model, AnswerCache.from_cache(src, answer_room(len(ask), 150)), ask, 150)
    finally:
        step.compiled = compiled
    assert generate(model, AnswerCache.from_cache(src, answer_room(len(ask), 150)), ask, 150) == want  # bf16, all 150
