"""kernels/persistent.py's prototype persistent decode: each program runs several sequences in turn, as one loop
over their key blocks. Through the CPU path against the float64 reference (FlashAttention's tolerance rule):
ragged lengths with empty and one-key sequences, pages of 16 and 256 and a contiguous cache, fewer programs than
sequences; and on the GPU pipeline (compile-only, sm_90a): its loop pipelined and warp-specialised, K and V copied
by TMA, as decode.py's."""
import glob
import json
import math
import os

import ml_dtypes
import numpy as np
import pytest

import attention_ref as ref
from needs import needs_assembler

BF = ml_dtypes.bfloat16


def run(page, lens, programs, hk=2, group=4, d=128, cap=256, seed=0, ref_lens=None):
    from fakv.kernels.persistent import decode_persistent
    rng = np.random.default_rng(seed)
    b, h = len(lens), hk * group
    q = rng.standard_normal((b, 1, h, d)).astype(BF)
    if page:
        pages = b * cap // page
        k, v = (rng.standard_normal((pages, page, hk, d)).astype(BF) for _ in range(2))
        table = rng.permutation(pages).astype(np.int32).reshape(b, -1)
    else:
        k, v = (rng.standard_normal((b, cap, hk, d)).astype(BF) for _ in range(2))
        table = None
    lens = np.asarray(lens, np.int32)
    out, lse, errors = np.zeros_like(q), np.zeros((b, h), np.float32), np.zeros(1, np.int32)
    decode_persistent[(h, programs, 1)](
        q, k, v, table if page else lens, lens, out, lse, q.strides[0] // 2, q.strides[2] // 2, k.strides[0] // 2,
        k.strides[1] // 2, k.strides[2] // 2, table.strides[0] // 4 if page else 0, b, h, d, page or cap, k.shape[0],
        1 / math.sqrt(d), errors, cap, HEAD_DIM=d, BLOCK_N=64, GROUP=group, PAGE_SIZE=page,
        MAX_J=-(-b // programs))
    lens = lens if ref_lens is None else np.asarray(ref_lens, np.int32)
    keys, values = ref.gather(k, table, lens, page), ref.gather(v, table, lens, page)
    want, want_lse = ref.attention(q, keys, values, lens, False, 1 / math.sqrt(d))
    pt, _ = ref.attention(q, keys, values, lens, False, 1 / math.sqrt(d), dtype=BF)
    return out, lse, errors, want, want_lse[:, :, 0], pt


@pytest.mark.parametrize("page,lens,programs", [(16, [256, 1, 0, 130, 64], 2), (256, [200, 256, 3, 65, 0, 128], 4),
                                                (0, [100, 0, 256, 17, 255], 3), (16, [64, 64, 64, 64], 1)])
def test_persistent_decode_on_the_cpu_path(page, lens, programs):
    """Every sequence's output and LSE as FlashAttention's (an empty sequence: 0 and +inf), whichever program
    runs it and wherever its keys end in a block; no bad data reported."""
    out, lse, errors, want, want_lse, pt = run(page, lens, programs)
    ok, msg = ref.check(out, want, pt)
    assert ok, msg
    empty = np.isneginf(want_lse)
    assert np.all(np.isposinf(lse[empty])) and np.allclose(lse[~empty], want_lse[~empty], atol=2e-3)
    assert errors[0] == 0


def test_a_bad_length_is_reported_and_reads_nothing():
    """A length past the cache: reported (cache_seqlens, its row), the sequence reads no key (0, +inf); the others
    as usual."""
    out, lse, errors, want, want_lse, pt = run(16, [256, 999, 40], 2, ref_lens=[256, 0, 40])
    assert errors[0] == (1 << 24) + 1
    assert np.all(out[1].astype(np.float32) == 0) and np.all(np.isposinf(lse[1]))
    ok, msg = ref.check(out[[0, 2]], want[[0, 2]], pt[[0, 2]])
    assert ok, msg


@needs_assembler
def test_persistent_decode_compiles_for_sm90a(tmp_path, monkeypatch):
    """Swapped, in pages of 256: a cubin whose K and V go by TMA (two tensor maps) in a ring of three stages of a
    64-key block each (shared memory), 256 threads (a producer and a consumer warpgroup)."""
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    from fakv.kernels.persistent import decode_persistent
    b, hk, group, d, page, cap = 5, 2, 4, 128, 256, 512
    q, k = np.zeros((b, 1, hk * group, d), BF), np.zeros((b * cap // page, page, hk, d), BF)
    table, lens = np.arange(b * cap // page, dtype=np.int32).reshape(b, -1), np.full(b, cap, np.int32)
    decode_persistent.with_options(swap_ab=True)[(hk * group, 2, 1)](
        q, k, k, table, lens, np.zeros_like(q), np.zeros((b, hk * group), np.float32), q.strides[0] // 2,
        q.strides[2] // 2, k.strides[0] // 2, k.strides[1] // 2, k.strides[2] // 2, table.strides[0] // 4, b,
        hk * group, d, page, k.shape[0], 0.1, np.zeros(1, np.int32), cap, HEAD_DIM=d, BLOCK_N=64, GROUP=group,
        PAGE_SIZE=page, MAX_J=3)
    kernels = [kern for f in glob.glob(os.path.join(tmp_path, "*.json"))
               for kern in json.load(open(f))["facts"]["kernels"]]
    assert [kern["name"] for kern in kernels] == ["decode_persistent"]
    kern = kernels[0]
    assert [(m["rows"], m["cols"]) for m in kern["tensormaps"]] == [(64, 64), (64, 64)]
    assert kern["threads"] == 256 and 3 * 2 * 64 * 128 * 2 <= kern["smem_bytes"] < 4 * 2 * 64 * 128 * 2
