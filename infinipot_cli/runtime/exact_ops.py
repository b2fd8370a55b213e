"""PyTorch's own kernels for a layer's reductions, as operations a compiled (AOTInductor) library calls directly.

A decode step compiled with AOTInductor fuses the elementwise work around a reduction into one loop and sums in
that loop's order; PyTorch's kernel for the same reduction sums in another, so ~1 bf16 value in 10^5 rounds the
other way and a long greedy generation parts from the eager step's after tens of tokens. Here the step's
reductions — an RMSNorm's mean of squares, the attention's softmax and its two bf16 products — are custom
operations (``infinipot::infinipot_mean_last``, ``_softmax_last``, ``_attn_logits``, ``_attn_mix``): eagerly (and
while ``torch.export`` traces) they are ``x.mean(-1, keepdim=True)``, ``torch.softmax(x, -1)`` and ``torch.bmm``;
inside a compiled library they are direct C calls (AOTInductor's ``custom_ops_to_c_shims``) into a small C++
library, built here once, that runs ``at::mean``, ``at::_softmax`` and ``at::bmm`` — the same kernels, so the
compiled step's values are the eager step's bit for bit (tests/test_compiled_step.py) while a whole layer is one
library call.

The two products have a faster path: oneDNN, behind ``torch.bmm``, spends ~18 µs a call on setup and on copying
the keys or values into its pair layout, 60 calls a token. The library's AVX512-BF16 kernels compute the same
sums in the same order without that; they are switched on only for a head shape and thread count where
:func:`verify_attention` found them equal to ``torch.bmm`` bit for bit on this machine (``models --compile`` runs
it), and only for caches up to the length it checked.

The library is compiled with the system C++ compiler against the installed torch (headers and ``libtorch_cpu``),
named by a hash of its source and the torch version, and loaded with ``RTLD_GLOBAL`` before any library that calls
it (:func:`load`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import torch

_SOURCE = r"""
#include <immintrin.h>
#include <atomic>
#include <cstdint>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/mean.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/inductor/aoti_torch/utils.h>

using torch::aot_inductor::new_tensor_handle;
using torch::aot_inductor::tensor_handle_to_tensor_pointer;

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))

// The attention's two bf16 products for one query row per head, as oneDNN's bf16 matmul computes them on a CPU
// with AVX512-BF16 (what torch.bmm runs here): per output an fp32 sum of vdpbf16ps pair products in order along
// the reduced dim (the values' product in blocks of 512 rows, or 1,024 past 1,024, each summed from zero, then
// added in order), rounded to bf16 at the end. Used only for shapes verified identical to torch.bmm on this
// machine (exact_ops.verify_attention).

BF16_TARGET static inline void transpose16(__m512i* r) {  // 16x16 int32: r[j] lane i <- r[i] lane j
  __m512i t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {
    r[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    r[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    r[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      t[8 * i + j] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + j + 4], 0x88);
      t[8 * i + j + 4] = _mm512_shuffle_i32x4(r[8 * i + j], r[8 * i + j + 4], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_i32x4(t[j], t[j + 8], 0xdd);
  }
}

// logits (H, G, S) = q (H, G, D) . keys (H, S, D)^T, blocks of 16 key rows b0..b1 (over H * ceil(S / 16))
BF16_TARGET static void logits_blocks(int64_t b0, int64_t b1, const uint16_t* q, const uint16_t* k, uint16_t* out,
                                      int G, int S, int D) {
  const int P = D / 2, NB = (S + 15) / 16;
  for (int64_t b = b0; b < b1; ++b) {
    const int h = b / NB, n0 = (b % NB) * 16, rem = S - n0 < 16 ? S - n0 : 16;
    const int32_t* kb = (const int32_t*)(k + ((int64_t)h * S + n0) * D);
    const int32_t* qb = (const int32_t*)(q + (int64_t)h * G * D);
    __m512 acc[8];
    for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
    for (int p0 = 0; p0 < P; p0 += 16) {
      __m512i r[16];
      for (int i = 0; i < 16; ++i) r[i] = i < rem ? _mm512_loadu_si512(kb + i * P + p0) : _mm512_setzero_si512();
      transpose16(r);  // r[j] lane i: the pair p0 + j of key row n0 + i
      for (int j = 0; j < 16; ++j)
        for (int g = 0; g < G; ++g)
          acc[g] = _mm512_dpbf16_ps(acc[g], (__m512bh)_mm512_set1_epi32(qb[g * P + p0 + j]), (__m512bh)r[j]);
    }
    const __mmask16 m = (__mmask16)((1u << rem) - 1);
    for (int g = 0; g < G; ++g)
      _mm256_mask_storeu_epi16(out + ((int64_t)h * G + g) * S + n0, m, (__m256i)_mm512_cvtneps_pbh(acc[g]));
  }
}

// mixed (H, G, D) = probs (H, G, S) . values (H, S, D), items w0..w1 over H * (D / 16) output columns of 16
BF16_TARGET static void mix_items(int64_t w0, int64_t w1, const uint16_t* pr, const uint16_t* v, uint16_t* out,
                                  int G, int S, int D) {
  const __m512i pairs = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  const int C = D / 16;
  for (int64_t w = w0; w < w1; ++w) {
    const int h = w / C, c = w % C;
    const uint16_t* vb = v + (int64_t)h * S * D + 16 * c;
    const uint16_t* pb = pr + (int64_t)h * G * S;
    const int block = S <= 1024 ? 512 : 1024;
    __m512 tot[8], acc[8];
    for (int s0 = 0; s0 < S; s0 += block) {
      const int s1 = s0 + block < S ? s0 + block : S;
      for (int g = 0; g < G; ++g) acc[g] = _mm512_setzero_ps();
      for (int t = s0; t < s1; t += 2) {  // an odd row count's last pair is (row, 0), as oneDNN pads it
        const bool two = t + 1 < s1;
        __m256i r0 = _mm256_loadu_si256((const __m256i*)(vb + (int64_t)t * D));
        __m256i r1 = two ? _mm256_loadu_si256((const __m256i*)(vb + (int64_t)(t + 1) * D)) : _mm256_setzero_si256();
        __m512i b = _mm512_permutexvar_epi16(pairs, _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1));
        for (int g = 0; g < G; ++g) {
          const uint32_t pair = pb[g * S + t] | (two ? (uint32_t)pb[g * S + t + 1] << 16 : 0u);
          acc[g] = _mm512_dpbf16_ps(acc[g], (__m512bh)_mm512_set1_epi32((int)pair), (__m512bh)b);
        }
      }
      for (int g = 0; g < G; ++g) tot[g] = s0 == 0 ? acc[g] : _mm512_add_ps(tot[g], acc[g]);
    }
    for (int g = 0; g < G; ++g)
      _mm256_storeu_si256((__m256i*)(out + ((int64_t)h * G + g) * D + 16 * c), (__m256i)_mm512_cvtneps_pbh(tot[g]));
  }
}

// verified shapes: H << 56 | G << 48 | D << 32 | threads << 16 | (longest S verified) / 2
static std::atomic<uint64_t> verified[8] = {};  // (S / 2: the longest S verified, up to 131,070)

static uint64_t shape_key(uint64_t H, uint64_t G, uint64_t D, uint64_t threads) {
  return (H << 56) | (G << 48) | (D << 32) | (threads << 16);
}

static bool kernels_for(const at::Tensor& a, const at::Tensor& b, int64_t H, int64_t G, int64_t D, int64_t S) {
  if (a.scalar_type() != at::kBFloat16 || b.scalar_type() != at::kBFloat16 || !a.is_contiguous() ||
      !b.is_contiguous() || !a.is_cpu() || a.dim() != 3 || b.dim() != 3 || G > 8 || D % 32 || H >= 256 ||
      D >= 65536)
    return false;
  const uint64_t key = shape_key(H, G, D, at::get_num_threads());
  for (auto& v : verified) {
    const uint64_t x = v.load();
    if (x && (x & ~uint64_t(0xffff)) == key) return S <= (int64_t)(x & 0xffff) * 2;
  }
  return false;
}

extern "C" {
// x.mean(-1, keepdim=True): the kernel torch.rms_norm's mean of squares runs eagerly
AOTITorchError aoti_torch_cpu_infinipot_mean_last(AtenTensorHandle self, AtenTensorHandle* ret0) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    *ret0 = new_tensor_handle(at::mean(*tensor_handle_to_tensor_pointer(self), {-1}, true));
  });
}
// torch.softmax(x, -1) on a tensor of the result's dtype
AOTITorchError aoti_torch_cpu_infinipot_softmax_last(AtenTensorHandle self, AtenTensorHandle* ret0) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    *ret0 = new_tensor_handle(at::_softmax(*tensor_handle_to_tensor_pointer(self), -1, false));
  });
}
// torch.bmm(q, keys.transpose(-1, -2))
AOTITorchError aoti_torch_cpu_infinipot_attn_logits(AtenTensorHandle q, AtenTensorHandle keys,
                                                    AtenTensorHandle* ret0) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    const at::Tensor& a = *tensor_handle_to_tensor_pointer(q);
    const at::Tensor& b = *tensor_handle_to_tensor_pointer(keys);
    const int64_t H = a.size(0), G = a.size(1), D = a.size(2), S = b.size(1);
    if (kernels_for(a, b, H, G, D, S)) {
      at::Tensor out = at::empty({H, G, S}, a.options());
      const uint16_t *qp = (const uint16_t*)a.data_ptr(), *kp = (const uint16_t*)b.data_ptr();
      uint16_t* op = (uint16_t*)out.data_ptr();
      at::parallel_for(0, H * ((S + 15) / 16), 8, [&](int64_t b0, int64_t b1) {
        logits_blocks(b0, b1, qp, kp, op, G, S, D);
      });
      *ret0 = new_tensor_handle(std::move(out));
    } else {
      *ret0 = new_tensor_handle(at::bmm(a, b.transpose(-1, -2)));
    }
  });
}
// torch.bmm(probs, values)
AOTITorchError aoti_torch_cpu_infinipot_attn_mix(AtenTensorHandle probs, AtenTensorHandle values,
                                                 AtenTensorHandle* ret0) {
  AOTI_TORCH_CONVERT_EXCEPTION_TO_ERROR_CODE({
    const at::Tensor& a = *tensor_handle_to_tensor_pointer(probs);
    const at::Tensor& b = *tensor_handle_to_tensor_pointer(values);
    const int64_t H = a.size(0), G = a.size(1), S = a.size(2), D = b.size(2);
    if (kernels_for(a, b, H, G, D, S)) {
      at::Tensor out = at::empty({H, G, D}, a.options());
      const uint16_t *pp = (const uint16_t*)a.data_ptr(), *vp = (const uint16_t*)b.data_ptr();
      uint16_t* op = (uint16_t*)out.data_ptr();
      at::parallel_for(0, H * (D / 16), 1, [&](int64_t w0, int64_t w1) { mix_items(w0, w1, pp, vp, op, G, S, D); });
      *ret0 = new_tensor_handle(std::move(out));
    } else {
      *ret0 = new_tensor_handle(at::bmm(a, b));
    }
  });
}
// For the verification: the kernels on raw buffers (1 when this CPU has them, 0 otherwise)
int infinipot_attention_kernels(const uint16_t* q, const uint16_t* k, uint16_t* logits, const uint16_t* probs,
                                const uint16_t* v, uint16_t* mixed, int H, int G, int S, int D) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx512bf16") || G > 8 || D % 32) return 0;
  at::parallel_for(0, (int64_t)H * ((S + 15) / 16), 8, [&](int64_t b0, int64_t b1) {
    logits_blocks(b0, b1, q, k, logits, G, S, D);
  });
  at::parallel_for(0, (int64_t)H * (D / 16), 1, [&](int64_t w0, int64_t w1) {
    mix_items(w0, w1, probs, v, mixed, G, S, D);
  });
  return 1;
}
// Use the kernels for (H, G, D) at `threads` threads up to S rows (after the verification passed on this machine)
void infinipot_attention_verified(int H, int G, int D, int threads, int S) {
  const uint64_t x = shape_key(H, G, D, threads) | (uint64_t)(S / 2);
  for (auto& v : verified) {
    uint64_t e = v.load();
    if (e == x) return;
    if (e == 0 && v.compare_exchange_strong(e, x)) return;
  }
}
}
"""


@torch.library.custom_op("infinipot::infinipot_mean_last", mutates_args=())
def mean_last(x: torch.Tensor) -> torch.Tensor:
    """x (..., n) -> its mean over the last dim, kept (..., 1)."""
    return x.mean(-1, keepdim=True)


@mean_last.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return x.new_empty(*x.shape[:-1], 1)


@torch.library.custom_op("infinipot::infinipot_softmax_last", mutates_args=())
def softmax_last(x: torch.Tensor) -> torch.Tensor:
    """softmax over the last dim, in x's dtype."""
    return torch.softmax(x, -1)


@softmax_last.register_fake
def _(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)


@torch.library.custom_op("infinipot::infinipot_attn_logits", mutates_args=())
def attn_logits(q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """q (H, G, D) . keys (H, S, D)^T -> (H, G, S)."""
    return torch.bmm(q, keys.transpose(-1, -2))


@attn_logits.register_fake
def _(q: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    return q.new_empty(q.shape[0], q.shape[1], keys.shape[1])


@torch.library.custom_op("infinipot::infinipot_attn_mix", mutates_args=())
def attn_mix(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """probs (H, G, S) . values (H, S, D) -> (H, G, D)."""
    return torch.bmm(probs, values)


@attn_mix.register_fake
def _(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    return probs.new_empty(probs.shape[0], probs.shape[1], values.shape[2])


def _shim(name: str, args: str) -> list[str]:
    return [f"AOTITorchError aoti_torch_cpu_infinipot_{name}({args}, AtenTensorHandle* ret0)"]


# what AOTInductor calls for each operation (inductor's config aot_inductor.custom_ops_to_c_shims)
C_SHIMS = {
    torch.ops.infinipot.infinipot_mean_last.default: _shim("mean_last", "AtenTensorHandle self"),
    torch.ops.infinipot.infinipot_softmax_last.default: _shim("softmax_last", "AtenTensorHandle self"),
    torch.ops.infinipot.infinipot_attn_logits.default:
        _shim("attn_logits", "AtenTensorHandle q, AtenTensorHandle keys"),
    torch.ops.infinipot.infinipot_attn_mix.default:
        _shim("attn_mix", "AtenTensorHandle probs, AtenTensorHandle values"),
}


def library_path(folder: Path) -> Path:
    key = hashlib.sha256((_SOURCE + torch.__version__).encode()).hexdigest()[:16]
    return folder / f"exact-ops-{key}.so"


def build(folder: Path) -> Path:
    """Compile the library into `folder` (atomically) unless it is there; returns its path. Raises without a
    compiler or when the compile fails (its last error line)."""
    from torch.utils import cpp_extension

    out = library_path(folder)
    if out.is_file():
        return out
    cxx = shutil.which(os.environ.get("CXX", "c++")) or shutil.which("g++")
    if cxx is None:
        raise RuntimeError("no C++ compiler (c++ or g++)")
    folder.mkdir(parents=True, exist_ok=True)
    libs = cpp_extension.library_paths()
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        src, part = os.path.join(tmp, "exact_ops.cpp"), os.path.join(tmp, "exact_ops.so")
        Path(src).write_text(_SOURCE)
        cmd = [cxx, "-shared", "-fPIC", "-O2", "-std=c++20", "-w", "-fopenmp",
               f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
               *[f"-I{p}" for p in cpp_extension.include_paths()], src, "-o", part,
               *[f"-L{p}" for p in libs], "-ltorch_cpu", "-lc10", *[f"-Wl,-rpath,{p}" for p in libs]]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            lines = [line for line in run.stderr.splitlines() if "error" in line] or run.stderr.splitlines() or ["?"]
            raise RuntimeError(f"compiling the exact operations failed: {lines[-1].strip()}")
        os.replace(part, out)
    return out


_loaded: dict[str, ctypes.CDLL] = {}
VERIFY_ROWS = 4096  # the attention kernels are verified (and then used) for caches of up to this many rows


def load(folder: Path) -> bool:
    """Load the built library for the libraries that call it; False when it is not built or does not load."""
    path = library_path(folder)
    if str(path) in _loaded:
        return True
    if not path.is_file():
        return False
    try:
        _loaded[str(path)] = ctypes.CDLL(str(path), mode=os.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _record(folder: Path) -> Path:
    return library_path(folder).with_suffix(".json")


def verify_attention(folder: Path, heads: int, group: int, dim: int) -> bool:
    """Check the library's attention kernels against torch.bmm, bit for bit, for (heads, group, dim) at the current
    thread count — every row count to 1,280 (past the values' block change), every 13th to VERIFY_ROWS, random
    values over a wide range — and record the outcome beside the library. The kernels are used only where it passed
    (on a CPU without AVX512-BF16, or where oneDNN sums in another order, the products stay torch.bmm); longer
    caches always use torch.bmm. Needs the library loaded (:func:`load`)."""
    lib = _loaded.get(str(library_path(folder)))
    if lib is None:
        return False
    gen = torch.Generator().manual_seed(0)
    ok = True
    for s in [*range(1, 1281), *range(1281, VERIFY_ROWS + 1, 13)]:  # each size up to past the block change
        rnd = lambda *shape: torch.randn(*shape, generator=gen)  # noqa: E731
        q = (rnd(heads, group, dim) * rnd(heads, group, dim).exp()).bfloat16()
        k, v = (rnd(heads, s, dim) * 3).bfloat16(), rnd(heads, s, dim).bfloat16()
        p = torch.softmax(rnd(heads, group, s) * 4, -1).bfloat16()
        logits = torch.empty(heads, group, s, dtype=torch.bfloat16)
        mixed = torch.empty(heads, group, dim, dtype=torch.bfloat16)
        ptr = ctypes.c_void_p
        if not lib.infinipot_attention_kernels(ptr(q.data_ptr()), ptr(k.data_ptr()), ptr(logits.data_ptr()),
                                               ptr(p.data_ptr()), ptr(v.data_ptr()), ptr(mixed.data_ptr()),
                                               heads, group, s, dim):
            ok = False
            break
        if not (torch.equal(logits, torch.bmm(q, k.transpose(-1, -2))) and torch.equal(mixed, torch.bmm(p, v))):
            ok = False
            break
    path = _record(folder)
    try:
        record = json.loads(path.read_text())
        record = record if isinstance(record, dict) else {}
    except (ValueError, OSError):  # none yet, or damaged: start again
        record = {}
    record[f"{heads},{group},{dim},{torch.get_num_threads()}"] = VERIFY_ROWS if ok else 0
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)
    return ok


def verified_rows(folder: Path, heads: int, group: int, dim: int) -> int | None:
    """The rows up to which the attention kernels passed for (heads, group, dim) at the current thread count (0:
    they did not), or None when that was not checked here."""
    path = _record(folder)
    try:
        got = json.loads(path.read_text()).get(f"{heads},{group},{dim},{torch.get_num_threads()}")
        return None if got is None else int(got)
    except (ValueError, OSError, AttributeError, TypeError):
        return None


def enable_attention(folder: Path, heads: int, group: int, dim: int) -> bool:
    """Use the attention kernels for (heads, group, dim) if their verification passed here; returns whether."""
    lib = _loaded.get(str(library_path(folder)))
    rows = verified_rows(folder, heads, group, dim)
    if lib is None or not rows:
        return False
    lib.infinipot_attention_verified(heads, group, dim, torch.get_num_threads(), rows)
    return True
