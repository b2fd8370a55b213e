"""4-bit decoding weights (infinipot_cli/runtime/q4.py): Q4_1 and Q8_0 grids found exactly and only where they exist, the
int4 path equal to the dense bf16 layer (a tied LM head included), the sidecar built once, and decoding with them
on a tiny model."""

import pytest
import torch

from infinipot_cli.runtime import q4
from infinipot_cli.runtime.compat import with_cache
from tiny_models import make_model

pytestmark = pytest.mark.skipif(not q4.kernel_available(), reason="this torch build has no CPU int4 kernel")


def q4_1(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """A weight as llama.cpp's Q4_1 dequantizes it: per 32 inputs, fp16 scale d and minimum m, w = d * q + m."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(n, k, generator=g) * 0.05
    blocks = w.view(n, k // 32, 32)
    lo, hi = blocks.amin(-1), blocks.amax(-1)
    d = ((hi - lo) / 15).half().float()
    m = lo.half().float()
    q = ((blocks - m[..., None]) / d[..., None]).round().clamp(0, 15)
    return (q * d[..., None] + m[..., None]).view(n, k)


def q8_0(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """A weight as llama.cpp's Q8_0 dequantizes it: per 32 inputs an fp16 scale d = max|w| / 127, w = d * q."""
    g = torch.Generator().manual_seed(seed)
    blocks = (torch.randn(n, k, generator=g) * 0.05).view(n, k // 32, 32)
    d = (blocks.abs().amax(-1) / 127).half().float()
    return ((blocks / d[..., None]).round().clamp(-127, 127) * d[..., None]).view(n, k)


def test_find_grid8_recovers_q8_0_and_its_two_int4_products_sum_to_it():
    w = q8_0(48, 64)
    q, step = q4.find_grid8(w)
    assert q.dtype == torch.int8 and int(q.abs().max()) == 127
    assert torch.allclose((q.float().view(48, 2, 32) * step[..., None]).view(48, 64), w, rtol=0, atol=1e-6)
    assert q4.find_grid8(torch.randn(48, 64)) is None
    total = sum(((nib.float() - 8).view(48, 2, 32) * s[..., None] + z[..., None]).view(48, 64)
                for nib, s, z in q4._int4_parts({"q8": q, "scale8": step}))
    assert torch.allclose(total, w, rtol=0, atol=1e-6)


def test_find_grid_recovers_q4_1_exactly_and_rejects_other_weights():
    w = q4_1(64, 96)
    q, step, lo = q4.find_grid(w)
    assert q.dtype == torch.uint8 and int(q.max()) <= 15
    rebuilt = (q.float().view(64, 3, 32) * step[..., None] + lo[..., None]).view(64, 96)
    assert torch.allclose(rebuilt, w, rtol=0, atol=1e-6)
    assert q4.find_grid(torch.randn(64, 96)) is None          # ordinary weights are no grid
    assert q4.find_grid(w[:, :80]) is None                     # inputs not a multiple of 32
    assert q4.find_grid(w.bfloat16()) is None                  # only the exact fp32 values tell
    w2 = w.clone()
    w2[3, 5] += 0.3 * step[3, 0]                               # one weight off the grid
    assert q4.find_grid(w2) is None
    assert q4.find_grid(torch.zeros(8, 32)) is not None        # a constant block: step 0


def q4_k(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """A weight as llama.cpp's Q4_K dequantizes it: per 32 inputs w = d * q - m with q in 0..15, d and m rounded to
    6-bit multiples of a super-block scale, so a block's extremes need not sit on levels 0 and 15 (here levels 2..13
    for the first blocks, and some levels unused)."""
    g = torch.Generator().manual_seed(seed)
    d = (torch.randint(1, 63, (n, k // 32, 1), generator=g) * 1e-3).float()
    m = (torch.randint(0, 63, (n, k // 32, 1), generator=g) * 2e-3).float()
    q = torch.randint(0, 16, (n, k // 32, 32), generator=g)
    q[:, 0] = torch.randint(2, 14, (n, 32), generator=g)
    q[:, 0, :4] = torch.tensor([2, 5, 9, 13])  # gaps of 3 and 4 levels: the smallest gap is not the step
    return (d * q - m).view(n, k)


def q5_0(n: int, k: int, seed: int = 0) -> torch.Tensor:
    """Q5_0: per 32 inputs an fp16 scale d, w = d * (q - 16) with q in 0..31."""
    g = torch.Generator().manual_seed(seed)
    d = (torch.rand(n, k // 32, 1, generator=g) * 0.01 + 1e-3).half().float()
    q = torch.randint(0, 32, (n, k // 32, 32), generator=g)
    return (d * (q - 16)).view(n, k)


@pytest.mark.parametrize("make,levels,parts", [(q4_k, 16, 1), (q5_0, 32, 2)])
def test_grids_with_levels_anywhere_are_found_and_their_int4_products_sum_to_them(make, levels, parts):
    w = make(32, 96)
    assert q4.find_grid(w, levels) is not None
    if levels > 16:
        assert q4.find_grid(w) is None  # 32 levels are not 16
    q, step, base = q4.find_grid(w, levels)
    assert int(q.max()) <= levels - 1
    rebuilt = (q.float().view(32, 3, 32) * step[..., None] + base[..., None]).view(32, 96)
    assert torch.allclose(rebuilt, w, rtol=0, atol=1e-5)  # fp32 rounding: 2e-5 of a step at most
    grid = {"q": q4._pack_nibbles(q), "scale": step, "min": base} if levels == 16 else {"q5": q, "scale": step,
                                                                                         "min": base}
    got = q4._int4_parts(grid)
    assert len(got) == parts and all(int(nib.min()) >= 0 and int(nib.max()) <= 15 for nib, _, _ in got)
    total = sum(((nib.float() - 8).view(32, 3, 32) * s[..., None] + z[..., None]).view(32, 96) for nib, s, z in got)
    assert torch.allclose(total, w, rtol=0, atol=1e-5)
    assert q4.find_grid(torch.randn(32, 96), levels) is None


def test_nibbles_round_trip():
    q = torch.randint(0, 16, (5, 64), dtype=torch.uint8)
    assert torch.equal(q4._unpack_nibbles(q4._pack_nibbles(q)), q)


def _q4_model(tmp_path, tied: bool = False, mixed: bool = False):
    """A tiny Llama whose projections are Q4_1 grids (`mixed`: q, k, gate and up Q5_0, o Q4_K, as in a Q4_K_M GGUF;
    `tied`: its embedding = LM head a Q8_0 grid), saved as a converted folder, loaded in bf16."""
    from transformers import AutoModelForCausalLM, LlamaForCausalLM

    from tiny_models import make_config

    if tied:
        cfg = make_config("llama")
        cfg.tie_word_embeddings = True
        torch.manual_seed(0)
        model = LlamaForCausalLM(cfg).eval()
    else:
        model = make_model("llama")
    with torch.no_grad():
        for i, (name, p) in enumerate(model.named_parameters()):
            if p.dim() == 2 and "proj" in name:
                kind = q4_1
                if mixed:
                    kind = q4_k if "o_proj" in name else q5_0 if any(
                        k in name for k in ("q_proj", "k_proj", "gate_proj", "up_proj")) else q4_1
                p.copy_(kind(*p.shape, seed=i))
            elif tied and "embed" in name:
                p.copy_(q8_0(*p.shape, seed=i))
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.bfloat16)
    return model, loaded.eval()


def test_attach_switches_the_grid_layers_and_matches_dense(tmp_path):
    _, model = _q4_model(tmp_path)
    dense = {n: m.weight.detach().clone() for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    n = q4.attach(model, tmp_path)
    assert (tmp_path / q4.SIDECAR).is_file()
    switched = [name for name, m in model.named_modules() if isinstance(m, q4.Q4Linear)]
    assert n == len(switched) > 0 and all("proj" in s for s in switched)
    assert "lm_head" not in switched                           # not a grid: left dense
    for name in switched:
        layer = model.get_submodule(name)
        assert torch.equal(layer.weight, dense[name])          # the parameters are the layer's own
        x = torch.randn(1, layer.in_features).bfloat16()
        want = torch.nn.functional.linear(x.float(), layer.weight.float())
        assert torch.allclose(layer(x).float(), want, rtol=2e-2, atol=2e-2)
        big = torch.randn(q4.MAX_ROWS + 1, layer.in_features).bfloat16()
        assert torch.equal(layer(big), torch.nn.functional.linear(big, layer.weight))  # chunks: dense
    assert q4.attach(model, tmp_path) == 0                     # already switched


def test_a_tied_q8_lm_head_decodes_through_two_int4_products(tmp_path):
    _, model = _q4_model(tmp_path, tied=True)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    q4.attach(model, tmp_path)
    head = model.lm_head
    assert isinstance(head, q4.Q4Linear) and len(head.q4_parts) == 2
    x = torch.randn(1, head.in_features).bfloat16()
    want = torch.nn.functional.linear(x.float(), head.weight.float())
    assert torch.allclose(head(x).float(), want, rtol=2e-2, atol=2e-2)
    assert int(head(x).argmax()) == int(want.argmax())


def test_decoding_with_q4_follows_the_dense_model(tmp_path):
    from infinipot_cli.runtime.generate import AnswerCache, generate

    _, model = _q4_model(tmp_path)
    ids = torch.randint(3, 200, (1, 40), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = model(input_ids=ids).logits[0, -1].float()
        q4.attach(model, tmp_path)
        cache = AnswerCache(64)
        model.model(input_ids=ids[:, :-1], **with_cache(model.model, cache), use_cache=True)
        step = model(input_ids=ids[:, -1:], **with_cache(model, cache), use_cache=True).logits[0, -1].float()
    assert (step - ref).abs().max() < 0.05 * ref.abs().max()
    assert len(generate(model, AnswerCache(64), ids[0].tolist(), 5)) == 5


def test_fp32_models_and_foreign_folders_are_left_alone(tmp_path):
    model = make_model("llama")  # fp32: the int4 kernel's fp32 path is slower than dense
    assert q4.attach(model, tmp_path) == 0
    assert not (tmp_path / q4.SIDECAR).exists()
    _, bf = _q4_model(tmp_path / "m")
    for f in (tmp_path / "m").glob("*.safetensors"):
        f.unlink()  # no weights to search: an empty sidecar, nothing switched
    assert q4.attach(bf, tmp_path / "m") == 0
