"""A chunk's CPU attention split at the cache boundary (infinipot_cli/runtime/attention.py): the same output as
masked attention, used only for a long chunk under the plain causal mask over a cache, and a model's reads
unchanged by it."""

import pytest
import torch
import torch.nn.functional as F
from transformers import DynamicCache

from infinipot_cli.runtime.attention import split_causal
from infinipot_cli.runtime.compat import with_cache
from tiny_models import ARCHS, make_model

T, P, HQ, HKV, D = 512, 80, 6, 2, 16


def _qkv(seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, HQ, T, D, generator=g)
    k = torch.randn(1, HKV, P + T, D, generator=g)
    v = torch.randn(1, HKV, P + T, D, generator=g)
    return q, k, v


def _causal(t=T, p=P):
    return torch.ones(t, p + t, dtype=torch.bool).tril(p)[None, None]


def test_the_split_equals_masked_attention():
    q, k, v = _qkv()
    mask = _causal()
    got = split_causal(q, k, v, mask, 0.25)
    assert got is not None and got.shape == (1, T, HQ, D)
    want = F.scaled_dot_product_attention(q, k.repeat_interleave(3, 1), v.repeat_interleave(3, 1), attn_mask=mask,
                                          scale=0.25).transpose(1, 2)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    got16 = split_causal(q.bfloat16(), k.bfloat16(), v.bfloat16(), mask, 0.25)
    assert got16.dtype == torch.bfloat16 and (got16.float() - want).abs().max() < 0.05


def test_other_masks_and_shapes_are_left_to_sdpa():
    q, k, v = _qkv()
    window = _causal() & ~torch.ones(T, P + T, dtype=torch.bool).tril(P - 64)[None, None]  # a sliding window
    padded = _causal().clone()
    padded[..., :3] = False  # left padding
    assert split_causal(q, k, v, window, 0.25) is None
    assert split_causal(q, k, v, padded, 0.25) is None
    assert split_causal(q, k, v, None, 0.25) is None  # no mask: not a chunk over a cache as the model builds it
    assert split_causal(q[:, :, -1:], k, v, _causal(1, P + T - 1), 0.25) is None  # one row: decoding
    assert split_causal(q[:, :, -40:], k[:, :, -120:], v[:, :, -120:], _causal(40, 80), 0.25) is None  # a prompt
    short = _qkv()[1][:, :, P - 40:]  # a cache of 40 entries: not worth two kernels
    assert split_causal(q, short, short, _causal(T, 40), 0.25) is None


@pytest.mark.parametrize("arch", ARCHS)
def test_a_chunk_over_a_cache_reads_as_with_eager_attention(arch):
    ids = torch.randint(3, 200, (1, 640), generator=torch.Generator().manual_seed(1))  # 520 rows over 120
    outs = []
    for attn in (None, "eager"):
        model = make_model(arch, attn=attn)
        cache = DynamicCache()
        with torch.no_grad():
            model.model(input_ids=ids[:, :120], **with_cache(model.model, cache), use_cache=True)
            outs.append(model.model(input_ids=ids[:, 120:], **with_cache(model.model, cache),
                                   use_cache=True).last_hidden_state)
    torch.testing.assert_close(outs[0], outs[1], rtol=1e-4, atol=1e-4)
