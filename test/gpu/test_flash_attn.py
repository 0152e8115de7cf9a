"""GPU tests of fakv.flash_attn_with_kvcache (kernels/decode.py and
kernels/combine.py) against FlashAttention's tolerance rule (reference.py).
Skipped without a GPU.

The grid: bf16 and f16; head dims 64, 96, 128, 192, 256; GQA 32/8, MQA 32/1,
MHA 32/32; a contiguous cache and pages of 1, 16, 64 and 256 rows;
seqlen_q 1 and 3 (causal); num_splits 1, 3 and 0 (the heuristic); sequence
lengths 1, the full cache and one in between. Then OPTIONS: softcap,
window_size, alibi_slopes ((heads,) and (batch, heads)) and cache_batch_idx,
alone and together, on a few of those cases; decode merging its own splits
(FAKV_MERGE_SPLITS) and small pages gathered (FAKV_GATHER_PAGES) on samples.

    python -m pytest test/gpu/test_flash_attn.py         # on the GPU machine
    python test/gpu/test_flash_attn.py [--compile-only]  # a summary table / fill the kernel cache
"""
import itertools
import math
import os
import sys
import zlib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import source_tree  # noqa: E402,F401  (the source tree's fakv when it is built, else the installed one)

try:
    import torch
except ImportError:                     # compile-only runs need no torch
    torch = None
pytestmark = pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="needs torch and a GPU")

DTYPES = ("bf16", "f16")
HEAD_DIMS = (64, 96, 128, 192, 256)
HEADS = ((32, 8), (32, 1), (32, 32))
CACHES = (None, 1, 16, 64, 256)
QUERIES = ((1, False), (3, True))
SPLITS = (1, 3, 0)
CASES = list(itertools.product(DTYPES, HEAD_DIMS, HEADS, CACHES, QUERIES))


def case_id(c):
    dtype, d, (h, hk), page, (sq, causal) = c
    return f"{dtype}-d{d}-h{h}kv{hk}-{'contig' if page is None else f'page{page}'}-sq{sq}{'c' if causal else ''}"


def make_inputs(case, lib, salt=0):
    """Inputs of a case, as torch CUDA tensors (lib = torch) or numpy arrays of
    the same dtypes and shapes (lib = numpy, for compile-only runs); `salt`
    draws other values (runs of one case in a row: a kernel that leaves its
    output unwritten must not pass on the previous run's, which torch's
    allocator hands back)."""
    dtype, d, (h, hk), page, (sq, causal) = case
    import numpy as np
    rng = np.random.default_rng(zlib.crc32(case_id(case).encode()) + salt)
    batch, s_full = 3, 320
    seqlens = np.array([1, s_full, int(rng.integers(2, s_full))], np.int32)
    if page is None:
        shape, table = (batch, s_full, hk, d), None
    else:
        max_pages = math.ceil(s_full / page)
        num_pages = batch * max_pages + 5
        table = rng.permutation(num_pages)[: batch * max_pages].astype(np.int32).reshape(batch, max_pages)
        for i, n in enumerate(seqlens):
            table[i, math.ceil(n / page):] = -1
        shape = (num_pages, page, hk, d)
    if lib is np:
        import ml_dtypes
        nd = ml_dtypes.bfloat16 if dtype == "bf16" else np.float16
        q, k, v = np.zeros((batch, sq, h, d), nd), np.zeros(shape, nd), np.zeros(shape, nd)
        return q, k, v, seqlens, table
    td = torch.bfloat16 if dtype == "bf16" else torch.float16
    g = torch.Generator().manual_seed(zlib.crc32(case_id(case).encode()) + salt)
    q = torch.randn((batch, sq, h, d), generator=g).to(td).cuda()
    k = torch.randn(shape, generator=g).to(td).cuda()
    v = torch.randn(shape, generator=g).to(td).cuda()
    return q, k, v, torch.from_numpy(seqlens).cuda(), None if table is None else torch.from_numpy(table).cuda()


def option_kwargs(option, case, lib):
    """FlashAttention options of an OPTIONS case: (API kwargs, reference
    kwargs, cache rows picked by cache_batch_idx or None), as `lib` arrays."""
    import numpy as np
    dtype, d, (h, hk), page, (sq, causal) = case
    rng = np.random.default_rng(zlib.crc32(option.encode()))
    kw, ref = {}, {}
    if option in ("softcap", "all"):
        kw["softcap"] = ref["fa_softcap"] = 5.0
    if option in ("window", "all"):
        kw["window_size"] = ref["window"] = (37, 5) if not causal else (20, -1)
    if option in ("alibi", "all", "alibi_batch"):
        slopes = rng.uniform(0.01, 0.5, (3, h) if option == "alibi_batch" else h).astype(np.float32)
        full = np.broadcast_to(slopes, (3, h)).copy()
        kw["alibi_slopes"] = slopes if lib is np else torch.from_numpy(slopes).cuda()
        ref["alibi"] = None if lib is np else torch.from_numpy(full)
    rows = None
    if option in ("batch_idx", "all") and page is None:
        rows = np.array([2, 0, 1], np.int32)
        kw["cache_batch_idx"] = rows if lib is np else torch.from_numpy(rows).cuda()
    return kw, ref, rows


def run_case(case, splits, cache_seqlens=None, softmax_scale=None, option=None, salt=None):
    """One case against the reference; `cache_seqlens` an int to pass one
    length for every sequence (else the case's per-sequence tensor);
    `option` one of OPTIONS' FlashAttention options; inputs salted by the
    split count unless `salt` is given (make_inputs)."""
    import fakv
    from reference import attention_ref, check, gather_cache
    dtype, d, (h, hk), page, (sq, causal) = case
    q, k, v, lens, table = make_inputs(case, torch, 1000 + splits if salt is None else salt)
    if cache_seqlens is not None:
        lens = torch.full_like(lens, cache_seqlens)
    kw, ref_kw, rows = option_kwargs(option, case, torch) if option else ({}, {}, None)
    if "softcap" in kw:
        q = q * 2                                   # scores large enough for the cap to matter
    call = lambda want_lse: fakv.flash_attn_with_kvcache(  # noqa: E731
        q, k, v, cache_seqlens=lens if cache_seqlens is None else cache_seqlens, block_table=table, causal=causal,
        softmax_scale=softmax_scale, num_splits=splits, return_softmax_lse=want_lse, **kw)
    out, lse = call(True)
    alone = call(False)          # without the LSE too (the default; the workspace laid out without it)
    torch.cuda.synchronize()
    if rows is not None:
        k, v = k[torch.from_numpy(rows).long().cuda()], v[torch.from_numpy(rows).long().cuda()]
    if table is None:
        ks, vs = k, v
    else:
        ks, vs = gather_cache(k, table, lens, page), gather_cache(v, table, lens, page)
    scale = 1 / math.sqrt(d) if softmax_scale is None else softmax_scale
    ref, lse_ref = attention_ref(q, ks, vs, lens, causal, scale, upcast=True, **ref_kw)
    pt, _ = attention_ref(q, ks, vs, lens, causal, scale, upcast=False, **ref_kw)
    ok, msg = check(out, ref, pt, "out")
    alone_ok, alone_msg = check(alone, ref, pt, "out without the LSE")
    ok, msg = ok and alone_ok, msg if alone_ok else f"{msg}; {alone_msg}"
    finite = torch.isfinite(lse_ref)
    lse_err = (lse[finite] - lse_ref[finite]).abs().max().item()
    ok = ok and lse_err <= 2e-3 and torch.equal(torch.isposinf(lse), ~finite) and torch.isfinite(out).all().item()
    # Bad data a kernel reported (a table entry it masked: the output can still be right) raised here, under this
    # case's name, not at some later call of the worker's (or never, for its last case).
    fakv.check_errors()
    return ok, f"{msg}; lse max err {lse_err:.1e}"


# The arguments the grid leaves at one value: cache_seqlens as an int, a
# softmax_scale, seqlen_q > 1 without causal (case, int seqlens, scale).
# Lengths stay within every sequence's mapped pages (the shortest maps 1 row).
EXTRA = [(("bf16", 128, (32, 8), None, (4, False)), 200, 0.05),
         (("f16", 64, (32, 1), None, (2, True)), 320, 0.3),
         (("bf16", 256, (32, 32), None, (1, False)), 77, None),
         (("f16", 128, (32, 8), 16, (5, False)), None, 0.02)]


# FlashAttention's options (softcap, window_size, alibi_slopes, cache_batch_idx).
OPTIONS = [(("bf16", 128, (32, 8), 256, (1, False)), o) for o in ("softcap", "window", "alibi", "alibi_batch", "all")]
OPTIONS += [(("f16", 64, (32, 1), 16, (3, True)), o) for o in ("window", "alibi", "all")]
OPTIONS += [(("bf16", 128, (32, 8), None, (1, False)), o) for o in ("batch_idx", "all")]
OPTIONS += [(("bf16", 256, (32, 32), None, (3, True)), o) for o in ("alibi", "softcap")]
OPTIONS += [(("f16", 96, (32, 8), 1, (2, False)), "all")]
# Eight queries, not causal: window (37, 5) hides the last keys from queries 0 and 1 (bottom-right aligned).
OPTIONS += [(("bf16", 128, (32, 8), 64, (8, False)), "window")]


@pytest.mark.parametrize("splits", SPLITS)
@pytest.mark.parametrize("option", OPTIONS, ids=[f"{case_id(c)}-{o}" for c, o in OPTIONS])
def test_options(option, splits):
    case, name = option
    ok, msg = run_case(case, splits, option=name)
    assert ok, msg


@pytest.mark.parametrize("splits", SPLITS)
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_flash_attn_with_kvcache(case, splits):
    ok, msg = run_case(case, splits)
    assert ok, msg


@pytest.mark.parametrize("splits", SPLITS)
@pytest.mark.parametrize("extra", EXTRA, ids=[f"{case_id(c)}-len{n}-scale{sc}" for c, n, sc in EXTRA])
def test_int_seqlens_and_scale(extra, splits):
    case, n, scale = extra
    ok, msg = run_case(case, splits, n, scale)
    assert ok, msg


# FAKV_MERGE_SPLITS: decode merges its own splits (one launch; fl.atomic_add
# counts a row's finished splits). A sample of the grid and an all-options
# case, each call twice (the second on the stream's same counters: they must
# have been left at 0; merging calls are not kept for the fast path).
MERGE_CASES = [(c, None) for c in CASES[::7]] + [(("bf16", 128, (32, 8), 256, (1, False)), "all"),
                                                  (("f16", 64, (32, 1), 16, (3, True)), "all")]


@pytest.mark.parametrize("case,option", MERGE_CASES, ids=[f"{case_id(c)}-{o}" for c, o in MERGE_CASES])
def test_merged_splits(case, option, monkeypatch):
    from fakv import prepare
    monkeypatch.setattr(prepare, "MERGE_SPLITS", True)     # (a prepared call's key holds the mode)
    merged, real = [], prepare.call

    def recorded(*args, **kwargs):                          # (decode's constexprs: the plan merged, or this
        merged.append(args[2]["MERGE"])                     # tested the plain grid: interface's merge is off
        return real(*args, **kwargs)                        # with a cluster or when combine appends)
    monkeypatch.setattr(prepare, "call", recorded)
    for i in range(2):                                      # (other inputs: the output must be written again)
        ok, msg = run_case(case, 3, option=option, salt=i)
        assert ok, msg
    assert merged and all(merged), merged


# FAKV_GATHER_PAGES=1: pages smaller than a key block gathered by decode's producer threads (cp.async), not by
# a TMA box per page (planned by default only for large calls: interface._GATHER_PAGES). A third of the grid's
# cases in pages of 1 and 16, one split and the heuristic's, and an all-options case. The prepared calls and
# plans made meanwhile are dropped after (their keys do not hold the mode).
GATHER_CASES = [(c, None) for c in CASES if c[3] in (1, 16)][::3] + [(("f16", 64, (32, 1), 16, (3, True)), "all")]


@pytest.mark.parametrize("case,option", GATHER_CASES, ids=[f"{case_id(c)}-{o}" for c, o in GATHER_CASES])
def test_gathered_pages(case, option, monkeypatch):
    import functools
    from fakv import interface, prepare, recipes
    monkeypatch.setattr(interface, "_GATHER_PAGES", True)
    # (a recipe another test stored for the call is keyed by the environment's switches, not this one: it ran
    # that test's plan, the TMA path, here)
    monkeypatch.setattr(recipes, "ENABLED", False)
    prepare.CALLS.clear()
    interface._plan.cache_clear()
    plans, real = [], interface._plan

    @functools.wraps(real)
    def seen(*args, **kwargs):              # (the plans the calls ran: gathered, or this tested the TMA path)
        plans.append(real(*args, **kwargs))
        return plans[-1]
    seen.cache_clear = real.cache_clear
    monkeypatch.setattr(interface, "_plan", seen)
    try:
        for splits in (1, 0):
            plans.clear()
            ok, msg = run_case(case, splits, option=option)
            assert ok, msg
            assert plans and all(p["decode_options"].get("gather_pages") for p in plans), plans
    finally:
        prepare.CALLS.clear()
        interface._plan.cache_clear()


def test_strided_index_tensors_are_copied():
    """A block_table strided along its last dimension and a strided cache_batch_idx are copied, as FlashAttention's
    maybe_contiguous does: the output of their contiguous copies, call after call (none kept by the fast path,
    which would read the strided memory as contiguous), and what the strided memory holds when it changes."""
    import fakv
    q, k, v, lens, table = make_inputs(("bf16", 128, (32, 8), 16, (1, False)), torch)
    wide = torch.full((table.shape[0], 2 * table.shape[1]), -1, dtype=torch.int32, device="cuda")
    strided = wide[:, ::2]
    perm = torch.randperm(k.shape[0], generator=torch.Generator().manual_seed(5)).to(torch.int32).cuda()
    other = torch.where(table >= 0, perm[table.clamp(min=0).long()], table)     # other pages, same -1s
    for rows in (table, other):
        strided.copy_(rows)
        want = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=rows.contiguous())
        for _ in range(3):
            assert torch.equal(fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=strided), want)
    q, k, v, lens, _ = make_inputs(("bf16", 128, (32, 8), None, (1, False)), torch)
    for rows in ([2, 0, 1], [1, 2, 0]):
        idx = torch.tensor(rows, dtype=torch.int32, device="cuda")
        spread = torch.full((6,), 9, dtype=torch.int32, device="cuda")
        spread[::2] = idx
        want = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, cache_batch_idx=idx)
        for _ in range(3):
            got = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, cache_batch_idx=spread[::2])
            assert torch.equal(got, want)


def compile_all():
    """Fill the kernel cache for every case (FAKV_COMPILE_ONLY; no GPU)."""
    import numpy as np
    os.environ["FAKV_COMPILE_ONLY"] = "1"
    import fakv
    for case in CASES:
        q, k, v, lens, table = make_inputs(case, np)
        for splits in SPLITS:
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=case[4][1],
                                         num_splits=splits)
    for case, n, scale in EXTRA:
        q, k, v, lens, table = make_inputs(case, np)
        for splits in SPLITS:
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens if n is None else n, block_table=table,
                                         causal=case[4][1], softmax_scale=scale, num_splits=splits)
    for case, option in OPTIONS:
        q, k, v, lens, table = make_inputs(case, np)
        kw, _, _ = option_kwargs(option, case, np)
        for splits in SPLITS:
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=case[4][1],
                                         num_splits=splits, **kw)
    from fakv import prepare
    prepare.MERGE_SPLITS = True
    for case, option in MERGE_CASES:
        q, k, v, lens, table = make_inputs(case, np)
        kw = option_kwargs(option, case, np)[0] if option else {}
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=case[4][1],
                                     num_splits=3, **kw)
    prepare.MERGE_SPLITS = False
    print(f"compiled the kernels of {len(CASES) + len(EXTRA)} cases x {len(SPLITS)} split settings, "
          f"and {len(MERGE_CASES)} merging their splits")


if __name__ == "__main__":
    if "--compile-only" in sys.argv:
        compile_all()
        sys.exit(0)
    fails = 0
    runs = [(c, None, None, None) for c in CASES] + [e + (None,) for e in EXTRA] + [(c, None, None, o) for c, o in OPTIONS]
    for case, n, scale, option in runs:
        for splits in SPLITS:
            ok, msg = run_case(case, splits, n, scale, option)
            fails += not ok
            if not ok or "--verbose" in sys.argv:
                print(("PASS " if ok else "FAIL ") + f"{case_id(case)} len={n} scale={scale} option={option} "
                      f"splits={splits}: {msg}", flush=True)
    print(f"{len(runs) * len(SPLITS) - fails} passed, {fails} failed")
    sys.exit(1 if fails else 0)
