"""FlashAttention's own kvcache test grids, ported (test_flash_attn_kvcache
of FlashAttention 2's tests/test_flash_attn.py and FlashAttention 3's
hopper/test_flash_attn.py: their parameters, input construction, reference
and tolerance rule, written here from their semantics), on the CPU path
against a float64 reference (kvcache_ref.py), with sizes a CI machine runs
in seconds: every feature of the GPU grids (test/gpu/test_kvcache.py) on
fewer, shorter sequences. A deterministic sample of the product.

Each case: the output against the reference (FlashAttention 2's max rule
and FlashAttention 3's mean rule), the LSE (+inf where no key), and the
caches after the append (v exactly, k exactly without rotary, within 1e-3
with it).
"""
import math
import zlib

import numpy as np
import pytest

import fakv
from attention_ref import NP_DTYPES
from kvcache_grid import appended_rows, case_id, sample
from kvcache_ref import check, dense, kvcache_reference

# FlashAttention 2's axes (CPU-sized sequences), and FlashAttention 3's page
# sizes, leftpad with paging and cache_batch_idx.
AXES = dict(
    dtype=("f16", "bf16"),
    num_splits=(1, 0, 3),
    mha_type=("mha", "mqa", "gqa"),
    new_kv=(False, True),
    alibi=(False, True),
    local=(False, True),
    causal=(False, True),
    seqlen_new_eq_seqlen_q=(True, False),
    rotary_interleaved=(False, True),
    rotary_fraction=(0.0, 0.5, 1.0),
    page_size=(None, 1, 4, 16),
    has_leftpad=(False, True),
    has_batch_idx=(False, True),
    d=(32, 59, 64, 80, 128),
    seqlens=((1, 64), (1, 99), (3, 40), (16, 48), (5, 128), (8, 8)),
)


CASES = sample(AXES, 120, 2026)


def make_case(c, seed):
    """FlashAttention's inputs for a case (numpy; its construction rules)."""
    rng = np.random.default_rng(seed)
    dtype = NP_DTYPES[c["dtype"]]
    sq, sk = c["seqlens"]
    d, batch, nheads = c["d"], 2, 6
    nheads_k = {"mha": 6, "mqa": 1, "gqa": 3}[c["mha_type"]]
    batch_cache = 4 if c["has_batch_idx"] else batch
    rotary_dim = math.floor(int(c["rotary_fraction"] * d) / 16) * 16
    window = (-1, -1) if not c["local"] else tuple(int(x) for x in rng.integers(0, sk, 2))
    seqlen_new = sq if c["seqlen_new_eq_seqlen_q"] else int(rng.integers(1, sq + 1))
    q = rng.standard_normal((batch, sq, nheads, d)).astype(dtype)
    k = v = None
    if c["new_kv"]:
        k = rng.standard_normal((batch, seqlen_new, nheads_k, d)).astype(dtype)
        v = rng.standard_normal((batch, seqlen_new, nheads_k, d)).astype(dtype)
    page = c["page_size"]
    table = None
    if page is None:
        k_cache = rng.standard_normal((batch_cache, sk, nheads_k, d)).astype(dtype)
        v_cache = rng.standard_normal((batch_cache, sk, nheads_k, d)).astype(dtype)
        seqlen_ro = sk
    else:
        # (with cache_batch_idx, FlashAttention 3's: a table row for each of batch_cache sequences, picked by it)
        num_blocks = math.ceil(sk / page) * batch_cache * 3
        k_cache = rng.standard_normal((num_blocks, page, nheads_k, d)).astype(dtype)
        v_cache = rng.standard_normal((num_blocks, page, nheads_k, d)).astype(dtype)
        table = rng.permutation(num_blocks).astype(np.int32).reshape(batch_cache, -1)
        seqlen_ro = num_blocks * page
    if c["new_kv"]:
        high = sk - (sq if (c["causal"] or c["local"]) and rotary_dim > 1 else seqlen_new) + 1
        seqlens = rng.integers(0, high, batch).astype(np.int32)
    else:
        seqlens = rng.integers(1, sk + 1, batch).astype(np.int32)
    leftpad = None
    if c["has_leftpad"]:
        leftpad = np.array([rng.integers(0, n) if n > 0 else 0 for n in seqlens], np.int32)
    batch_idx = rng.permutation(batch_cache)[:batch].astype(np.int32) if c["has_batch_idx"] else None
    cos = sin = None
    if rotary_dim:
        angle = rng.random((seqlen_ro, rotary_dim // 2)) * 2 * math.pi
        cos, sin = np.cos(angle).astype(dtype), np.sin(angle).astype(dtype)
    alibi = (rng.random((batch, nheads)) * 0.3).astype(np.float32) if c["alibi"] else None
    return dict(q=q, k_cache=k_cache, v_cache=v_cache, k=k, v=v, rotary_cos=cos, rotary_sin=sin,
                cache_seqlens=seqlens, cache_leftpad=leftpad, block_table=table, cache_batch_idx=batch_idx,
                causal=c["causal"], window_size=window, rotary_interleaved=c["rotary_interleaved"],
                alibi_slopes=alibi, num_splits=c["num_splits"])


def run_case(c, edit=None):
    args = make_case(c, zlib.crc32(case_id(c).encode()))
    if edit:
        edit(args)
    ref_out, ref_pt, ref_lse, k_ref, v_ref = kvcache_reference(
        args["q"], args["k_cache"], args["v_cache"], args["cache_seqlens"], k=args["k"], v=args["v"],
        cos=args["rotary_cos"], sin=args["rotary_sin"], leftpad=args["cache_leftpad"], table=args["block_table"],
        batch_idx=args["cache_batch_idx"], causal=args["causal"], window=args["window_size"],
        interleaved=args["rotary_interleaved"], alibi=args["alibi_slopes"], softcap=args.get("softcap", 0.0),
        scale=args.get("softmax_scale"))
    before = args["k_cache"].copy(), args["v_cache"].copy()
    out, lse = fakv.flash_attn_with_kvcache(**args, return_softmax_lse=True)
    # Nothing but the appended rows written (no rows at all without new keys), bit for bit.
    seqlens = np.broadcast_to(args["cache_seqlens"], (args["q"].shape[0],))
    kept = ~appended_rows(before[0].shape, seqlens, 0 if args["k"] is None else args["k"].shape[1],
                          args["block_table"], args["cache_batch_idx"])
    for was, cache in zip(before, (args["k_cache"], args["v_cache"])):
        assert np.array_equal(was[kept].view(np.uint16), cache[kept].view(np.uint16))
    ok, msg = check(out, ref_out, ref_pt, alibi=c["alibi"], fa3=c.get("grid") == "fa3")
    assert ok, msg
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isposinf(lse), ~finite)
    assert np.abs(lse[finite] - ref_lse[finite]).max() <= 1e-3
    if args["k"] is not None:
        page = args["k_cache"].shape[1]
        for i in range(args["q"].shape[0]):
            row = i if args["cache_batch_idx"] is None else int(args["cache_batch_idx"][i])
            kd = dense(args["k_cache"], args["block_table"], page, row)
            vd = dense(args["v_cache"], args["block_table"], page, row)
            assert np.array_equal(vd, v_ref[i])
            if args["rotary_cos"] is None:
                assert np.array_equal(kd, k_ref[i])
            else:
                assert np.allclose(kd.astype(np.float32), k_ref[i].astype(np.float32), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_flash_attn_kvcache(case):
    run_case(case)


def test_grid_covers_every_feature():
    """The sample holds every value of every axis."""
    for axis, values in AXES.items():
        assert {c[axis] for c in CASES} == set(values), axis
    assert any(c["page_size"] and c["has_leftpad"] for c in CASES)
    assert any(c["new_kv"] and c["rotary_fraction"] and c["page_size"] for c in CASES)
    assert any(c["new_kv"] and c["page_size"] and c["has_batch_idx"] for c in CASES)


def test_softmax_scale_near_float32s_largest():
    """A scale whose product with log2(e) float32 cannot hold (2.36e38 to 3.4e38, the documented range's top)
    weighs equal scores equally, as smaller ones do: every row was NaN (the online softmax's scale x log2(e)
    became inf; a review, session 39)."""
    q = np.full((1, 1, 2, 8), 0.01, NP_DTYPES["f16"])
    kc = np.full((1, 4, 1, 8), 0.01, NP_DTYPES["f16"])
    vc = np.arange(32, dtype=np.float32).reshape(1, 4, 1, 8).astype(NP_DTYPES["f16"])
    for scale in (2.3e38, 2.4e38, 3.0e38, 3.4e38):
        for splits in (1, 2):
            out, lse = fakv.flash_attn_with_kvcache(q, kc, vc, softmax_scale=scale, num_splits=splits,
                                                    return_softmax_lse=True)
            assert np.array_equal(out[0, 0, 0].astype(np.float32), np.arange(12, 20, dtype=np.float32)), scale
            score = np.float32(scale) * np.float32(8 * 0.01 ** 2)     # (f16 0.01 is 0.01000213623046875)
            assert np.isfinite(lse).all() and np.allclose(lse, score + np.log(4), rtol=1e-3), (scale, lse)


@pytest.mark.parametrize("scale", [0.0, -0.3])
@pytest.mark.parametrize("option", ["plain", "causal", "alibi", "window", "softcap", "paged", "splits"])
def test_softmax_scale_zero_or_negative(scale, option):
    """softmax_scale <= 0 is defined math (0: uniform weights over the visible
    keys; < 0: the smallest q.k weigh most): lengths that are not a multiple
    of the key block, every mask; once all NaN (issue 10)."""
    rng = np.random.default_rng(7)
    dt = NP_DTYPES["bf16"]
    b, sq, h, hk, d, s = 2, 3, 4, 2, 64, 80
    q = rng.standard_normal((b, sq, h, d)).astype(dt)
    kc, vc = (rng.standard_normal((b, s, hk, d)).astype(dt) for _ in range(2))
    lens = np.array([37, 71], np.int32)
    kw = dict(causal=option == "causal", window=(9, 2) if option == "window" else (-1, -1),
              alibi=rng.random((b, h)).astype(np.float32) if option == "alibi" else None,
              softcap=5.0 if option == "softcap" else 0.0)
    table = None
    if option == "paged":
        table = np.array([[3, 0, 5, 1, 4], [2, 6, 7, 8, 9]], np.int32)
        pages = np.zeros((10, 16, hk, d), dt)
        for i in range(b):
            for j, p in enumerate(table[i]):
                pages[p] = kc[i, 16 * j:16 * (j + 1)]
        kc, vc = pages, pages.copy()
        for i in range(b):
            for j, p in enumerate(table[i]):
                vc[p] = rng.standard_normal((16, hk, d)).astype(dt)
    out_ref, out_pt, lse_ref, _, _ = kvcache_reference(q, kc, vc, lens, table=table, scale=scale, **kw)
    out, lse = fakv.flash_attn_with_kvcache(
        q, kc, vc, cache_seqlens=lens, block_table=table, softmax_scale=scale, causal=kw["causal"],
        window_size=kw["window"], alibi_slopes=kw["alibi"], softcap=kw["softcap"],
        num_splits=3 if option == "splits" else 1, return_softmax_lse=True)
    assert not np.isnan(out.astype(np.float32)).any() and not np.isnan(lse).any()
    ok, msg = check(out, out_ref, out_pt, alibi=option == "alibi")
    assert ok, msg
    assert np.abs(lse - lse_ref).max() <= 1e-3


@pytest.mark.parametrize("causal", [False, True])
def test_alibi_slopes_of_one_row_for_every_sequence(causal):
    """alibi_slopes of shape (nheads,), which FlashAttention allows besides (batch, nheads): the same slopes
    for every sequence, checked against the reference given them broadcast (the grid passes (batch, nheads)
    only; session 44's audit)."""
    rng = np.random.default_rng(11)
    dt = NP_DTYPES["bf16"]
    b, sq, h, hk, d, s = 3, 2, 4, 2, 64, 96
    q = rng.standard_normal((b, sq, h, d)).astype(dt)
    kc, vc = (rng.standard_normal((b, s, hk, d)).astype(dt) for _ in range(2))
    lens = np.array([37, 96, 5], np.int32)
    slopes = (rng.random(h) * 0.5).astype(np.float32)
    out_ref, out_pt, lse_ref, _, _ = kvcache_reference(q, kc, vc, lens, causal=causal,
                                                       alibi=np.broadcast_to(slopes, (b, h)).copy())
    out, lse = fakv.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens, causal=causal, alibi_slopes=slopes,
                                            return_softmax_lse=True)
    ok, msg = check(out, out_ref, out_pt, alibi=True)
    assert ok, msg
    assert np.abs(lse - lse_ref).max() <= 1e-3
    plain, _, _, _, _ = kvcache_reference(q, kc, vc, lens, causal=causal)
    assert np.abs(out.astype(np.float32) - plain).max() > 0.05     # (the slopes count)


APPEND_CASES = [c for c in CASES if c["new_kv"] and c["rotary_fraction"]][:6]


@pytest.mark.parametrize("case", APPEND_CASES, ids=[case_id(c) for c in APPEND_CASES])
def test_append_kernel_route(case, monkeypatch):
    """The other route for appending calls: kernels/append.py's kernel before
    the decode (FAKV_FUSED_APPEND=0, and what head dims above 128 run)
    against the same reference as decode appending itself."""
    from fakv import interface
    monkeypatch.setattr(interface, "_FUSED_APPEND", False)
    run_case(case)


def test_append_route_follows_the_splits(monkeypatch):
    """Who appends, as planned (FAKV_FUSED_APPEND unset): decode itself when the call has several splits,
    kernels/append.py's kernel before the plain decode when it has one (measured faster there); with
    FAKV_COMBINE_APPENDS=0 for decode steps (test_decode_step_routes)."""
    from fakv import interface
    monkeypatch.setattr(interface, "_FUSED_APPEND", None)
    monkeypatch.setattr(interface, "_COMBINE_APPENDS", False)
    launched, real = [], interface._append
    monkeypatch.setattr(interface, "_append", lambda *a, **kw: launched.append(True) or real(*a, **kw))
    for splits, first in ((1, True), (3, False)):
        launched.clear()
        run_case(dict(APPEND_CASES[0], num_splits=splits))
        assert launched == ([True] if first else []), splits


@pytest.mark.parametrize("d", [160, 256])
def test_append_above_head_dim_128(d):
    for case in APPEND_CASES[:2]:
        run_case(dict(case, d=d))


@pytest.mark.parametrize("page,splits,window", [(16, 3, False), (None, 1, True), (64, 0, False)])
def test_many_new_keys(page, splits, window):
    """More new keys than one of decode's 16-row new-key tiles (37, and as
    many queries: several query blocks), rotated, with left padding, into
    caches whose rows are split over several splits."""
    base = next(c for c in CASES if c["new_kv"])
    case = dict(base, seqlens=(37, 160), seqlen_new_eq_seqlen_q=True, page_size=page, num_splits=splits,
                rotary_fraction=0.5, rotary_interleaved=False, has_leftpad=True, has_batch_idx=False,
                causal=not window, local=window, d=64, alibi=False)
    run_case(case)


@pytest.mark.parametrize("page,d,interleaved", [(None, 64, False), (16, 128, True), (64, 128, False)])
def test_new_keys_in_blocks(page, d, interleaved, monkeypatch, request):
    """Swapped dots (FAKV_SWAP_AB=1): an appending call attends its new keys a key block (64) at a time, rotated
    16 rows at a time (kernels/append.py's new_rows): 70 new keys for one query, a whole block and then 6 keys
    (the block's other pieces not loaded), with left padding, rotary and causal."""
    from fakv import interface
    monkeypatch.setattr(interface, "_SWAP_AB", True)
    interface._plan.cache_clear()
    request.addfinalizer(interface._plan.cache_clear)
    planned, real = [], interface.plan
    monkeypatch.setattr(interface, "plan", lambda *a, **kw: planned.append(real(*a, **kw)) or planned[-1])
    base = next(c for c in CASES if c["new_kv"])
    case = dict(base, seqlens=(1, 160), page_size=page, d=d, rotary_fraction=1.0, rotary_interleaved=interleaved,
                has_leftpad=True, has_batch_idx=page is None, causal=True, local=False, alibi=False, num_splits=0)

    def seventy(args):
        rng = np.random.default_rng(70)
        shape = args["k"].shape[:1] + (70,) + args["k"].shape[2:]
        args["k"], args["v"] = (rng.standard_normal(shape).astype(args["k"].dtype) for _ in range(2))
        args["cache_seqlens"] = np.array([90, 17], np.int32)
        args["cache_leftpad"] = np.array([3, 0], np.int32)
    run_case(case, seventy)
    assert planned[-1]["decode"]["NEW_N"] == 64 and planned[-1]["decode_options"]["swap_ab"]


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("page", [None, 16])
def test_left_padding_past_the_cached_keys(fused, page, monkeypatch):
    """cache_leftpad in (cache_seqlens, cache_seqlens + seqlen_new]: the new
    keys before the padding are appended but not attended (both routes)."""
    from fakv import interface
    monkeypatch.setattr(interface, "_FUSED_APPEND", fused)
    base = next(c for c in CASES if c["new_kv"])
    case = dict(base, seqlens=(5, 64), seqlen_new_eq_seqlen_q=True, page_size=page, has_leftpad=True,
                has_batch_idx=False, rotary_fraction=0.5, d=64, num_splits=2)

    def pad_past(args):
        args["cache_leftpad"] = (args["cache_seqlens"] + np.array([1, 5], np.int32)).astype(np.int32)
    run_case(case, pad_past)


@pytest.mark.parametrize("page,new_kv", [(4, False), (16, True), (1, True)])
def test_pages_before_the_padding_may_be_anything(page, new_kv):
    """Pages wholly before cache_leftpad are never looked up (FlashAttention 3's row + leftpad): block-table
    entries of -1 there are accepted by the host check (which refused them) and never read."""
    base = next(c for c in CASES if c["new_kv"] == new_kv)
    case = dict(base, seqlens=(1, 160), page_size=page, has_leftpad=True, has_batch_idx=True, num_splits=3,
                local=False)

    def unused_pages(args):
        args["cache_seqlens"] = np.array([150, 90], np.int32)[:len(args["cache_seqlens"])]
        args["cache_leftpad"] = np.array([37, 64], np.int32)[:len(args["cache_seqlens"])]
        for b, row in enumerate(args["cache_batch_idx"]):
            args["block_table"][row, :args["cache_leftpad"][b] // page] = -1
        assert (args["block_table"] == -1).any()
    run_case(case, unused_pages)


def test_pages_of_new_rows_before_the_padding_are_checked():
    """A padding past cache_seqlens (up to cache_seqlens + seqlen_new): the new rows before it are still written
    through the block table, so their pages are checked on the host (a review: the exemption of pages before
    the padding let a -1 there through, and the kernel had appended the other rows when it reported it)."""
    rng = np.random.default_rng(0)
    q = rng.standard_normal((1, 1, 1, 64)).astype(np.float16)
    kc = rng.standard_normal((4, 16, 1, 64)).astype(np.float16)
    k = rng.standard_normal((1, 8, 1, 64)).astype(np.float16)
    table = np.array([[-1, 1, 2, 3]], np.int32)       # rows 10..17 appended: rows 10..15 through table[0, 0]
    before = kc.copy()
    with pytest.raises(fakv.DataError, match=r"block_table\[0, 0\] = -1"):
        fakv.flash_attn_with_kvcache(q, kc, kc.copy(), k=k, v=k, cache_seqlens=np.array([10], np.int32),
                                     cache_leftpad=np.array([17], np.int32), block_table=table)
    assert np.array_equal(kc, before)


@pytest.fixture
def combine_runs(monkeypatch):
    """A list that gets an entry each time a call takes the combine route (kernels/combine_new.py)."""
    from fakv import interface
    runs, real = [], interface._combine_appending
    monkeypatch.setattr(interface, "_combine_appending", lambda *a, **kw: runs.append(True) or real(*a, **kw))
    return runs


@pytest.fixture
def append_runs(monkeypatch):
    """A list that gets an entry each time a call runs kernels/append.py's kernel before the decode."""
    from fakv import interface
    runs, real = [], interface._append
    monkeypatch.setattr(interface, "_append", lambda *a, **kw: runs.append(True) or real(*a, **kw))
    return runs


STEP_CASES = [c for c in CASES if c["new_kv"] and c["seqlens"][0] == 1 and not c["local"] and not c["alibi"]
              and not c["has_leftpad"]][:6]


@pytest.mark.parametrize("route", ["combine", "decode", "append kernel"])
@pytest.mark.parametrize("case", STEP_CASES, ids=[case_id(c) for c in STEP_CASES])
def test_decode_step_routes(case, route, monkeypatch, combine_runs, append_runs):
    """A decode step that appends (one query row, several splits): combine appends and attends the new keys
    (kernels/combine_new.py, the default), or decode appends itself, or append.py's kernel runs first; each
    against the reference, and the route asked for is the one that ran."""
    from fakv import interface
    monkeypatch.setattr(interface, "_COMBINE_APPENDS", route == "combine")
    monkeypatch.setattr(interface, "_FUSED_APPEND", route == "decode")
    run_case(dict(case, seqlens=(1, 256), num_splits=3))
    assert combine_runs == ([True] if route == "combine" else [])
    assert append_runs == ([True] if route == "append kernel" else [])


@pytest.mark.parametrize("case", STEP_CASES[:2], ids=[case_id(c) for c in STEP_CASES[:2]])
def test_decode_step_with_merging_splits(case, monkeypatch, combine_runs):
    """FAKV_MERGE_SPLITS=1 (decode's last split merges) leaves a decode step that appends to combine: the new
    keys appended and attended, against the reference (merging in decode had dropped combine, and the
    append with it)."""
    from fakv import prepare
    monkeypatch.setattr(prepare, "MERGE_SPLITS", True)
    run_case(dict(case, seqlens=(1, 256), num_splits=3))
    assert combine_runs == [True]


@pytest.mark.parametrize("new,page,d,mha", [(3, None, 64, "gqa"), (17, 16, 128, "mqa"), (40, 4, 32, "mha")])
def test_decode_step_with_several_new_keys(new, page, d, mha, combine_runs):
    """One query row and several new keys (more than the combine's NEW_N at a time), rotated, all attended."""
    base = next(c for c in CASES if c["new_kv"])
    case = dict(base, seqlens=(1, 128), page_size=page, d=d, mha_type=mha, rotary_fraction=0.5, causal=True,
                local=False, alibi=False, has_leftpad=False, has_batch_idx=page is None, num_splits=3)

    def more(args):
        rng = np.random.default_rng(new)
        shape = args["k"].shape[:1] + (new,) + args["k"].shape[2:]
        args["k"], args["v"] = (rng.standard_normal(shape).astype(args["k"].dtype) for _ in range(2))
        args["cache_seqlens"] = np.array([128 - new, 30], np.int32)
    run_case(case, more)
    assert combine_runs == [True]


@pytest.mark.parametrize("change", ["one split", "two queries", "window", "leftpad", "alibi", "softcap"])
def test_decode_step_route_only_where_it_applies(change, combine_runs):
    """combine_new.py attends the new keys of one query row with no window, ALiBi, padding or softcap, when the
    plain call has splits; the others keep the routes before it (and still pass: combine_new.py scores without
    softcap, 0.11 off at softcap 2)."""
    base = next(c for c in CASES if c["new_kv"])
    case = dict(base, seqlens=(2 if change == "two queries" else 1, 128), page_size=16, d=64, rotary_fraction=0.5,
                causal=False, local=change == "window", alibi=change == "alibi", has_leftpad=change == "leftpad",
                has_batch_idx=False, num_splits=1 if change == "one split" else 3, seqlen_new_eq_seqlen_q=True)
    run_case(case, (lambda args: args.update(softcap=2.0)) if change == "softcap" else None)
    assert combine_runs == []


@pytest.mark.parametrize("page", [None, 16])
def test_decode_step_with_a_scale_near_float32s_largest(page, combine_runs):
    """An appending decode step (one query row, splits) with a scale whose product with log2(e) float32 cannot
    hold keeps decode's prescaled route (combine_new.py's online softmax made 128 of 512 outputs NaN). Every
    key holds one value row per kv head, so any weighing gives that row (the splits' LSEs, near 1e36, cannot
    hold log(keys) in float32: the split weights are off there, as FlashAttention 2's would be)."""
    f16 = NP_DTYPES["f16"]
    rng = np.random.default_rng(0)
    q = np.full((2, 1, 8, 64), 2.0 ** -7, f16)          # q.k = 2**-8 exactly, in any order of the sum
    shape = (2, 128, 2, 64) if page is None else (16, 16, 2, 64)
    kc = np.full(shape, 2.0 ** -7, f16)
    row = rng.standard_normal((2, 64)).astype(f16)      # (kv head, channel)
    vc = np.broadcast_to(row, shape).copy()
    table = None if page is None else np.arange(16, dtype=np.int32).reshape(2, 8)
    new_k, new_v = np.full((2, 1, 2, 64), 2.0 ** -7, f16), np.broadcast_to(row, (2, 1, 2, 64)).copy()
    out, lse = fakv.flash_attn_with_kvcache(q, kc, vc, k=new_k, v=new_v, cache_seqlens=np.array([100, 37], np.int32),
                                            block_table=table, softmax_scale=3e38, num_splits=3,
                                            return_softmax_lse=True)
    assert combine_runs == []
    got = out[:, 0].astype(np.float32).reshape(2, 2, 4, 64)
    assert np.allclose(got, row.astype(np.float32)[None, :, None, :], atol=2e-3), np.abs(got - row[None, :, None]).max()
    assert np.isfinite(lse).all() and np.allclose(lse, np.float32(3e38) * 2.0 ** -8, rtol=1e-5)


def test_decode_step_refuses_a_wrapping_length(monkeypatch, combine_runs):
    """The combine route: a length whose new keys would wrap int32 is reported for its batch row, and its rows
    are not written; the other row's are."""
    monkeypatch.setenv("FAKV_CHECK_DATA", "0")
    bf16 = NP_DTYPES["bf16"]
    q = np.ones((2, 1, 8, 64), bf16)
    k = np.zeros((16, 16, 2, 64), bf16)
    new = np.ones((2, 2, 2, 64), bf16)
    table = np.arange(16, dtype=np.int32).reshape(2, 8)
    with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 0"):
        fakv.flash_attn_with_kvcache(q, k, k.copy(), k=new, v=new, block_table=table, num_splits=3,
                                     cache_seqlens=np.array([2**31 - 1, 3], np.int32))
    assert combine_runs == [True]
    assert not k[:8].any() and k[8].any()


@pytest.mark.parametrize("route", ["read", "combine appends", "decode appends", "append kernel"])
def test_paged_cache_batch_idx_picks_block_table_rows(route, combine_runs, append_runs, monkeypatch):
    """FlashAttention 3's relaxation (shared/design/semantics.md): with a paged cache, sequence i reads and
    appends through block_table's row cache_batch_idx[i]; the table may hold more rows than the batch. Each
    of the routes the new keys take, against the reference (which reads the same rows)."""
    base = next(c for c in CASES if c["new_kv"])
    case = dict(base, seqlens=(1, 128), page_size=16, d=64, rotary_fraction=0.5, causal=True, local=False,
                alibi=False, has_leftpad=False, has_batch_idx=True, num_splits=3, seqlen_new_eq_seqlen_q=True,
                new_kv=route != "read")
    if route == "read":
        case["rotary_fraction"] = 0.0
    if route in ("decode appends", "append kernel"):
        from fakv import interface
        case.update(seqlens=(2, 128))
        monkeypatch.setattr(interface, "_FUSED_APPEND", route == "decode appends")
    run_case(case)
    assert combine_runs == ([True] if route == "combine appends" else [])
    assert append_runs == ([True] if route == "append kernel" else [])


def test_paged_cache_batch_idx_errors(monkeypatch):
    """An index outside block_table's rows: refused by the host checks, or (FAKV_CHECK_DATA=0) reported by the
    kernel for that sequence, which reads nothing through it; the other sequences' rows are appended."""
    bf16 = NP_DTYPES["bf16"]
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 1, 4, 64)).astype(bf16)
    kc = np.zeros((12, 16, 2, 64), bf16)
    table = np.arange(12, dtype=np.int32).reshape(4, 3)
    new = np.ones((2, 1, 2, 64), bf16)
    lens = np.array([5, 9], np.int32)
    call = lambda idx, **kw: fakv.flash_attn_with_kvcache(  # noqa: E731
        q, kc, kc.copy(), cache_seqlens=lens, block_table=table, cache_batch_idx=np.array(idx, np.int32), **kw)
    for idx in ([3, 4], [-1, 0]):
        with pytest.raises(fakv.DataError, match=r"cache_batch_idx\[\d\] = -?\d: cache_batch_idx entries must be "
                                                 r"in \[0, 4\) \(block_table's rows\)"):
            call(idx)
    table[2, 0] = 99
    with pytest.raises(fakv.DataError, match=r"block_table\[2 \(cache_batch_idx\[1\]\), 0\] = 99: block_table "
                                             r"entries used by cache_seqlens must be in \[0, 12\)"):
        call([0, 2], k=new, v=new)
    table[2, 0] = 6
    with pytest.raises(ValueError, match="`cache_seqlens` must be given with `k` and `v`"):
        fakv.flash_attn_with_kvcache(q, kc, kc.copy(), new, new, block_table=table,
                                     cache_batch_idx=np.array([0, 1], np.int32))
    with pytest.raises(ValueError, match="`block_table` has no rows for cache_batch_idx to pick"):
        fakv.flash_attn_with_kvcache(q, kc, kc, cache_seqlens=lens, block_table=table[:0],
                                     cache_batch_idx=np.array([0, 1], np.int32))
    monkeypatch.setenv("FAKV_CHECK_DATA", "0")
    with pytest.raises(fakv.DataError, match="block_table of batch row 1 has a block-table entry"):
        call([1, 7], k=new, v=new)
    assert kc[table[1]].any() and not kc[np.setdiff1d(np.arange(12), table[1])].any()   # row 0's new key only
