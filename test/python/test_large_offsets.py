"""Offsets past int32 on the CPU path: q and out of sequences 2**30
elements apart, in sparse files (only the pages the kernels touch are
real), so that sequence 2 starts 2**31 elements in. `b * q_batch_stride`
in int32 wrapped there (decode read q and wrote out 4 GiB before them);
the kernels take batch offsets in int64. And the API's limits that keep
the rest of the kernels' int32 arithmetic in range."""
import math

import numpy as np
import pytest

import fakv
from attention_ref import NP_DTYPES, attention, check, gather
from fakv import interface

APART = 2 ** 30            # elements between two sequences' q (and out)


def sparse(path, shape, dtype):
    """An array of `shape` whose sequences (axis 0) lie APART elements apart in a sparse file."""
    size = np.dtype(dtype).itemsize
    base = np.memmap(path, dtype=dtype, mode="w+", shape=(shape[0] * APART,))
    inner = [size * math.prod(shape[i + 1:]) for i in range(1, len(shape))]
    return np.lib.stride_tricks.as_strided(base, shape=shape, strides=(APART * size, *inner))


class Spread:
    """A kernel whose launches get q (decode's argument 0), out (decode's 5, combine's 2) and the block table
    (decode's 3) as views of sparse files, sequences APART elements apart (the batch stride arguments too), and
    copy out back."""

    def __init__(self, kernel, tmp_path, q_arg, out_arg, stride_arg, table_arg=None, table_stride_arg=None):
        self.kernel, self.tmp_path = kernel, tmp_path
        self.q_arg, self.out_arg, self.stride_arg = q_arg, out_arg, stride_arg
        self.table_arg, self.table_stride_arg = table_arg, table_stride_arg
        self.launches, self.variants = 0, []

    def __getattr__(self, name):          # (pack_gqa and the like: the kernel's)
        return getattr(self.kernel, name)

    def with_options(self, **options):
        spread = Spread(self.kernel.with_options(**options), self.tmp_path, self.q_arg, self.out_arg, self.stride_arg,
                        self.table_arg, self.table_stride_arg)
        self.variants.append(spread)
        return spread

    def __getitem__(self, grid):
        def launch(*args, **consts):
            args = list(args)
            out = args[self.out_arg]
            wide_out = sparse(self.tmp_path / f"out{self.launches}", out.shape, out.dtype)
            if self.q_arg is not None:
                q = args[self.q_arg]
                args[self.q_arg] = sparse(self.tmp_path / f"q{self.launches}", q.shape, q.dtype)
                args[self.q_arg][...] = q
            args[self.out_arg], args[self.stride_arg] = wide_out, APART
            if self.table_arg is not None:
                table = args[self.table_arg]
                args[self.table_arg] = sparse(self.tmp_path / f"table{self.launches}", table.shape, table.dtype)
                args[self.table_arg][...] = table
                args[self.table_stride_arg] = APART
            self.launches += 1
            self.kernel[grid](*args, **consts)
            out[...] = wide_out
        return launch


@pytest.mark.parametrize("splits", [1, 3])
def test_sequences_past_int32_elements(splits, tmp_path, monkeypatch):
    rng = np.random.default_rng(splits)
    bf16 = NP_DTYPES["bf16"]
    batch, sq, h, hk, d, page = 3, 2, 4, 2, 64, 16
    q = rng.standard_normal((batch, sq, h, d)).astype(bf16)
    k, v = (rng.standard_normal((48, page, hk, d)).astype(bf16) for _ in range(2))
    table = rng.permutation(48).astype(np.int32).reshape(batch, 16)
    seqlens = np.array([150, 256, 37], np.int32)
    decode, combine = interface._lazy_kernels()
    spread = (Spread(decode, tmp_path, 0, 5, 9, 3, 15), Spread(combine, tmp_path, None, 2, 4))
    monkeypatch.setattr(interface, "_lazy_kernels", lambda: spread)
    out, lse = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=seqlens, block_table=table, causal=True,
                                           num_splits=splits, return_softmax_lse=True)
    launches = [s.launches + sum(v.launches for v in s.variants) for s in spread]
    assert launches == [1, int(splits > 1)]
    keys, values = gather(k, table, seqlens, page), gather(v, table, seqlens, page)
    ref, lse_ref = attention(q, keys, values, seqlens, True, 1 / math.sqrt(d))
    pt, _ = attention(q, keys, values, seqlens, True, 1 / math.sqrt(d), bf16)
    ok, msg = check(out, ref, pt)
    assert ok, msg
    assert np.allclose(lse, lse_ref, atol=1e-3)


def test_a_capacity_near_int32_is_refused():
    """2**31 - 64 rows a sequence (1082401 pages of 1984 rows): past 2**31 - 256, the limit that leaves the
    kernels' int32 lengths room for a block's and a split's rounding up (decode's `cached + BLOCK_N - 1`)."""
    q = np.zeros((1, 1, 1, 16), NP_DTYPES["bf16"])
    cache = np.zeros((1, 1984, 1, 16), NP_DTYPES["bf16"])
    with pytest.raises(fakv.FakvError, match=r"cache holds 2147483584 rows; at most 2147483392 = 2\*\*31 - 256"):
        fakv.flash_attn_with_kvcache(q, cache, cache, block_table=np.zeros((1, 1082401), np.int32),
                                     cache_seqlens=1)


def test_a_sequence_of_q_past_int32_elements_is_refused():
    """Offsets within a sequence stay int32: a q of 2**31 elements a sequence is refused (a broadcast view: no
    memory) before anything is read."""
    bf16 = NP_DTYPES["bf16"]
    q = np.broadcast_to(np.zeros((1, 1, 1, 128), bf16), (1, 2 ** 17, 128, 128))
    cache = np.zeros((1, 16, 8, 128), bf16)
    with pytest.raises(fakv.FakvError, match=r"q holds 2147483648 elements a sequence \(seqlen_q x heads x "
                                             r"head_dim\); at most 2\*\*31 - 1"):
        fakv.flash_attn_with_kvcache(q, cache, cache, cache_seqlens=1)


def test_views_reaching_past_int32_are_read_through_copies(tmp_path):
    """q whose sequences lie 2**30 elements apart (read by append.py when it rotates q) and new keys taken from a
    heads-first buffer (kv heads 2**31 x 8 elements apart): int32 offsets within a sequence would wrap; fakv reads
    compact copies, and the call gives what the compact arrays give."""
    bf16 = NP_DTYPES["bf16"]
    rng = np.random.default_rng(0)
    q = rng.standard_normal((3, 1, 4, 8)).astype(bf16)
    wide_q = sparse(tmp_path / "q", q.shape, bf16)
    wide_q[...] = q
    buf = np.memmap(tmp_path / "k", dtype=bf16, mode="w+", shape=(1 * 2 * 2 ** 31 * 8,)).reshape(1, 2, 2 ** 31, 8)
    new_k = rng.standard_normal((1, 1, 2, 8)).astype(bf16)
    buf[:, :, 5] = new_k[:, 0]
    wide_k = buf[:, :, 5:6].transpose(0, 2, 1, 3)            # (1, 1, 2, 8), kv heads 2**34 elements apart
    cache = rng.standard_normal((3, 32, 2, 8)).astype(bf16)
    cos, sin = (rng.random((40, 4)).astype(np.float32) for _ in range(2))
    lens = np.array([5, 20, 31], np.int32)
    new = np.broadcast_to(new_k, (3, 1, 2, 8))
    wide_new = np.lib.stride_tricks.as_strided(wide_k, shape=(3, 1, 2, 8), strides=(0, *wide_k.strides[1:]))
    runs = []
    for qq, kk in ((wide_q, wide_new), (q, new.copy())):
        kc, vc = cache.copy(), cache.copy()
        runs.append(fakv.flash_attn_with_kvcache(qq, kc, vc, k=kk, v=kk, cache_seqlens=lens.copy(), rotary_cos=cos,
                                                 rotary_sin=sin, causal=True, return_softmax_lse=True) + (kc, vc))
    for got, want in zip(*runs):
        assert np.array_equal(got, want)


def test_split_partials_stay_within_int32():
    """The splits' partials (splits x batch x seqlen_q x heads x head tile) are int32-addressed: a num_splits
    that would pass 2**31 elements is cut (9 sequences of 512 queries, 64 heads, 64 splits asked: 9 GiB)."""
    p = interface._plan(9, 512, 64, 8, 128, "bf16", True, 256, 8192, False, 64)
    assert 1 < p["num_splits"] < 64
    assert p["num_splits"] * 9 * 512 * 64 * 128 < 2 ** 31
    assert interface._plan(9, 8, 64, 8, 128, "bf16", True, 256, 8192, False, 64)["num_splits"] == 64
