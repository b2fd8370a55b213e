"""The answer loop (infinipot_cli/runtime/generate.py): same tokens as the naive DynamicCache loop, the pot left as it was,
streamed text equal to the whole decode; the CPU dtype and thread defaults."""

import pytest
import torch
from transformers import DynamicCache

from infinipot_cli.runtime.generate import AnswerCache, Detokenizer, generate
from infinipot_cli.pot.engine import PotConfig
from infinipot_cli.runtime.loading import with_cache
from helpers import PROMPT, IdTok, doc_ids, run_engine
from tiny_models import make_model

ARCHS = ["llama", "qwen2", "gemma2", "gemma3"]  # plain, biased projections, soft-capping, sliding windows


def naive_greedy(model, ctx, prompt, n):
    """The loop engine.answer used to run: DynamicCache (concatenation), full logits, SDPA attention."""
    cache = DynamicCache()
    out = []
    with torch.no_grad():
        if ctx:
            model(input_ids=torch.tensor([ctx]), **with_cache(model, cache), use_cache=True)
        logits = model(input_ids=torch.tensor([prompt]), **with_cache(model, cache), use_cache=True).logits[0, -1]
        for _ in range(n):
            nxt = int(logits.float().argmax())
            out.append(nxt)
            logits = model(input_ids=torch.tensor([[nxt]]), **with_cache(model, cache), use_cache=True).logits[0, -1]
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_generate_matches_the_naive_loop(arch):
    # transformers' own attention (eager where SDPA cannot soft-cap), same weights (same seed)
    ref_model = make_model(arch, attn="eager" if arch == "gemma2" else "sdpa")
    model = make_model(arch)                    # the infinipot wrapper: one-row decode through grouped matmuls
    ctx = doc_ids(150, seed=3)  # longer than gemma's 64-entry sliding window
    want = naive_greedy(ref_model, ctx, PROMPT, 24)
    src = DynamicCache()
    with torch.no_grad():
        model.model(input_ids=torch.tensor([ctx]), **with_cache(model.model, src), use_cache=True)
    cache = AnswerCache.from_cache(src, 8)  # too small on purpose: the layers grow
    got = generate(model, cache, PROMPT, 24, stop_ids=set())
    assert got == want
    assert cache.get_seq_length() == len(ctx) + len(PROMPT) + 23  # the last token is never forwarded
    assert src.get_seq_length() == len(ctx)  # the copied cache is untouched
    # from an empty cache (the re-encoding path prefills into it)
    empty = AnswerCache(len(ctx) + 40)
    with torch.no_grad():
        model.model(input_ids=torch.tensor([ctx]), **with_cache(model.model, empty), use_cache=True)
    assert generate(model, empty, PROMPT, 24) == want


def test_stop_ids_and_should_stop():
    model = make_model("llama")
    full = generate(model, AnswerCache(64), PROMPT, 12)
    stop = full[5]
    first = full.index(stop)
    assert generate(model, AnswerCache(64), PROMPT, 12, stop_ids={stop}) == full[:first]
    seen = []

    def should_stop(ids, text):
        seen.append((list(ids), text))
        return len(ids) == 3

    pieces = []
    got = generate(model, AnswerCache(64), PROMPT, 12, on_text=pieces.append, should_stop=should_stop,
                   tokenizer=IdTok())
    assert got == full[:3]
    assert [s[0] for s in seen] == [full[:1], full[:2], full[:3]]
    assert seen[-1][1] == IdTok().decode(full[:3]) == "".join(pieces)


def test_answer_leaves_the_pot_as_it_was_and_answers_again():
    model = make_model("qwen2")
    eng = run_engine(model, doc_ids(400), PotConfig(size=96, keep=48, chunk=16, reencode=False))
    keys = [layer.keys.clone() for layer in eng.pot.cache.layers]
    ptrs = [layer.keys.data_ptr() for layer in eng.pot.cache.layers]
    n = len(eng.pot)
    streamed = []
    a1 = eng.answer(PROMPT, "summary", max_new_tokens=6, on_text=streamed.append)
    assert a1 == "".join(streamed).strip()
    assert len(eng.pot) == n and eng.pot.cache_len() == n
    assert [layer.keys.data_ptr() for layer in eng.pot.cache.layers] == ptrs
    assert all(torch.equal(k, layer.keys) for k, layer in zip(keys, eng.pot.cache.layers))
    assert eng.answer(PROMPT, "summary", max_new_tokens=6) == a1
    assert eng.pot.peak_entries <= 96


class ByteTok:
    """A byte-level tokenizer: one token per UTF-8 byte (multi-byte characters span several tokens)."""

    def encode(self, s):
        return list(s.encode("utf-8"))

    def decode(self, ids, skip_special_tokens=True):
        return bytes(ids).decode("utf-8", errors="replace")


@pytest.mark.parametrize("text", ["plain ascii text", "naïve café — 東京 😀 done", "😀😀", "x€"])
def test_detokenizer_streams_the_whole_decode_and_waits_for_whole_characters(text):
    tok = ByteTok()
    d = Detokenizer(tok)
    pieces = [d.push(i) for i in tok.encode(text)]
    pieces.append(d.flush())
    assert "".join(pieces) == text
    assert all("\ufffd" not in p for p in pieces)


def test_detokenizer_with_the_builtin_tokenizer():
    from transformers import AutoTokenizer

    from infinipot_cli.runtime.loading import builtin_model_path

    try:
        tok = AutoTokenizer.from_pretrained(str(builtin_model_path()))
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"built-in model not available: {e}")
    text = " The keeper's cat, Ésmé, ate 3 🐟 at 東京 station.\nNext line:  two  spaces."
    ids = tok.encode(text, add_special_tokens=False)
    d = Detokenizer(tok)
    out = "".join(d.push(i) for i in ids) + d.flush()
    assert out == tok.decode(ids, skip_special_tokens=True)


def test_dtype_auto_follows_native_bf16(monkeypatch):
    from infinipot_cli.runtime.loading import pick_dtype

    cpu = torch.device("cpu")
    monkeypatch.setenv("INFINIPOT_CPU_BF16", "1")
    assert pick_dtype(None, cpu) == torch.bfloat16 and pick_dtype("auto", cpu) == torch.bfloat16
    monkeypatch.setenv("INFINIPOT_CPU_BF16", "0")  # emulated bf16 would be slower than fp32
    assert pick_dtype(None, cpu) == torch.float32
    assert pick_dtype("bfloat16", cpu) == torch.bfloat16 and pick_dtype("float32", cpu) == torch.float32
    assert pick_dtype(None, torch.device("cuda")) == torch.bfloat16


def test_emulated_bf16_is_warned_about_only_when_asked_for(monkeypatch):
    from infinipot_cli.runtime.loading import dtype_warning

    cpu = torch.device("cpu")
    monkeypatch.setenv("INFINIPOT_CPU_BF16", "0")
    assert "emulated" in dtype_warning(cpu, torch.bfloat16)
    assert dtype_warning(cpu, torch.float32) is None and dtype_warning(torch.device("cuda"), torch.bfloat16) is None
    monkeypatch.setenv("INFINIPOT_CPU_BF16", "1")
    assert dtype_warning(cpu, torch.bfloat16) is None


def test_threads_configure(monkeypatch):
    from infinipot_cli.runtime.threads import configure

    before = torch.get_num_threads()
    try:
        monkeypatch.setenv("INFINIPOT_THREADS", "1")
        assert configure() == 1
        assert configure(2) == 2  # an explicit count wins over the environment
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("arch", ["llama", "gemma3"])  # gemma3: a sliding-window mask on the decoded row
def test_one_row_attention_in_bf16_follows_sdpa(arch):
    ref_model = make_model(arch, attn="sdpa").to(torch.bfloat16)
    model = make_model(arch).to(torch.bfloat16)  # same seed: same weights; the wrapper's one-row CPU path
    ctx = doc_ids(150, seed=5)
    logits = []
    for m in (ref_model, model):
        cache = AnswerCache(200)
        with torch.no_grad():
            m.model(input_ids=torch.tensor([ctx]), **with_cache(m.model, cache), use_cache=True)
            logits.append(m(input_ids=torch.tensor([[7]]), **with_cache(m, cache), use_cache=True).logits[0, -1].float())
    assert (logits[0] - logits[1]).abs().max() < 0.02 * logits[0].abs().max() + 0.02
