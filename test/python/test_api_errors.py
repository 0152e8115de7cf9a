"""fakv.flash_attn_with_kvcache rejects bad input with a clear error before
launching anything, and supports every argument of FlashAttention's."""
import numpy as np
import pytest

import fakv
from attention_ref import NP_DTYPES
from kvcache_ref import rotate

bf16 = NP_DTYPES["bf16"]


def tensors(b=2, sq=1, h=8, hk=2, d=64, s=64, dtype=bf16):
    return (np.zeros((b, sq, h, d), dtype), np.zeros((b, s, hk, d), dtype), np.zeros((b, s, hk, d), dtype))


def test_every_argument_is_supported():
    """No argument of flash_attn_with_kvcache raises NotImplementedError:
    k/v (appended), rotary, cache_leftpad together on the CPU path."""
    q, k, v = tensors()
    new = (np.arange(2 * 2 * 64).reshape(2, 1, 2, 64) % 7 - 3).astype(bf16)
    angle = np.arange(64)[:, None] * 0.3 / (1 + np.arange(16))[None, :]
    cos, sin = np.cos(angle).astype(np.float32), np.sin(angle).astype(np.float32)
    out = fakv.flash_attn_with_kvcache(q, k, v, k=new, v=new, rotary_cos=cos, rotary_sin=sin,
                                       cache_seqlens=np.array([3, 5], np.int32),
                                       cache_leftpad=np.array([1, 0], np.int32), rotary_interleaved=False)
    assert out.shape == q.shape
    # The keys are rotated at cache_seqlens (the left padding counted, as FlashAttention's), the values not.
    for b, pos in ((0, 3), (1, 5)):
        want = rotate(new[b, 0][None].astype(np.float32), cos, sin, np.array([pos]), False)[0]
        assert np.array_equal(k[b, pos], want.astype(bf16)), b
        assert not np.array_equal(k[b, pos], new[b, 0]) and np.array_equal(v[b, pos], new[b, 0])


@pytest.mark.parametrize("kwargs,message", [
    (dict(k=np.zeros((2, 1, 2, 64), bf16)), "`k` and `v` are given together"),
    (dict(k=np.zeros((2, 1, 3, 64), bf16), v=np.zeros((2, 1, 3, 64), bf16)), r"`k` must be \(2, seqlen_new, 2, 64\)"),
    (dict(k=np.zeros((2, 1, 2, 64), np.float16), v=np.zeros((2, 1, 2, 64), np.float16)), "`k` must have q's dtype"),
    (dict(k=np.zeros((2, 65, 2, 64), bf16), v=np.zeros((2, 65, 2, 64), bf16)), "holds 65 new keys"),
    (dict(rotary_cos=np.zeros((64, 16), np.float32)), "`rotary_cos` and `rotary_sin` are given together"),
    (dict(rotary_cos=np.zeros((64, 16), np.float32), rotary_sin=np.zeros((64, 16), np.float32)),
     "give `k` and `v` too"),
    # (tables of no columns too, as FlashAttention: they were taken silently; session 44's audit of api.md)
    (dict(rotary_cos=np.zeros((64, 0), np.float32), rotary_sin=np.zeros((64, 0), np.float32)),
     "give `k` and `v` too"),
    (dict(k=np.zeros((2, 1, 2, 64), bf16), v=np.zeros((2, 1, 2, 64), bf16),
          rotary_cos=np.zeros((64, 40), np.float32), rotary_sin=np.zeros((64, 40), np.float32)),
     r"rotary_dim \(2 \* rotary_cos.shape\[1\] = 80\) must be at most head_dim"),
    (dict(k=np.zeros((2, 1, 2, 64), bf16), v=np.zeros((2, 1, 2, 64), bf16),
          rotary_cos=np.zeros((32, 16), np.float32), rotary_sin=np.zeros((32, 16), np.float32)),
     "cos/sin seqlen .32. must be at least the seqlen of the KV cache .64."),
    # (session 56: float64 tables were refused as not "a 2-D float tensor", which they are)
    (dict(k=np.zeros((2, 1, 2, 64), bf16), v=np.zeros((2, 1, 2, 64), bf16),
          rotary_cos=np.zeros((64, 16)), rotary_sin=np.zeros((64, 16))),
     r"`rotary_cos` must be a 2-D tensor .* of float32, float16 or bfloat16 \(got float64, shape \(64, 16\)\)"),
    (dict(cache_leftpad=np.zeros(2, np.int64)), "`cache_leftpad` must be a contiguous int32 tensor"),
    (dict(window_size=(1, 2, 3)), "`window_size` must be a pair of ints"),
    # (session 52: a dict ran as its keys' window (0, 1), a set in its hash order; FlashAttention reads [0], [1])
    (dict(window_size={0: 8, 1: -1}), "`window_size` must be a pair of ints"),
    (dict(window_size={3, -1}), "`window_size` must be a pair of ints"),
    # Issue 10: each names its argument (no TypeError / ZeroDivisionError from inside).
    (dict(softmax_scale=float("nan")), "`softmax_scale` must be finite"),
    (dict(softmax_scale=float("inf")), "`softmax_scale` must be finite"),
    (dict(softmax_scale="abc"), "`softmax_scale` must be a number or None"),
    (dict(num_splits=None), "`num_splits` must be an int"),
    (dict(num_splits=2.5), "`num_splits` must be an int"),
    (dict(cache_seqlens=np.zeros(0, np.int32)), r"`cache_seqlens` must have shape \(2,\) .*got \(0,\)"),
])
def test_new_arguments_are_checked(kwargs, message):
    q, k, v = tensors()
    with pytest.raises(ValueError, match=message):
        fakv.flash_attn_with_kvcache(q, k, v, **kwargs)


def test_caches_of_different_strides_are_refused_by_name():
    """FlashAttention 2 strides k_cache and v_cache each on its own; fakv's kernels take one set of strides:
    refused with both strides (docs/api.md), the call made with v_cache laid out as k_cache runs."""
    q, k, v = tensors()
    padded = np.zeros(v.shape[:-1] + (v.shape[-1] * 2,), v.dtype)[..., :v.shape[-1]]
    padded[...] = v
    with pytest.raises(fakv.FakvError, match=r"k_cache and v_cache must have the same strides \(fakv reads both "
                                             r"caches with one set of strides\), got \(.*\) and \(.*\) elements"):
        fakv.flash_attn_with_kvcache(q, k, padded, cache_seqlens=3)
    fakv.flash_attn_with_kvcache(q, k, np.ascontiguousarray(padded), cache_seqlens=3)


def test_window_size_as_any_pair():
    """window_size as a tuple, a list or a numpy array of two ints (a tensor
    works the same way: FlashAttention's tests pass one)."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(t.shape).astype(t.dtype) for t in tensors())
    outs = [fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=40, window_size=w)
            for w in ((5, 0), [5, 0], np.array([5, 0]), (np.int64(5), np.int32(0)))]
    for out in outs[1:]:
        assert np.array_equal(out, outs[0])
    # the window is applied: keys 34..39 only, not all 40
    assert not np.allclose(outs[0], fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=40), atol=1e-2)
    window = fakv.flash_attn_with_kvcache(q, k[:, 34:40], v[:, 34:40], cache_seqlens=6)
    np.testing.assert_allclose(outs[0].astype(np.float32), window.astype(np.float32), atol=1e-2)


def test_append_past_the_capacity_is_refused():
    """New keys that would land past a sequence's cache: FlashAttention's
    RuntimeError naming block_table when paged (the host's check), nothing
    written; with the host checks off the kernel refuses and reports it."""
    q = np.zeros((2, 1, 8, 64), bf16)
    k = np.zeros((4, 16, 2, 64), bf16)
    new = np.ones((2, 1, 2, 64), bf16)
    table = np.array([[0, 1], [2, 3]], np.int32)                # 32 rows per sequence
    with pytest.raises(RuntimeError, match="exceeds the capacity addressable by block_table"):
        fakv.flash_attn_with_kvcache(q, k, k.copy(), k=new, v=new, cache_seqlens=np.array([31, 32], np.int32),
                                     block_table=table)
    assert not k.any()
    import os
    os.environ["FAKV_CHECK_DATA"] = "0"
    try:
        with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 1 plus the new keys exceeds"):
            fakv.flash_attn_with_kvcache(q, k, k.copy(), k=new, v=new, cache_seqlens=np.array([31, 32], np.int32),
                                         block_table=table)
    finally:
        del os.environ["FAKV_CHECK_DATA"]
    assert k[1, 15].any() and not k[3].any()                    # row 0's key at 31 went in; row 1's did not


@pytest.mark.parametrize("paged", [True, False])
def test_append_past_the_capacity_with_an_int_length(paged, monkeypatch):
    """An int cache_seqlens is known on the host: new keys past the
    capacity raise in the call, whatever FAKV_CHECK_DATA says (on the GPU
    too, where data checks are off by default), and nothing is written; the
    prepared call of a GPU signature checks a new int the same way."""
    from fakv import prepare
    monkeypatch.setenv("FAKV_CHECK_DATA", "0")
    q = np.zeros((2, 1, 8, 64), bf16)
    k = np.zeros((4, 16, 2, 64), bf16) if paged else np.zeros((2, 32, 2, 64), bf16)
    new = np.ones((2, 2, 2, 64), bf16)
    table = np.array([[0, 1], [2, 3]], np.int32) if paged else None     # 32 rows per sequence
    message = "exceeds the capacity addressable by block_table" if paged else r"cache_seqlens\[0\] = 31 \+ 2 new"
    with pytest.raises(RuntimeError, match=message):
        fakv.flash_attn_with_kvcache(q, k, k.copy(), k=new, v=new, cache_seqlens=31, block_table=table)
    assert not k.any()
    seqlens = prepare.SeqlensTensors(2, 32, "cuda", seqlen_new=2, paged=paged)
    with pytest.raises(RuntimeError, match=message):
        seqlens(31)
    import sys
    import types
    made = []                                   # (a stand-in for torch.full: the tensor of a length that fits)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(
        int32="int32", full=lambda shape, value, dtype, device: made.append((shape, value, dtype, device)) or value))
    assert seqlens(30) == 30 and made == [((2,), 30, "int32", "cuda")]       # 30 + 2 new keys: exactly full


@pytest.mark.parametrize("paged", [True, False])
@pytest.mark.parametrize("fused", [True, False])
def test_a_length_near_the_int32_limit_is_refused(paged, fused, monkeypatch):
    """cache_seqlens near 2**31 plus the new keys would wrap in int32: the
    kernels compare without adding, so the row is refused and reported, not
    written at a wrapped position (it used to crash the process)."""
    from fakv import interface
    monkeypatch.setenv("FAKV_CHECK_DATA", "0")
    monkeypatch.setattr(interface, "_FUSED_APPEND", fused)
    q = np.zeros((2, 1, 8, 64), bf16)
    k = np.zeros((4, 16, 2, 64), bf16) if paged else np.zeros((2, 32, 2, 64), bf16)
    new = np.ones((2, 2, 2, 64), bf16)
    table = np.array([[0, 1], [2, 3]], np.int32) if paged else None
    with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 0"):
        fakv.flash_attn_with_kvcache(q, k, k.copy(), k=new, v=new, block_table=table,
                                     cache_seqlens=np.array([2**31 - 1, 3], np.int32))
    rows = k[2:4] if paged else k[1]
    assert not k[:2].any() if paged else not k[0].any()         # row 0: nothing written
    assert rows.any()                                            # row 1's new keys went in


def test_defaults_are_accepted():
    q, k, v = tensors()
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=3, window_size=(-1, -1), softcap=0.0,
                                       rotary_interleaved=False)
    assert out.shape == q.shape


@pytest.mark.parametrize("change,message", [
    (lambda q, k, v: (q[0], k, v), "`q` must be 4-D"),
    (lambda q, k, v: (q.astype(np.float32), k, v), "`q` must be float16 or bfloat16"),
    (lambda q, k, v: (q, k.astype(np.float16), v), "must share one dtype"),
    (lambda q, k, v: (q, k, v[:, :32]), "must have one shape"),
    (lambda q, k, v: (q[..., :32], k, v), "head_dim of q"),
    (lambda q, k, v: (q, k[:, :, :1].repeat(3, axis=2), v[:, :, :1].repeat(3, axis=2)),
     "heads \\(8\\) must be a multiple of kv heads \\(3\\)"),
    (lambda q, k, v: (q, np.zeros((2, 64, 64, 2), bf16).transpose(0, 1, 3, 2),
                      np.zeros((2, 64, 64, 2), bf16).transpose(0, 1, 3, 2)), "contiguous in its last dimension"),
    # Issue 10: empty dimensions and negative strides (numpy views) are named, not misread.
    (lambda q, k, v: (q, k[:, :, :0], v[:, :, :0]), r"`k_cache` has an empty dimension: shape \(2, 64, 0, 64\)"),
    (lambda q, k, v: (q[:0], k, v), r"`q` has an empty dimension"),
    (lambda q, k, v: (q[:, :0], k, v), r"`q` has an empty dimension"),
    (lambda q, k, v: (q, k[:, :0], v[:, :0]), r"`k_cache` has an empty dimension"),
    (lambda q, k, v: (q, k[:, ::-1], v[:, ::-1]), r"`k_cache` has a negative stride"),
    (lambda q, k, v: (q, k[::-1], v[::-1]), r"`k_cache` has a negative stride"),
])
def test_bad_tensors(change, message):
    with pytest.raises(ValueError, match=message):
        fakv.flash_attn_with_kvcache(*change(*tensors()))


def test_seqlens_beyond_cache():
    q, k, v = tensors(s=64)
    with pytest.raises(ValueError, match=r"cache_seqlens \(65\) exceeds the cache \(64 rows\)"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=np.array([10, 65], np.int32))
    with pytest.raises(ValueError, match="must be an int or a contiguous int32 tensor"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=np.array([10, 20], np.int64))


def test_strided_views_are_read_right_or_refused():
    """A reversed q (copied) and a reversed block table (its row stride is
    passed) give the output of their copies; a block table whose last
    dimension is strided is copied, as FlashAttention's maybe_contiguous
    does (it was refused); a strided cache_seqlens is refused by name, as
    FlashAttention 2 refuses it (issue 10)."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 1, 8, 64)).astype(bf16)
    k, v = (rng.standard_normal((8, 16, 2, 64)).astype(bf16) for _ in range(2))
    table, lens = np.arange(8, dtype=np.int32).reshape(2, 4), np.array([40, 64], np.int32)
    want = fakv.flash_attn_with_kvcache(q[::-1].copy(), k, v, cache_seqlens=lens, block_table=table[::-1].copy())
    got = fakv.flash_attn_with_kvcache(q[::-1], k, v, cache_seqlens=lens, block_table=table[::-1])
    assert np.array_equal(got, want)
    plain = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    fortran = np.asfortranarray(table)
    assert fortran.strides[1] != 4
    assert np.array_equal(fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=fortran), plain)
    wide = np.arange(16, dtype=np.int32).reshape(2, 8)[:, ::2]       # pages 0, 2, 4, 6 and 8, 10, 12, 14
    k2, v2 = (np.zeros((16,) + c.shape[1:], bf16) for c in (k, v))
    k2[wide.ravel()], v2[wide.ravel()] = k[table.ravel()], v[table.ravel()]
    assert np.array_equal(fakv.flash_attn_with_kvcache(q, k2, v2, cache_seqlens=lens, block_table=wide), plain)
    with pytest.raises(ValueError, match=r"`cache_seqlens` must be a contiguous int32 tensor \(2,\), got strides"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=np.full(4, 3, np.int32)[::2], block_table=table)


def test_block_table_out_of_range():
    q = np.zeros((2, 1, 8, 64), bf16)
    k = np.zeros((6, 16, 2, 64), bf16)
    table = np.array([[0, 1, 7, -1], [2, 3, 4, 5]], np.int32)   # 7 >= 6 pages, used by 40 keys
    with pytest.raises(ValueError, match=r"block_table entries used by cache_seqlens must be in \[0, 6\)"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([40, 64], np.int32), block_table=table)
    # The same -1/7 past the used pages is fine.
    fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([20, 64], np.int32), block_table=table)


def test_block_table_pages_of_the_appended_tokens_are_checked():
    """The pages the appended tokens go to are used too: a sequence of 32 keys (pages 0 and 1 full) appending
    one token writes into the table's column 2, so an entry there outside [0, num_pages) is refused before
    anything is written; the same entry with nothing appended is never read, so taken."""
    q = np.zeros((2, 1, 8, 64), bf16)
    k = np.zeros((6, 16, 2, 64), bf16)
    lens = np.array([32, 16], np.int32)
    table = np.array([[0, 1, -1], [2, 3, 4]], np.int32)
    fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=lens, block_table=table)
    new = np.ones((2, 1, 2, 64), bf16)
    kc, vc = k.copy(), k.copy()
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 2\] = -1: block_table entries used by "
                                             r"cache_seqlens must be in \[0, 6\)"):
        fakv.flash_attn_with_kvcache(q, kc, vc, k=new, v=new, cache_seqlens=lens, block_table=table)
    assert not kc.any() and not vc.any()                        # refused before the append
    table[0, 2] = 5
    fakv.flash_attn_with_kvcache(q, kc, vc, k=new, v=new, cache_seqlens=lens, block_table=table)
    assert kc[5, 0].all() and kc[3, 0].all()                   # row 0's token 32 in page 5, row 1's 16 in page 3


def test_host_checks_at_their_bounds():
    """The host's checks of the data at their exact bounds, by their own messages (the kernels' reports name
    the same arguments): an entry equal to the number of pages is refused and one below it taken; a
    cache_leftpad equal to cache_seqlens + seqlen_new is taken and one past it refused; an entry of a page
    wholly before the padding is never read, so never checked, and one of the first page the padding ends in
    is."""
    q = np.zeros((2, 1, 8, 64), bf16)
    k = np.zeros((6, 16, 2, 64), bf16)
    lens = np.array([40, 60], np.int32)
    table = np.array([[0, 1, 6, 3], [2, 3, 4, 5]], np.int32)
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 2\] = 6: block_table entries used by cache_seqlens "
                                             r"must be in \[0, 6\)"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=lens, block_table=table)
    table[0, 2] = 5
    fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=lens, block_table=table)
    new = np.ones((2, 1, 2, 64), bf16)
    for pad, ok in ((41, True), (42, False)):                  # row 0 holds 40 + 1 keys
        pads = np.array([pad, 0], np.int32)
        call = lambda: fakv.flash_attn_with_kvcache(q, k.copy(), k.copy(), k=new, v=new, cache_seqlens=lens,  # noqa
                                                    cache_leftpad=pads, block_table=table)
        if ok:
            call()
        else:
            with pytest.raises(fakv.DataError, match=r"cache_leftpad\[0\] = 42 is outside \[0, cache_seqlens\[0\] "
                                                     r"\+ seqlen_new = 41\]"):
                call()
    pads = np.array([32, 0], np.int32)                         # row 0's keys in 32..39: page column 2 only
    table[0, :2] = [-1, 99]
    fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=lens, cache_leftpad=pads, block_table=table)
    pads[0] = 31                                               # key 31 is in column 1
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 1\] = 99: block_table entries used by "
                                             r"cache_seqlens \(past cache_leftpad\) must be in \[0, 6\)"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=lens, cache_leftpad=pads, block_table=table)


def test_negative_seqlens():
    q, k, v = tensors(s=64)
    with pytest.raises(ValueError, match="cache_seqlens must not be negative"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=np.array([10, -1], np.int32))


def test_kernels_report_bad_data(monkeypatch):
    """FAKV_CHECK_DATA=0 skips the host's checks of the data; the kernel
    then masks what is bad (it reads nothing out of bounds) and reports it,
    and the call raises DataError naming the argument and the batch row, as
    the GPU path does at the next call (test/gpu/test_frontend_gpu.py)."""
    monkeypatch.setenv("FAKV_CHECK_DATA", "0")
    q = np.ones((2, 1, 8, 64), bf16)
    k = np.ones((6, 16, 2, 64), bf16)
    table = np.array([[0, 1, 7, -1], [2, 3, 4, 5]], np.int32)   # 7 >= 6 pages, used by 40 keys
    with pytest.raises(fakv.DataError, match="block_table of batch row 0"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([40, 64], np.int32), block_table=table)
    table[0, 2] = -3
    with pytest.raises(fakv.DataError, match="block_table of batch row 0"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([40, 64], np.int32), block_table=table)
    table[0, 2] = 1
    with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 1"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([40, 65], np.int32), block_table=table)
    with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 0"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([-5, 64], np.int32), block_table=table)
    qc, kc, vc = tensors(s=64)
    with pytest.raises(fakv.DataError, match="cache_batch_idx of batch row 1"):
        fakv.flash_attn_with_kvcache(qc, kc, vc, cache_seqlens=5, cache_batch_idx=np.array([0, 2], np.int32))
    # The same data with the checks on: raised before launching, with the entry.
    monkeypatch.setenv("FAKV_CHECK_DATA", "1")
    table[0, 2] = 7
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 2\] = 7"):
        fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([40, 64], np.int32), block_table=table)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("splits", [1, 3])
def test_a_negative_length_is_named_when_appending(fused, rotary, splits, monkeypatch):
    """A negative cache_seqlens in an appending call, as the kernels report it (FAKV_CHECK_DATA=0, the GPU's
    default): named as a negative length, not as "plus the new keys exceeds the capacity" or as rotary_cos
    being short (the append / rotary reports of the same row raced for the word)."""
    from fakv import interface
    monkeypatch.setenv("FAKV_CHECK_DATA", "0")
    monkeypatch.setattr(interface, "_FUSED_APPEND", fused)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 1, 2, 16)).astype(np.float16)
    kc = rng.standard_normal((2, 8, 1, 16)).astype(np.float16)
    k = rng.standard_normal((2, 1, 1, 16)).astype(np.float16)
    angle = rng.random((8, 8))
    rot = dict(rotary_cos=np.cos(angle).astype(np.float32), rotary_sin=np.sin(angle).astype(np.float32)) \
        if rotary else {}
    with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 1 is negative or more than the cache holds"):
        fakv.flash_attn_with_kvcache(q, kc, kc.copy(), k=k, v=k, cache_seqlens=np.array([3, -1], np.int32),
                                     num_splits=splits, **rot)


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("n", [62, 61])
def test_rotary_rows_cover_the_query_positions(monkeypatch, n, fused):
    """Causal calls rotate q at cache_seqlens + i: rotary_cos/sin with fewer
    rows than that is refused on the host, and reported by the kernel that
    rotates q (decode.py appending, or append.py; neither reads a row past
    them) when the host does not check (issue 10). n = 61: the last query
    at position 64, one past the 64 rows."""
    from fakv import interface
    monkeypatch.setattr(interface, "_FUSED_APPEND", fused)
    q, k, v = tensors(sq=4, s=64)
    kn = np.ones((2, 1, 2, 64), bf16)
    cos = np.ones((64, 16), bf16)
    lens = np.array([10, n], np.int32)                       # q of row 1 at n..n + 3: past 64 rows
    message = rf"rotary_cos/rotary_sin have 64 rows; .*cache_seqlens\[1\] \+ 3 = {n + 3}"
    with pytest.raises(fakv.DataError, match=message):
        fakv.flash_attn_with_kvcache(q, k, v, kn, kn, cos, cos, cache_seqlens=lens, causal=True)
    checked = fakv.flash_attn_with_kvcache(q, k, v, kn, kn, cos, cos, cache_seqlens=lens)   # not causal: q at n
    monkeypatch.setenv("FAKV_CHECK_DATA", "0")
    with pytest.raises(fakv.DataError, match="rotary_cos of batch row 1 has fewer rows"):
        fakv.flash_attn_with_kvcache(q, k, v, kn, kn, cos, cos, cache_seqlens=lens, causal=True)
    out = fakv.flash_attn_with_kvcache(q, k, v, kn, kn, cos, cos, cache_seqlens=lens)   # (unchecked)
    assert np.isfinite(out.astype(np.float32)).all() and np.array_equal(out, checked)


def test_errors_are_value_and_runtime_errors():
    """FakvError is a ValueError (fakv's contract) and a RuntimeError (what
    FlashAttention raises)."""
    q, k, v = tensors()
    for kind in (ValueError, RuntimeError, fakv.FakvError):
        with pytest.raises(kind):
            fakv.flash_attn_with_kvcache(q[0], k, v)
    assert issubclass(fakv.DataError, fakv.FakvError)


def test_block_table_shape():
    q = np.zeros((2, 1, 8, 64), bf16)
    k = np.zeros((6, 16, 2, 64), bf16)
    with pytest.raises(ValueError, match="`block_table` must be an int32 tensor"):
        fakv.flash_attn_with_kvcache(q, k, k, block_table=np.zeros((3, 2), np.int32))


def test_signature_is_flash_attentions():
    """flash_attn_with_kvcache's parameters, order and defaults are
    FlashAttention's (the seed's signature)."""
    import inspect
    expected = [("q", None), ("k_cache", None), ("v_cache", None), ("k", None), ("v", None),
                ("rotary_cos", None), ("rotary_sin", None), ("cache_seqlens", None), ("cache_batch_idx", None),
                ("cache_leftpad", None), ("block_table", None), ("softmax_scale", None), ("causal", False),
                ("window_size", (-1, -1)), ("softcap", 0.0), ("rotary_interleaved", True),
                ("alibi_slopes", None), ("num_splits", 0), ("return_softmax_lse", False)]
    for fn in (fakv.flash_attn_with_kvcache, fakv.with_kernels()):
        params = inspect.signature(fn).parameters
        got = [(n, None if p.default is inspect.Parameter.empty else p.default) for n, p in params.items()]
        assert got == expected


def test_int_seqlens_beyond_the_cache():
    q, k, v = tensors()
    with pytest.raises(ValueError, match=r"cache_seqlens \(65\) must be in \[0, 64\]"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=65)


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


class _StandIn:
    """What the checks read of a torch tensor: shape, strides, dtype and
    device (no data: every check here fails before anything is read)."""
    __module__ = "torch"

    def __init__(self, shape, dtype, device="cuda", index=0):
        self.shape, self.dtype = tuple(shape), dtype
        self.is_cuda = device == "cuda"
        self.device = type("Device", (), {"type": device, "index": index})()
        self._index = index if device == "cuda" else -1

    def stride(self):
        return np.empty(self.shape, np.int8).strides          # (contiguous, in elements of one byte)

    def get_device(self):
        return self._index

    def data_ptr(self):
        return 1 << 20


@pytest.mark.parametrize("name", ["cache_seqlens", "block_table", "cache_batch_idx", "cache_leftpad", "alibi_slopes"])
def test_small_tensors_on_another_gpu_are_refused(name):
    """cache_seqlens, block_table, cache_batch_idx, cache_leftpad and
    alibi_slopes on another CUDA device than q (the kernel would read
    another device's memory) are refused, as FlashAttention refuses them."""
    from fakv import interface
    bf, i32, f32 = _Dtype("bfloat16"), _Dtype("int32"), _Dtype("float32")
    q = _StandIn((2, 1, 8, 64), bf)
    cache = _StandIn((2, 64, 2, 64), bf) if name != "block_table" else _StandIn((8, 16, 2, 64), bf)
    shapes = dict(cache_seqlens=((2,), i32), block_table=((2, 4), i32), cache_batch_idx=((2,), i32),
                  cache_leftpad=((2,), i32), alibi_slopes=((8,), f32))
    given = dict(cache_seqlens=_StandIn((2,), i32), block_table=None, cache_batch_idx=None, cache_leftpad=None,
                 alibi_slopes=None)
    given[name] = _StandIn(*shapes[name], index=1)
    with pytest.raises(fakv.FakvError, match=f"`{name}` must be on q's device"):
        interface._attention(None, None, q, cache, cache, None, None, None, None, given["cache_seqlens"],
                             given["cache_batch_idx"], given["cache_leftpad"], given["block_table"], None, False,
                             (-1, -1), 0.0, True, given["alibi_slopes"], 0, False)


def test_tensors_of_other_devices_are_refused():
    """A tensor on neither a CUDA device nor the CPU (mps, xpu, meta) is
    refused, not run through the CPU path."""
    from fakv import interface
    q = _StandIn((2, 1, 8, 64), _Dtype("bfloat16"), device="meta")
    with pytest.raises(fakv.FakvError, match="`q` must be on a CUDA device or the CPU, got meta"):
        interface._attention(None, None, q, q, q, None, None, None, None, 64, None, None, None, None, False,
                             (-1, -1), 0.0, True, None, 0, False)


def test_block_table_checked_on_the_host_with_an_int_length():
    """The host checks (FAKV_CHECK_DATA; on by default on the CPU path)
    read the block table also when cache_seqlens is an int (they skipped it
    then, leaving it to the kernel's report)."""
    q = np.zeros((2, 1, 8, 64), bf16)
    cache = np.zeros((8, 16, 2, 64), bf16)
    table = np.arange(8, dtype=np.int32).reshape(2, 4)
    table[0, 1] = 999
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 1\] = 999: block_table entries used by "):
        fakv.flash_attn_with_kvcache(q, cache, cache.copy(), cache_seqlens=40, block_table=table)


def test_int_lengths_of_captured_calls_get_their_own_tensor(monkeypatch):
    """An int cache_seqlens is a (batch,) tensor per value (prepare.SeqlensTensors): eager calls of a stream
    share the value's; a call captured into a CUDA graph gets one of its own, kept for good (its fill runs only when
    the graph replays, so an eager call must never read it; and the graph reads it at every replay, so
    clearing the eager ones must not free it)."""
    import sys
    import types
    from fakv import prepare
    made = []

    class Tensor:
        def __init__(self, value):
            self.value = value
            made.append(self)

        def data_ptr(self):
            return id(self)

    fake = types.SimpleNamespace(int32="int32", full=lambda shape, value, dtype, device: Tensor(value))
    monkeypatch.setitem(sys.modules, "torch", fake)
    lens = prepare.SeqlensTensors(2, 1000, "cuda")
    eager = lens(5)
    assert lens(5) is eager is made[0]      # (the tensor itself: the prepared call holds it until its launches)
    captured = lens(5, True)
    assert captured != eager and lens(5) == eager                 # (the eager call keeps the eager tensor)
    assert lens(5, True) not in (eager, captured) and len(lens.captured) == 2
    other = lens(5, False, 0x7000)                                # another stream: its own, filled in its order
    assert other not in (eager, captured) and lens(5, False, 0x7000) == other and lens(5) == eager
    for value in range(100, 200):                                 # eager values come and go
        lens(value)
    assert len(lens.tensors) <= 64 and [t.value for t in lens.captured] == [5, 5]


def test_merge_counters_of_a_capture_are_the_graphs(monkeypatch):
    """FAKV_MERGE_SPLITS' counters (zeroed buffers, one per stream): a call captured into a CUDA graph gets
    a buffer of its own, kept, whose zeros are written only when the graph replays; eager calls never get
    it, nor the graph theirs."""
    import sys
    import types
    from fakv import interface, prepare

    class Tensor:
        def __init__(self, n):
            self.n = n

        def numel(self):
            return self.n

    fake = types.SimpleNamespace(int32="int32", zeros=lambda n, dtype, device: Tensor(n))
    monkeypatch.setitem(sys.modules, "torch", fake)
    monkeypatch.setattr(prepare, "current_stream", lambda q=None: 0x5000)
    monkeypatch.setattr(interface, "_COUNTERS", {})
    monkeypatch.setattr(interface, "_GRAPH_COUNTERS", [])
    q = types.SimpleNamespace(device="cuda:0")
    capturing = [False]
    monkeypatch.setattr(interface, "_capturing", lambda: capturing[0])
    eager = interface._counters(q, 16, True)
    capturing[0] = True
    graph = interface._counters(q, 16, True)
    capturing[0] = False
    assert graph is not eager and interface._counters(q, 16, True) is eager
    assert interface._GRAPH_COUNTERS == [graph]


def test_merging_calls_key_the_stream_of_qs_device(monkeypatch):
    """FAKV_MERGE_SPLITS keys a call by its stream: q's device's, from api.py's fast path (which keys before
    it makes q's device current) as from the slow path, so a call on cuda:1 while cuda:0 is current finds
    the call it prepared (the current device's stream was keyed there: never found, prepared every call)."""
    import types
    from fakv import prepare, runtime
    monkeypatch.setattr(runtime, "stream_getter", lambda device=None: lambda: 0x100 + (9 if device is None else device))
    monkeypatch.setattr(prepare, "_STREAMS", {})
    monkeypatch.setattr(prepare, "MERGE_SPLITS", True)
    q = types.SimpleNamespace(is_cuda=True, get_device=lambda: 1)
    assert prepare.extras(q)[1] == (0x101,)
    assert prepare.extras()[1] == (0x109,)                   # (no q: the current device's)
    assert prepare.extras(np.zeros(4))[1] == (0x109,)        # (the CPU path's)
    monkeypatch.setattr(prepare, "MERGE_SPLITS", False)
    assert prepare.extras(q)[1] is None


class _CudaTensorStandIn:
    """What the window_size check sees of a CUDA tensor (no GPU here)."""
    is_cuda, device = True, "cuda:0"

    def tolist(self):
        raise AssertionError("read back from the GPU")


def test_a_window_size_on_the_gpu_is_refused():
    """A CUDA tensor as window_size was read back every call (a wait for the GPU; inside a CUDA graph's
    capture torch's error); FlashAttention's bindings take two ints: refused by name, host values taken."""
    q, k, v = tensors()
    with pytest.raises(ValueError, match=r"`window_size` must be host values .* got a tensor on cuda:0"):
        fakv.flash_attn_with_kvcache(q, k, v, window_size=_CudaTensorStandIn())
    want = fakv.flash_attn_with_kvcache(q, k, v, window_size=(8, 0))
    assert np.array_equal(fakv.flash_attn_with_kvcache(q, k, v, window_size=np.array([8, 0])), want)


# ---- found by session 33's review (each crashed, wrote where it must not, or returned garbage) -------------------

def _appending(k_cache, v_cache):
    q = np.ones((2, 1, 4, 64), np.float16)
    new = np.ones((2, 1, 2, 64), np.float16)
    return fakv.flash_attn_with_kvcache(q, k_cache, v_cache, k=new, v=new, cache_seqlens=3)


def test_appending_into_a_read_only_cache_is_refused(tmp_path):
    """A memory map opened read-only (the process died with SIGSEGV), a view of immutable bytes (they were
    changed) and a broadcast (rows overwrote each other) are refused before anything is written; so is a
    writable view with a zero stride."""
    base = np.zeros((2, 32, 2, 64), np.float16)          # (np.save keeps float16; bfloat16 it stores as bytes)
    np.save(tmp_path / "cache.npy", base)
    mapped = np.load(tmp_path / "cache.npy", mmap_mode="r")
    partners = np.zeros_like(base), np.zeros_like(base)       # (the writable caches beside them: untouched too)
    with pytest.raises(fakv.FakvError, match="`k_cache` is read-only; `k` and `v` are appended into it in place"):
        _appending(mapped, partners[0])
    frozen = np.frombuffer(bytes(base.nbytes), np.float16).reshape(base.shape)
    with pytest.raises(fakv.FakvError, match="`v_cache` is read-only"):
        _appending(partners[1], frozen)
    assert not partners[0].any() and not partners[1].any()
    broadcast = np.broadcast_to(base[:1], base.shape)
    with pytest.raises(fakv.FakvError, match="`k_cache` is read-only"):
        _appending(broadcast, broadcast)
    shared = np.lib.stride_tricks.as_strided(base[:1], base.shape, (0,) + base.strides[1:], writeable=True)
    with pytest.raises(fakv.FakvError, match=r"`k_cache` has a zero stride \(0, 128, 64, 1\)"):
        _appending(shared, shared)
    assert not base.any()
    out = fakv.flash_attn_with_kvcache(np.ones((2, 1, 4, 64), np.float16), mapped, mapped, cache_seqlens=3)
    assert out.shape == (2, 1, 4, 64)           # (reading a read-only cache is fine)


def test_strides_of_partial_elements_are_refused():
    """A structured array's field steps by bytes that are not whole elements: strides in elements rounded down
    read the wrong memory (a batch row came back NaN)."""
    q, k, v = tensors()
    rec = np.zeros(2, [("x", bf16, k.shape[1:]), ("tag", "u1")])
    with pytest.raises(fakv.FakvError, match=r"`k_cache` has strides of \(16385, 256, 128, 2\) bytes, not whole "
                                             r"elements of 2 bytes"):
        fakv.flash_attn_with_kvcache(q, rec["x"], v, cache_seqlens=np.array([20, 30], np.int32))
    lens = np.zeros(2, [("n", np.int32), ("tag", "u1")])
    with pytest.raises(fakv.FakvError, match="`cache_seqlens` has strides of"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens["n"])


def test_scales_and_caps_as_float32_takes_them():
    """The kernels take softmax_scale and softcap as float32: a scale that rounds to 0 there weighs the keys
    as a scale of 0 does (it gave NaN everywhere); one past float32's range, an int too large for a float, or a
    softcap that float32 cannot hold, or whose reciprocal it cannot (a score of 0 gave 0 * inf = NaN), is refused
    by name (NaN, or an OverflowError from inside)."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(t.shape).astype(bf16) for t in tensors(s=32))
    tiny = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=20, softmax_scale=1e-46)
    zero = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=20, softmax_scale=0.0)
    assert np.isfinite(tiny.astype(np.float32)).all() and np.array_equal(tiny, zero)
    for scale in (3.5e38, -4e38, 10 ** 400):
        with pytest.raises(fakv.FakvError, match=r"`softmax_scale` must be finite in float32"):
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=20, softmax_scale=scale)
    for cap in (4e38, 10 ** 400, 1e-46, 1e-39, 2.9e-39):
        with pytest.raises(fakv.FakvError, match="`softcap` must be a finite number >= 0 that float32 holds"):
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=20, softcap=cap)
    # ALiBi's slopes at a scale they cannot be divided by in float32 (slope / scale was inf: NaN or keys lost)
    slopes = np.full(8, 0.5, np.float32)
    w = np.exp(-0.5 * np.abs(19 - np.arange(20)))
    want = (w / w.sum()) @ v[:, :20].astype(np.float32).repeat(4, axis=2).transpose(1, 0, 2, 3).reshape(20, -1)
    for scale in (2e-39, 1e-39):
        out, lse = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=20, softmax_scale=scale, alibi_slopes=slopes,
                                                return_softmax_lse=True)
        assert np.allclose(lse, np.log(w.sum()), atol=1e-4), scale
        assert np.allclose(out[:, 0].astype(np.float32).reshape(-1), want, atol=2e-2), scale
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=20, alibi_slopes=np.full(8, 1e38, np.float32))
    assert np.array_equal(out[:, 0], v[:, 19].repeat(4, axis=1))     # only the key at distance 0 weighs
    q[0, 0, 0] = 0                                      # scores of 0 (and tiny ones): cap * tanh(0) = 0
    small = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=20, softcap=2.95e-39)
    assert np.isfinite(small.astype(np.float32)).all()
    assert np.allclose(small[0, 0, 0].astype(np.float32), v[0, :20, 0].astype(np.float32).mean(0), atol=1e-2)


def test_a_capacity_past_int32_is_refused():
    """A paged cache of 2**21 pages of 1024 rows a sequence: 2**31 rows, past int32 (an OverflowError from
    inside when the lengths defaulted to the capacity)."""
    q = np.zeros((1, 1, 1, 16), bf16)
    cache = np.zeros((1, 1024, 1, 16), bf16)
    with pytest.raises(fakv.FakvError,
                       match=r"a sequence's cache holds 2147483648 rows; at most 2147483392 = 2\*\*31 - 256"):
        fakv.flash_attn_with_kvcache(q, cache, cache, block_table=np.zeros((1, 2 ** 21), np.int32))


def test_flags_must_be_bools():
    """causal and return_softmax_lse as FlashAttention's bindings take them: a str was taken as True."""
    q, k, v = tensors()
    for name in ("causal", "return_softmax_lse", "rotary_interleaved"):
        with pytest.raises(fakv.FakvError, match=f"`{name}` must be a bool, got 'no'"):
            fakv.flash_attn_with_kvcache(q, k, v, **{name: "no"})
    with pytest.raises(fakv.FakvError, match="`causal` must be a bool"):
        fakv.flash_attn_with_kvcache(q, k, v, causal=np.array([True, False]))
    out, lse = fakv.flash_attn_with_kvcache(q, k, v, causal=np.bool_(True), return_softmax_lse=np.True_)
    assert out.shape == q.shape and lse.shape == (2, 8, 1)
    # 0-d arrays too (the plan, cached by its arguments, could not hash one)
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(t.shape).astype(bf16) for t in tensors(sq=3))
    want = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=40, causal=True, rotary_interleaved=False)
    got = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=40, causal=np.array(True),
                                       rotary_interleaved=np.array(False), return_softmax_lse=np.array(False))
    assert np.array_equal(got, want)


def test_windows_over_a_cache_near_int32():
    """A window's bounds over a cache of 2**31 - 1024 rows (a block table of 2**21 - 1 pages of 1024): a
    left-only window's right bound (the capacity) or a right bound near it plus a query's position wrapped past
    int32, and every key was masked (zeros, LSE +inf). The same keys through a table of two pages agree. A
    window where the capacity and the queries pass int32 is refused."""
    rng = np.random.default_rng(0)
    k, v = (rng.standard_normal((2, 1024, 1, 16)).astype(bf16) for _ in range(2))
    q = rng.standard_normal((1, 2, 1, 16)).astype(bf16)
    big = np.zeros((1, 2 ** 21 - 1), np.int32)
    big[0, 1] = 1
    lens = np.array([2000], np.int32)
    for window, same in (((100, -1), (100, -1)), ((-1, 2 ** 31 - 1025), (-1, -1)), ((30, 2 ** 30), (30, -1))):
        out, lse = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=big, window_size=window,
                                                return_softmax_lse=True)
        want, want_lse = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=big[:, :2],
                                                      window_size=same, return_softmax_lse=True)
        assert np.isfinite(lse).all() and np.array_equal(out, want) and np.allclose(lse, want_lse), window
    q = np.zeros((1, 70000, 1, 16), bf16)
    page = np.zeros((1, 65536, 1, 16), bf16)
    with pytest.raises(fakv.FakvError, match="a window over a cache of 2147418112 rows and 70000 queries"):
        fakv.flash_attn_with_kvcache(q, page, page, block_table=np.zeros((1, 2 ** 15 - 1), np.int32),
                                     cache_seqlens=10, window_size=(5, 5))


def test_with_kernels_takes_kernels():
    with pytest.raises(fakv.FakvError, match="with_kernels: `decode` must be a @fakv.jit kernel"):
        fakv.with_kernels(decode="nope")
    with pytest.raises(fakv.FakvError, match="with_kernels: `combine` must be a @fakv.jit kernel"):
        fakv.with_kernels(combine=len)


def test_grids_stay_within_cudas_axes():
    """combine's grid is (heads, seqlen_q, batch): CUDA takes at most 65535 on y and z, so a call with more
    query rows or sequences than that runs unsplit (no combine), whatever num_splits asks."""
    from fakv import interface
    for batch, seqlen_q, splits in ((1, 70000, 0), (1, 66000, 8), (70000, 1, 4)):
        p = interface.plan(batch, seqlen_q, 8, 8, 128, "bf16", False, 0, 262144, False, splits)
        assert p["num_splits"] == 1 and all(n <= 65535 for n in p["decode_grid"][1:]), p["decode_grid"]
    p = interface.plan(1, 60000, 8, 8, 128, "bf16", False, 0, 262144, False, 8)
    assert p["num_splits"] == 8 and p["combine_grid"][1:] == (60000, 1)


def test_synchronize_works_on_the_cpu_path_without_torch():
    """fakv.synchronize() raises a pending report or returns, with or without torch (it imported torch: a
    ModuleNotFoundError on a machine without it; session 44's audit of api.md)."""
    import builtins
    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("no torch here")
        return real_import(name, *args, **kwargs)
    builtins.__import__ = no_torch
    try:
        assert fakv.synchronize() is None
    finally:
        builtins.__import__ = real_import


def test_pages_freed_behind_a_sliding_window_are_not_checked():
    """A sliding window over a paged cache whose pages wholly before every query's window were freed (entries
    -1): FlashAttention starts at the window's first key block and never looks them up; the host check refused
    the call (session 58's review). Pages from the one the window's first key is in are still checked, and the
    kernel, which reads whole key blocks from the window's first one, reports one it reads."""
    from attention_ref import attention
    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 2, 2, 64)).astype(np.float32).astype(bf16)
    k, v = (rng.standard_normal((64, 16, 1, 64)).astype(np.float32).astype(bf16) for _ in range(2))
    lens, window = np.array([1000], np.int32), (20, 0)            # queries at 998, 999: keys from 978, page 61
    table = np.arange(64, dtype=np.int32)[None, :].copy()
    want = attention(q.astype(np.float64), [k.reshape(-1, 1, 64)[:1000].astype(np.float64)],
                     [v.reshape(-1, 1, 64)[:1000].astype(np.float64)], [1000], True, 64 ** -0.5, window=window)[0]
    table[0, :58] = -1                                             # (the kernel's first key block starts at 960)
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=True,
                                       window_size=window)
    assert np.abs(out.astype(np.float64) - want).max() < 2e-2
    table[0, 61] = -1
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 61\] = -1: block_table entries used by cache_seqlens "
                                             r"\(from the window's first key's page\) must be in \[0, 64\)"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=True, window_size=window)
    new = np.ones((1, 40, 1, 64), bf16)       # 40 new keys at 900..939: the window from 918 (page 57), but
    table[0, 61], table[0, 56] = 61, -1      # page 56 receives keys 900..911: still checked
    k2, v2 = k.copy(), v.copy()
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 56\] = -1"):
        fakv.flash_attn_with_kvcache(q, k2, v2, k=new, v=new, cache_seqlens=np.array([900], np.int32),
                                     block_table=table, causal=True, window_size=window)
    assert (k2 == k).all() and (v2 == v).all()                     # (refused before anything was written)
    table[0, 56], table[0, 60] = 56, -1      # page 60: before the window, but in the kernel's first key block
    with pytest.raises(fakv.DataError, match=r"the kernel found bad data: block_table of batch row 0"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=True, window_size=window)
