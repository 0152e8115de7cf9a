"""GPU tests of the frontend beyond the attention grid (skipped without a GPU):

- score modifiers (softcap, ALiBi, sliding window, length) in a small
  @fakv.jit kernel, against torch;
- a kernel launched on CuPy arrays (DLPack), positionally and by keyword;
- the kernels/README.md variant (decode.py copied, softcap added to its
  score_mod) through fakv.with_kernels, against the softcapped reference;
- fakv.flash_attn_with_kvcache captured in a CUDA graph and replayed on new
  inputs, equal to an eager call;
- bad data (a block-table entry outside the cache, cache_seqlens past it or
  negative): the kernel masks it and reports it, DataError at the next
  call or fakv.synchronize(), the CUDA context intact; FAKV_CHECK_DATA=1
  raises in the call;
- a call queued behind 50 ms of GPU work returns before that work is done
  (no host sync);
- fl.cluster_gather in a small kernel, and FAKV_CLUSTER_SPLITS's decode
  (its splits merged in a thread-block cluster) against decode + combine;
- reductions of i32 and f32 tiles to scalars (fl.sum / fl.max / fl.min of
  a 1-D tile: shuffles and shared memory across the warps), used as
  scalars, against torch;
- random kernels of dots (wgmma) with loops, elementwise math, row and
  column reductions, a second dot and masked stores (test/python/dot_fuzz.py)
  against a float64 numpy reference, and test_dsl_fuzz.py's random
  elementwise kernels against numpy;
- conversions and integer operations on edge values (edge_values.py): the
  documented bits, as on the CPU path;
- a ragged batch of several waves longest first (the default): the same bits as
  in index order, and attention;
- a ragged batch of one wave: ADAPTIVE splits once an earlier call's lengths
  (copied without a host sync) say ragged, the plan from shapes for equal
  lengths, and in a CUDA graph.

    python -m pytest test/gpu/test_frontend_gpu.py      # on the GPU machine
    python test/gpu/test_frontend_gpu.py --compile-only # fill the kernel cache (no GPU)
"""
import math
import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "python"))
sys.path.insert(0, HERE)
import source_tree  # noqa: E402,F401  (the source tree's fakv when it is built, else the installed one)

import fakv  # noqa: E402
import fakv.language as fl  # noqa: E402
import dot_fuzz  # noqa: E402
import edge_values  # noqa: E402
import variant  # noqa: E402
from tile_stats import reference as tile_stats_reference, tile_stats  # noqa: E402

COMPILE_ONLY = __name__ == "__main__" and "--compile-only" in sys.argv
if COMPILE_ONLY:
    os.environ["FAKV_COMPILE_ONLY"] = "1"
try:
    import torch
except ImportError:                     # compile-only runs need no torch
    torch = None
pytestmark = pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="needs torch and a GPU")

ROWS, COLS, CAP, OFFSET, LEFT, RIGHT, VALID = 64, 32, 20.0, 3, 8, 0, 29


@fakv.jit
def score_modifiers(S, Slopes, Out, valid, offset, cap, left, right, ROWS: fl.constexpr, COLS: fl.constexpr):
    s = fl.load(S, (ROWS, COLS), (0, 0), (COLS, 1))
    slopes = fl.load(Slopes, (ROWS,), (0,), (1,))
    rows, cols = fl.arange(0, ROWS), fl.arange(0, COLS)
    s = fl.softcap(s, cap)
    s = fl.alibi(s, rows, cols, offset, slopes)
    s = fl.window_mask(s, rows, cols, offset, left, right)
    s = fl.length_mask(s, cols, valid)
    fl.store(Out, s, (0, 0), (COLS, 1))


@fakv.jit
def axpy(X, Y, n, alpha, BLOCK: fl.constexpr):
    i = fl.program_id(0) * BLOCK
    x = fl.load(X, (BLOCK,), (i,), (1,), bounds=(n,))
    y = fl.load(Y, (BLOCK,), (i,), (1,), bounds=(n,))
    fl.store(Y, x * alpha + y, (i,), (1,), bounds=(n,))


@fakv.jit
def cluster_rows(X, Out, N: fl.constexpr, SIZE: fl.constexpr):
    z = fl.program_id(2)
    everyone = fl.cluster_gather(fl.load(X, (N,), (z * N,), (1,)), SIZE)      # [:, r]: the row of rank r
    fl.store(Out, everyone, (z * N, 0), (SIZE, 1))


@fakv.jit
def cluster_columns(X, Out, N: fl.constexpr, SIZE: fl.constexpr):
    z = fl.program_id(2)
    cols = fl.cluster_gather(fl.load(X, (4, N), (z * 4, 0), (N, 1)), SIZE, scatter=True)   # (4, N / SIZE, SIZE)
    fl.store(Out, fl.sum(cols, 2), (z * 4, 0), (N // SIZE, 1))


def test_cluster_gather():
    """fl.cluster_gather: each program of a cluster of 4 (grid axis 2) gets the rows of all 4; a grid of
    clusters cut short is refused before the launch."""
    x = torch.arange(8 * 32, dtype=torch.float32, device="cuda")
    out = torch.zeros((8 * 32, 4), device="cuda")
    cluster_rows[(1, 1, 8)](x, out, N=32, SIZE=4)
    want = x.view(2, 4, 32).permute(0, 2, 1)                   # [cluster, i, rank]
    assert torch.equal(out, want[:, None].expand(2, 4, 32, 4).reshape(256, 4))
    with pytest.raises(ValueError, match="not a multiple of the 4 programs of its clusters"):
        cluster_rows[(1, 1, 6)](x, out, N=32, SIZE=4)
    # Shared out: rank r of a cluster gets columns [8r, 8r + 8) of every program's 4 x 32 tile (here summed).
    x = torch.randn((8 * 4, 32), device="cuda")
    out = torch.zeros((8 * 4, 8), device="cuda")
    cluster_columns[(1, 1, 8)](x, out, N=32, SIZE=4)
    per = x.view(2, 4, 4, 4, 8)                                # [cluster, program, row, slice, column]
    want = per.sum(1).permute(0, 2, 1, 3).reshape(32, 8)       # [cluster, slice = rank, row, column]
    assert torch.allclose(out, want, atol=1e-5)


# (page, splits, empty): test_cluster_splits' cases, for pytest, compile_all and run_all
CLUSTER_SPLIT_CASES = [(None, 0, False), (16, 2, False), (256, 0, False), (None, 4, True)]


@pytest.mark.parametrize("page,splits,empty", CLUSTER_SPLIT_CASES)
def test_cluster_splits(page, splits, empty):
    """The splits of a row merged in a thread-block cluster (one launch; FAKV_CLUSTER_SPLITS=1) give what decode
    then combine give (FAKV_CLUSTER_SPLITS=0), eager and replayed from a CUDA graph; `empty`: the first sequence
    has no key (every split's LSE -inf: 0 and +inf, not NaN)."""
    from fakv import interface, prepare
    q, k, v, lens, table = _inputs(page)
    if empty:
        lens[0] = 0
    call = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,  # noqa: E731
                                                num_splits=splits, return_softmax_lse=True)
    saved = interface._CLUSTER_SPLITS
    try:
        interface._CLUSTER_SPLITS, _ = False, prepare.CALLS.clear()      # decode, then combine
        if COMPILE_ONLY:
            call()
            interface._CLUSTER_SPLITS = True
            return call()
        out, lse = call()
        interface._CLUSTER_SPLITS, _ = True, prepare.CALLS.clear()
        assert interface.plan(3, 1, 16, 4, 128, "bf16", page is not None, page or k.shape[1], k.shape[1] if page
                              is None else table.shape[1] * page, False, splits, cluster=True)["cluster"] > 1
        c_out, c_lse = call()
        for o in (out, c_out):                                          # both against the float64 reference
            ok, msg = _reference_check(o, q, k, v, lens, table, page)
            assert ok, msg
        assert (c_out.float() - out.float()).abs().max().item() <= 1e-2
        assert torch.allclose(c_lse, lse, atol=1e-4, rtol=0) and torch.equal(torch.isinf(c_lse), torch.isinf(lse))
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            g_out, g_lse = call()
        q.copy_(torch.randn_like(q))
        graph.replay()
        torch.cuda.synchronize()
        e_out, e_lse = call()
        assert torch.equal(g_out, e_out) and torch.equal(g_lse, e_lse)
    finally:
        interface._CLUSTER_SPLITS = saved
        prepare.CALLS.clear()


@pytest.mark.parametrize("n", [1000, 77])
def test_tile_reductions_to_scalars(n):
    g = torch.Generator().manual_seed(n)
    x = torch.randint(-1000, 1000, (n,), generator=g, dtype=torch.int32)
    f = torch.randn((2, 1024), generator=g)
    out, fout = torch.zeros(8, dtype=torch.int32, device="cuda"), torch.zeros(2, device="cuda")
    tile_stats[(1,)](x.cuda(), f.cuda(), out, fout, n, BLOCK=1024)
    want, fwant = tile_stats_reference(x.numpy(), f.numpy())
    assert out[:5].tolist() == want
    assert abs(float(fout[0]) - fwant[0]) < 1e-3 and float(fout[1]) == fwant[1]


DOT_FUZZ_CASES = range(int(os.environ.get("FUZZ_CASES", 40)))


def test_random_dot_kernels():
    """Every dot_fuzz case, launched on the GPU, against the float64 reference (the CPU path's test:
    test_dsl_fuzz.py)."""
    with tempfile.TemporaryDirectory() as folder:
        for seed in DOT_FUZZ_CASES:
            c = dot_fuzz.case(seed)
            arrays = dot_fuzz.inputs(c)
            if COMPILE_ONLY:
                dot_fuzz.run_numpy(folder, c)
                continue
            dtypes = {"f16": torch.float16, "bf16": torch.bfloat16}
            on_gpu = [torch.from_numpy(x).cuda() for x in arrays]
            on_gpu = dot_fuzz.as_16_bits(c, on_gpu, lambda x, dtype: x.to(dtypes[dtype]))
            dot_fuzz.launch(dot_fuzz.load(folder, c), c, *on_gpu)
            dot_fuzz.check(c, on_gpu[4].cpu().numpy(), *dot_fuzz.reference(c, arrays))


def test_edge_values():
    """edge_values.py's conversions and integer operations on edge values on the GPU: the documented bits, as on
    the CPU path (test_dsl_semantics.py)."""
    if COMPILE_ONLY:
        return edge_values.run_numpy()
    dtypes = {"i8": torch.int8, "i32": torch.int32, "i64": torch.int64, "f16": torch.float16,
              "bf16": torch.bfloat16, "f32": torch.float32}
    outs = edge_values.outputs(lambda n, dtype: torch.zeros(n, dtype=dtypes[dtype], device="cuda"))
    edge_values.launch([torch.from_numpy(a).cuda() for a in edge_values.INPUTS], outs)
    got = [o.view(torch.int16).cpu().numpy().view(np.uint16) if o.dtype == torch.bfloat16 else o.cpu().numpy()
           for o in outs]
    assert edge_values.differences(got) == []


def test_random_elementwise_kernels():
    """test_dsl_fuzz.py's random kernels (expression trees, early returns, loops, reductions of 16 elements)
    on the GPU against numpy, within 2e-3 (fl.exp and fl.tanh are the approximate instructions there)."""
    import test_dsl_fuzz
    with tempfile.TemporaryDirectory() as folder:
        for seed in DOT_FUZZ_CASES:
            test_dsl_fuzz.check_random_kernel(seed, Path(folder), "compile" if COMPILE_ONLY else
                                              lambda x: torch.from_numpy(x).cuda(), tolerance=2e-3)


def test_score_modifiers():
    g = torch.Generator().manual_seed(1)
    s = (torch.randn((ROWS, COLS), generator=g) * 10).cuda()
    slopes = torch.rand((ROWS,), generator=g).cuda()
    out = torch.empty_like(s)
    score_modifiers[(1,)](s, slopes, out, VALID, OFFSET, CAP, LEFT, RIGHT, ROWS=ROWS, COLS=COLS)
    q = torch.arange(ROWS, device="cuda")[:, None] + OFFSET
    k = torch.arange(COLS, device="cuda")[None, :]
    ref = CAP * torch.tanh(s / CAP) - slopes[:, None] * (q - k).abs()
    visible = (k >= q - LEFT) & (k <= q + RIGHT) & (k < VALID)
    ref = ref.masked_fill(~visible, float("-inf"))
    assert torch.equal(torch.isneginf(out), ~visible)
    err = (out[visible] - ref[visible]).abs().max().item()
    assert err <= 2e-3 * CAP, f"max error {err}"                # tanh.approx.f32: ~2^-11 relative


@fakv.jit
def abs_and_half_math(Y8, X8, Y64, X64, YB, XB):
    fl.store(Y8, fl.abs(fl.load(X8, (16,), (0,), (1,))), (0,), (1,))
    fl.store(Y64, fl.abs(fl.load(X64, (16,), (0,), (1,))), (0,), (1,))
    x = fl.load(XB, (128,), (0,), (1,))
    fl.store(YB, fl.exp(x), (0,), (1,))
    fl.store(YB, fl.log2(fl.exp2(x)), (128,), (1,))
    fl.store(YB, fl.tanh(x), (256,), (1,))


def test_abs_and_half_math():
    """fl.abs of i8 / i64 (math.absi: llvm.abs, |INT_MIN| wrapping as torch's) and exp / exp2 / log2 / tanh of a
    bf16 tile (in f32 with the approximate instructions, rounded back once); session 39."""
    x8 = torch.tensor([-128, -127, -3, 0, 5] + [-1] * 11, dtype=torch.int8, device="cuda")
    x64 = torch.tensor([-2 ** 62, -7, 0, 9] + [-1] * 12, dtype=torch.int64, device="cuda")
    xb = torch.linspace(-3, 3, 128, device="cuda").bfloat16()
    y8, y64, yb = torch.zeros_like(x8), torch.zeros_like(x64), torch.zeros(384, dtype=torch.bfloat16, device="cuda")
    abs_and_half_math[(1,)](y8, x8, y64, x64, yb, xb)
    torch.cuda.synchronize()
    assert torch.equal(y8, torch.abs(x8)) and torch.equal(y64, torch.abs(x64))
    xf = xb.float()
    for got, want in ((yb[:128], torch.exp(xf)), (yb[128:256], torch.log2(torch.exp2(xf).bfloat16().float())),
                      (yb[256:], torch.tanh(xf))):
        assert torch.allclose(got.float(), want.bfloat16().float(), rtol=1e-2, atol=1e-2), (got, want)


def test_dlpack_arrays():
    cp = pytest.importorskip("cupy")
    x = cp.arange(1000, dtype=cp.float32)
    y = cp.ones(1000, dtype=cp.float32)
    axpy[(8,)](x, y, 1000, 2.0, BLOCK=128)
    axpy[(8,)](x, Y=y, n=1000, alpha=1.0, BLOCK=128)          # by keyword too
    torch.cuda.synchronize()
    assert np.array_equal(cp.asnumpy(y), np.arange(1000, dtype=np.float32) * 3 + 1)


def _inputs(page, seed=3):
    """bf16, batch 3, 16 query / 4 kv heads, head dim 128, up to 320 keys."""
    import test_flash_attn as t
    case = ("bf16", 128, (16, 4), page, (1, False))
    return t.make_inputs(case, np if COMPILE_ONLY else torch)


def _variant_call(attn, page, splits, q_times=1, **options):
    """attn (a with_kernels API) on _inputs(page), q times `q_times`: None when compiling only, else (out, q,
    the caches' rows gathered contiguous, lens)."""
    q, k, v, lens, table = _inputs(page)
    if COMPILE_ONLY:
        attn(q, k, v, cache_seqlens=lens, block_table=table, num_splits=splits, **options)
        return None
    from reference import gather_cache
    q = q * q_times
    out = attn(q, k, v, cache_seqlens=lens, block_table=table, num_splits=splits, **options)
    ks, vs = (k, v) if table is None else (gather_cache(k, table, lens, page), gather_cache(v, table, lens, page))
    return out, q, ks, vs, lens


def _check_attention(out, q, ks, vs, lens, causal, scale, label, **ref_options):
    """out against attention_ref's (upcast, and at q's precision for the tolerance)."""
    from reference import attention_ref, check
    ref, _ = attention_ref(q, ks, vs, lens, causal, scale, upcast=True, **ref_options)
    pt, _ = attention_ref(q, ks, vs, lens, causal, scale, upcast=False, **ref_options)
    ok, msg = check(out, ref, pt, label)
    assert ok, msg


@pytest.mark.parametrize("page,splits", [(None, 1), (256, 3), (16, 0)])
def test_readme_variant(page, splits):
    """kernels/README.md's softcap variant (with_kernels(decode=...)) on the GPU."""
    with tempfile.TemporaryDirectory() as d:
        attn = fakv.with_kernels(decode=variant.load(d).decode)
    got = _variant_call(attn, page, splits, q_times=4)          # scores large enough for the cap to matter
    if got is None:
        return
    out, q, ks, vs, lens = got
    scale = 1 / math.sqrt(q.shape[-1])
    _check_attention(out, q, ks, vs, lens, False, scale, "out", softcap=variant.CAP)
    from reference import attention_ref
    plain, _ = attention_ref(q, ks, vs, lens, False, scale, upcast=True)
    assert (out.float() - plain).abs().max().item() > 0.1      # the variant is not plain attention


@pytest.mark.parametrize("page,splits", [(None, 1), (256, 3), (16, 0)])
def test_per_head_variant(page, splits):
    """kernels/README.md's per-head score modifier (a temperature 1 + 0.25 h, as tile math) on the GPU: each
    head's output follows attention at its own scale."""
    with tempfile.TemporaryDirectory() as d:
        attn = fakv.with_kernels(decode=variant.load_per_head(d).decode)
    got = _variant_call(attn, page, splits)
    if got is None:
        return
    out, q, ks, vs, lens = got
    group = q.shape[2] // ks.shape[2]
    for h in range(q.shape[2]):
        kv = slice(h // group, h // group + 1)
        scale = (1 + variant.TEMP * h) / math.sqrt(q.shape[-1])
        _check_attention(out[:, :, h:h + 1], q[:, :, h:h + 1], ks[:, :, kv], vs[:, :, kv], lens, False, scale,
                         f"head {h}")


@pytest.mark.parametrize("page,splits", [(None, 4), (256, 3), (16, 0)])
def test_combine_variant_runs(page, splits):
    """with_kernels(combine=...) (its output doubled) on calls whose plain plan merges the splits in a
    thread-block cluster, no combine launched: the variant's combine runs (it was skipped there)."""
    with tempfile.TemporaryDirectory() as d:
        attn = fakv.with_kernels(combine=variant.load_doubling_combine(d).combine)
    got = _variant_call(attn, page, splits)
    if got is None:
        return
    out, q, ks, vs, lens = got
    _check_attention(out / 2, q, ks, vs, lens, False, 1 / math.sqrt(q.shape[-1]), "out / 2")


@pytest.mark.parametrize("page,splits", [(None, 1), (256, 3), (16, 0)])
def test_causal_variant_at_one_query_row(page, splits):
    """A variant's rule under decode's CAUSAL (the LAST latest keys only) holds in a causal call of one query
    row, where fakv's own causal mask is a no-op and the variant was not told CAUSAL."""
    with tempfile.TemporaryDirectory() as d:
        attn = fakv.with_kernels(decode=variant.load_last_keys(d).decode)
    got = _variant_call(attn, page, splits, causal=True)
    if got is None:
        return
    out, q, ks, vs, lens = got
    n = [min(variant.LAST, int(x)) for x in lens.tolist()]
    # each sequence's last keys, padded to LAST rows (the padding past its length: not attended)
    kl, vl = (torch.stack([torch.cat([x[b, int(lens[b]) - n[b]:int(lens[b])], x[b, :variant.LAST - n[b]] * 0])
                           for b in range(x.shape[0])]) for x in (ks, vs))
    nl = torch.tensor(n, dtype=torch.int32, device=q.device)
    _check_attention(out, q, kl, vl, nl, True, 1 / math.sqrt(q.shape[-1]), "out")


@pytest.mark.parametrize("page,splits", [(256, 1), (16, 3)])
def test_cuda_graph_capture(page, splits):
    q, k, v, lens, table = _inputs(page)
    call = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,  # noqa: E731
                                                num_splits=splits, return_softmax_lse=True)
    if COMPILE_ONLY:
        return call()
    call()                                                      # compile and load outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, lse = call()
    q.copy_(torch.randn_like(q))                               # new inputs in the captured tensors
    # New lengths, within the pages the block table maps (it maps [1, 320, n >= 2]).
    lens.copy_(torch.tensor([1, 200, 2], dtype=torch.int32))
    graph.replay()
    torch.cuda.synchronize()
    eager_out, eager_lse = call()
    assert torch.equal(out, eager_out) and torch.equal(lse, eager_lse)
    ok, msg = _reference_check(out, q, k, v, lens, table, page)      # (not a wrong result both share)
    assert ok, msg


@pytest.mark.parametrize("page", [None, 16, 256])
def test_longest_first_batch(page):
    """A ragged batch of several waves (128 sequences x 8 kv heads over the H200's 264 slots, up to 4096 keys),
    longest first as planned (decode.py's LONGEST_FIRST): the same bits as in index order (FAKV_LONGEST_FIRST=0),
    and attention (against the float32 reference)."""
    from fakv import interface, prepare
    batch, hk, d, cap = 128, 8, 128, 4096
    g = torch.Generator(device="cuda").manual_seed(7)
    q = torch.randn((batch, 1, 32, d), generator=g, device="cuda").to(torch.bfloat16)
    lens = torch.randint(1, cap + 1, (batch,), generator=g, device="cuda", dtype=torch.int32)
    shape = (batch * cap // page, page, hk, d) if page else (batch, cap, hk, d)
    k, v = (torch.randn(shape, generator=g, device="cuda").to(torch.bfloat16) for _ in range(2))
    table = (torch.randperm(batch * cap // page, generator=g, device="cuda").to(torch.int32)
             .reshape(batch, cap // page)) if page else None
    outs, was = [], interface._LONGEST_FIRST
    for on in (True, False):
        interface._LONGEST_FIRST = on
        interface._plan.cache_clear()
        prepare.CALLS.clear()
        try:
            p = interface.plan(batch, 1, 32, hk, d, "bf16", bool(page), page or cap, cap, False, 0,
                               torch.cuda.get_device_properties(0).multi_processor_count)
            assert p["decode"]["LONGEST_FIRST"] == (batch if on else 0)
            outs.append(fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,
                                                     return_softmax_lse=True))
        finally:
            interface._LONGEST_FIRST = was
            interface._plan.cache_clear()
            prepare.CALLS.clear()
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])
    from reference import attention_ref, check, gather_cache
    ks, vs = (k, v) if table is None else (gather_cache(k, table, lens, page), gather_cache(v, table, lens, page))
    ref, _ = attention_ref(q, ks, vs, lens, False, 1 / math.sqrt(d), upcast=True)
    pt, _ = attention_ref(q, ks, vs, lens, False, 1 / math.sqrt(d), upcast=False)
    ok, msg = check(outs[0][0], ref, pt, "out")
    assert ok, msg


@pytest.mark.parametrize("page", [None, 256])
def test_ragged_batch_planned_from_earlier_lengths(page):
    """A batch of one wave over long caches (32 sequences x 8 kv heads in the H200's 264 slots, 4096 keys): the
    first call is planned from shapes (one split); once the copy of its lengths has reached the host, a call
    with ragged lengths runs ADAPTIVE (4 splits, kernels/splits.py) and one with equal lengths (another tensor)
    the plan from shapes; the ragged plan is replayed from a CUDA graph too. Attention against the float32
    reference each time; the prepared calls never wait for the GPU."""
    from fakv import interface, lengths_hint, prepare
    batch, hk, d, cap = 32, 8, 128, 4096
    g = torch.Generator(device="cuda").manual_seed(11)
    q = torch.randn((batch, 1, 32, d), generator=g, device="cuda").to(torch.bfloat16)
    ragged = torch.randint(1, cap + 1, (batch,), generator=g, device="cuda", dtype=torch.int32)
    ragged[0] = cap
    equal = torch.full((batch,), cap - 5, device="cuda", dtype=torch.int32)
    shape = (batch * cap // page, page, hk, d) if page else (batch, cap, hk, d)
    k, v = (torch.randn(shape, generator=g, device="cuda").to(torch.bfloat16) for _ in range(2))
    table = (torch.randperm(batch * cap // page, generator=g, device="cuda").to(torch.int32)
             .reshape(batch, cap // page)) if page else None
    p = interface.plan(batch, 1, 32, hk, d, "bf16", bool(page), page or cap, cap, False, 0,
                       torch.cuda.get_device_properties(0).multi_processor_count)
    assert p["by_lengths"] and p["num_splits"] == 1
    prepare.CALLS.clear()
    lengths_hint.forget()
    launched, ran = [], []                # decode's ADAPTIVE of each call prepared, of each prepared call run
    real_prepare = prepare.call

    def recorded(*args, **kwargs):
        adaptive = args[2]["ADAPTIVE"]        # decode's constexprs
        launched.append(adaptive)
        prepared = real_prepare(*args, **kwargs)

        def run(*call_args):
            ran.append(adaptive)
            return prepared(*call_args)
        return run
    prepare.call = recorded

    def waits(fn):
        """Whether fn() returned only after ~10 ms of GPU work queued before it had finished."""
        torch.cuda.synchronize()
        torch.cuda._sleep(20_000_000)
        out = fn()
        busy = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        return out, not busy
    try:
        call = lambda lens: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens,  # noqa: E731
                                                         block_table=table)
        for lens in (ragged, equal):
            if lens is equal:                                 # prepared: a new tensor's first call waits neither
                out, waited = waits(lambda: call(lens))
                assert not waited, "the call waited for the GPU (a new cache_seqlens tensor)"
                outs = [out]
            else:
                outs = [call(lens)]                           # (compiles)
            torch.cuda.synchronize()                          # (the lengths' copy has landed)
            outs.append(call(lens))                           # planned from them
            out, waited = waits(lambda: call(lens))
            assert not waited, "the call waited for the GPU"
            outs.append(out)
            for out in outs:
                ok, msg = _reference_check(out, q, k, v, lens, table, page)
                assert ok, msg
        # Prepared: the plan from shapes (the first call), then ADAPTIVE; equal lengths reuse the first.
        assert launched == [0, batch], launched
        assert ran == [0, batch, batch, 0, 0, 0], ran          # which prepared call each call ran
        switch, = prepare.CALLS.values()
        assert isinstance(switch, interface._ByLengths) and None not in switch.calls
        assert lengths_hint.ragged(ragged, cap) and not lengths_hint.ragged(equal, cap)   # what each call took
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            captured = call(ragged)
        ragged.copy_(torch.randint(1, cap + 1, (batch,), generator=g, device="cuda", dtype=torch.int32))
        graph.replay()
        torch.cuda.synchronize()
        ok, msg = _reference_check(captured, q, k, v, ragged, table, page)
        assert ok, msg
        assert launched == [0, batch] and ran[6:] == [batch], (launched, ran)   # the capture: ADAPTIVE's
    finally:
        prepare.call = real_prepare
        prepare.CALLS.clear()
        lengths_hint.forget()


@pytest.mark.parametrize("page", [None, 256])
def test_hint_beside_another_threads_capture(page):
    """One thread captures CUDA graphs in torch's default global mode while another makes eager calls whose plan
    follows the lengths hint (a batch of one wave over long caches): the hint's event query and its pinned
    buffer are "unsafe" calls that invalidated the other thread's capture ("operation not permitted when
    stream is capturing") and raised in the calling thread (session 54's review); lengths_hint.py makes them
    in relaxed capture mode. Every capture and every call succeed, the graphs replay what they captured and
    the calls give the float32 reference's attention."""
    import threading
    from fakv import lengths_hint
    batch, hk, d, cap = 32, 8, 128, 4096
    g = torch.Generator(device="cuda").manual_seed(12)
    q = torch.randn((batch, 1, 32, d), generator=g, device="cuda").to(torch.bfloat16)
    lens = torch.randint(1, cap + 1, (batch,), generator=g, device="cuda", dtype=torch.int32)
    lens[0] = cap
    shape = (batch * cap // page, page, hk, d) if page else (batch, cap, hk, d)
    k, v = (torch.randn(shape, generator=g, device="cuda").to(torch.bfloat16) for _ in range(2))
    table = (torch.randperm(batch * cap // page, generator=g, device="cuda").to(torch.int32)
             .reshape(batch, cap // page)) if page else None
    call = lambda lens=lens: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens,  # noqa: E731
                                                         block_table=table)
    want = call()                                    # (compiled and prepared; its lengths copied)
    if COMPILE_ONLY:
        return want
    torch.cuda.synchronize()
    x = torch.zeros(1 << 16, device="cuda")
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    # Whatever the calls allocate through torch is allocated before the captures begin: a cudaMalloc in one
    # thread during another's global-mode capture fails in torch itself (keeping every output did, a new
    # segment every few calls). So: both plans' calls on the calls' stream first (their workspaces kept),
    # outputs copied into buffers made here (their blocks reused).
    # Three tensors of the same lengths, two followed at most, each called twice in a row: its first call follows
    # it anew (a pinned buffer allocated, the oldest dropped: a decode loop's new cache_seqlens tensors), its
    # second queries the copy the first started.
    seqlens = [lens, lens.clone(), lens.clone()]
    with torch.cuda.stream(streams[1]):
        for _ in range(2):
            for t in seqlens:
                call(t)
                torch.cuda.synchronize()
                call(t)
    outs = [torch.empty_like(want) for _ in range(8)]
    torch.cuda.synchronize()
    start, stop, errors, graphs, made = threading.Barrier(2), threading.Event(), [], [], [0]
    followed = lengths_hint._MAX_TENSORS
    lengths_hint._MAX_TENSORS = 2

    def capture():
        try:
            start.wait()
            for _ in range(30):
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, stream=streams[0]):      # (capture_error_mode "global")
                    for _ in range(10):
                        x.add_(1)
                        torch.cuda._sleep(20_000)
                graphs.append(graph)
        except Exception as e:  # noqa: BLE001
            errors.append(f"capture: {type(e).__name__}: {str(e)[:300]}")
        finally:
            stop.set()

    def calls():
        try:
            with torch.cuda.stream(streams[1]):
                start.wait()
                kept = [None]
                while not stop.is_set() or made[0] < 20:
                    out = call(seqlens[made[0] // 2 % 3])                       # (each twice: its query)
                    outs[made[0] % 8].copy_(out)
                    # (the last output kept: torch.cuda.graph empties torch's cache before each capture, and a
                    # segment of no live block released there is a cudaMalloc at the next call)
                    kept[0], made[0] = out, made[0] + 1
                    torch.cuda._sleep(50_000)           # (its copy not landed at once: queries that say no)
        except Exception as e:  # noqa: BLE001
            errors.append(f"calls: {type(e).__name__}: {str(e)[:300]}")
            stop.set()
    threads = [threading.Thread(target=capture), threading.Thread(target=calls)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        lengths_hint._MAX_TENSORS = followed
    torch.cuda.synchronize()
    assert not errors, errors
    for graph in graphs:
        graph.replay()
    torch.cuda.synchronize()
    assert len(graphs) == 30 and torch.equal(x, torch.full_like(x, 300.0)), x[:4]
    for out in [want] + outs:                        # (the last 8 calls; plans by the hint: one split or four)
        ok, msg = _reference_check(out, q, k, v, lens, table, page)
        assert ok, msg


@pytest.mark.parametrize("page", [16, 256])
def test_streams_keep_their_own_workspace(page):
    """Calls on two streams at once, and a graph replayed between eager
    calls on one stream: each stream keeps its own workspace (the
    PreparedCall's, runtime/README.md) and the graph its own, so the
    results equal those of the same calls one at a time."""
    q, k, v, lens, table = _inputs(page)
    if COMPILE_ONLY:
        return fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, num_splits=3)
    qs = [q, torch.randn_like(q), torch.randn_like(q)]
    call = lambda x: fakv.flash_attn_with_kvcache(x, k, v, cache_seqlens=lens, block_table=table,  # noqa: E731
                                                  num_splits=3)
    alone = [call(x) for x in qs]
    torch.cuda.synchronize()
    # (each q its own output, the attention of its q: equal outputs would hide a call that read another's)
    assert not torch.equal(alone[0], alone[1]) and not torch.equal(alone[1], alone[2])
    for x, out in zip(qs, alone):
        ok, msg = _reference_check(out, x, k, v, lens, table, page)
        assert ok, msg
    streams = [torch.cuda.Stream() for _ in range(2)]
    outs = []
    for x, s in zip(qs, streams):
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            torch.cuda._sleep(1000000)        # both streams busy: their calls run at once
            outs.append([call(x) for _ in range(4)])
    torch.cuda.synchronize()
    assert all(torch.equal(o, alone[i]) for i, os_ in enumerate(outs) for o in os_)
    from fakv import _runtime
    kept = dict(_runtime.kept_workspaces())                    # {stream: bytes}
    assert all(s.cuda_stream in kept for s in streams), kept   # each stream its own, kept
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = call(qs[2])
    mixed = []
    for _ in range(3):
        graph.replay()
        mixed.append(call(qs[0]))
    torch.cuda.synchronize()
    assert torch.equal(captured, alone[2]) and all(torch.equal(m, alone[0]) for m in mixed)


def _reference_check(out, q, k, v, lens, table, page):
    from reference import attention_ref, check, gather_cache
    ks, vs = (k, v) if table is None else (gather_cache(k, table, lens, page), gather_cache(v, table, lens, page))
    scale = 1 / math.sqrt(q.shape[-1])
    ref, _ = attention_ref(q, ks, vs, lens, False, scale, upcast=True)
    pt, _ = attention_ref(q, ks, vs, lens, False, scale, upcast=False)
    return check(out, ref, pt, "out")


def _other_rows_check(out, q, k, v, lens, table, page, bad):
    """_reference_check of every batch row but `bad` (whose data was bad: its output is not valid)."""
    rows = [r for r in range(q.shape[0]) if r != bad]
    if table is None:
        return _reference_check(out[rows], q[rows], k[rows], v[rows], lens[rows], None, page)
    return _reference_check(out[rows], q[rows], k, v, lens[rows], table[rows], page)


@pytest.mark.parametrize("page", [None, 256])
def test_int_length_first_seen_in_a_capture(page):
    """An int cache_seqlens first seen while a call is captured into a CUDA
    graph: an eager call of that value before any replay reads its own
    (filled) tensor, not the graph's (filled only at replay), and the graph
    replays right after the eager lengths have been cleared."""
    q, k, v, lens, table = _inputs(page)
    call = lambda n: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=n, block_table=table)  # noqa: E731
    if COMPILE_ONLY:
        return call(200)
    want = call(200)                                           # (prepared; the value 200's eager tensor)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = call(150)                                   # 150: new, seen first in the capture
    eager = call(150)
    for n in range(1, 80):                                     # more values than are kept: the eager ones cleared
        call(n)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager) and not torch.equal(eager, want)


@pytest.mark.parametrize("page", [None, 256])
def test_q_of_a_fused_projection(page):
    """q a view of a fused q/k/v projection (not contiguous: the prepared
    call copies it): its outputs and LSE those of the same call with q
    contiguous, call after call (the copy held until its kernels are
    queued: freed earlier, torch's allocator could give its block to the
    LSE or the workspace the call allocates next)."""
    q, k, v, lens, table = _inputs(page)
    call = lambda x: fakv.flash_attn_with_kvcache(x, k, v, cache_seqlens=lens, block_table=table,  # noqa: E731
                                                  return_softmax_lse=True, num_splits=3)
    if COMPILE_ONLY:
        return call(q)
    fused = torch.cat([q, torch.randn_like(q)], dim=2)         # (batch, 1, 2 * heads, d): q its first heads
    view = fused[:, :, :q.shape[2]]
    assert not view.is_contiguous()
    want = call(q.contiguous())
    for _ in range(20):
        out, lse = call(view)
        assert torch.equal(out, want[0]) and torch.equal(lse, want[1])


@pytest.mark.parametrize("page", [None, 256])
def test_layers_each_with_their_own_caches(page):
    """A model's decode step calls the API once per layer, each layer with
    caches of its own: 70 layers (140 TMA maps, more than a kernel keeps:
    runtime/README.md) in turn, twice, then the last ten again (their maps
    kept). Every output is its own layer's: right against the reference,
    and the same in each pass."""
    q, k, v, lens, table = _inputs(page)
    call = lambda q, k, v, lens, table: fakv.flash_attn_with_kvcache(  # noqa: E731
        q, k, v, cache_seqlens=lens, block_table=table)
    if COMPILE_ONLY:
        return call(q, k, v, lens, table)
    g = torch.Generator(device="cuda").manual_seed(5)
    layers = [(q, torch.randn(k.shape, generator=g, device="cuda").to(k.dtype),
               torch.randn(v.shape, generator=g, device="cuda").to(v.dtype), lens, table) for _ in range(70)]
    first = [call(*layer) for layer in layers]
    again = [call(*layer) for layer in layers]
    last = [call(*layer) for layer in layers[-10:]]
    torch.cuda.synchronize()
    for layer, out in zip(layers, first):
        ok, msg = _reference_check(out, *layer, page)
        assert ok, msg
    assert all(torch.equal(a, b) for a, b in zip(first, again))
    assert all(torch.equal(a, b) for a, b in zip(first[-10:], last))
    assert not torch.equal(first[0], first[1])                 # (the layers differ)


@pytest.mark.parametrize("page", [16, 256])
def test_bad_block_table_is_reported(page):
    """A block-table entry outside the cache: the kernel reads nothing of
    it (the other rows are right), fakv.synchronize() raises DataError
    naming block_table and the batch row, and the CUDA context lives on (the
    next call with good data is right)."""
    q, k, v, lens, table = _inputs(page)
    if COMPILE_ONLY:
        return fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    good = table[1, 0].item()
    table[1, 0] = k.shape[0] + 5                                # a page that does not exist
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    with pytest.raises(fakv.DataError, match="block_table of batch row 1"):
        fakv.synchronize()
    ok, msg = _other_rows_check(out, q, k, v, lens, table, page, bad=1)     # (row 1's output is not valid)
    assert ok, msg
    table[1, 0] = -7
    fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    torch.cuda.synchronize()
    with pytest.raises(fakv.DataError, match="block_table of batch row 1"):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)   # the next call raises
    table[1, 0] = good
    fakv.check_errors()                                         # nothing pending: the report was taken
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    torch.cuda.synchronize()
    ok, msg = _reference_check(out, q, k, v, lens, table, page)
    assert ok, msg


@pytest.mark.parametrize("page", [None, 16, 256])
def test_bad_seqlens_are_reported(page):
    """cache_seqlens beyond the cache (or negative): that sequence reads no
    key (the other rows are right), reported at the next call; FAKV_CHECK_DATA=1 raises in the call itself,
    before launching."""
    q, k, v, lens, table = _inputs(page)
    if COMPILE_ONLY:
        return fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    lens[2] = 10 ** 6
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 2"):
        fakv.synchronize()
    ok, msg = _other_rows_check(out, q, k, v, lens, table, page, bad=2)
    assert ok, msg
    lens[2] = -1
    fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    with pytest.raises(fakv.DataError, match="cache_seqlens of batch row 2"):
        fakv.synchronize()
    os.environ["FAKV_CHECK_DATA"] = "1"
    try:
        with pytest.raises(RuntimeError, match=r"cache_seqlens\[2\] = -1"):
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    finally:
        del os.environ["FAKV_CHECK_DATA"]
    torch.cuda.synchronize()
    fakv.check_errors()


@pytest.mark.parametrize("page,seqlens", [(256, "tensor"), (None, "int")])
def test_call_does_not_wait_for_the_gpu(page, seqlens):
    """A call queued behind ~50 ms of GPU work returns while that work still
    runs: nothing in the default path waits for the GPU."""
    q, k, v, lens, table = _inputs(page)
    lens = lens if seqlens == "tensor" else 200
    if COMPILE_ONLY:
        return fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)    # compiled and prepared
    torch.cuda.synchronize()
    torch.cuda._sleep(100_000_000)                              # 10^8 cycles: ~50 ms at 1.98 GHz
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    busy = not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    assert busy, "the call returned after the GPU had finished: it waited"
    assert torch.isfinite(out.float()).all()


@pytest.mark.parametrize("page,seqlens", [(256, "tensor"), (None, "int")])
def test_second_call_is_prepared(page, seqlens, monkeypatch):
    """A call like an earlier one (same shapes, strides, dtypes, options)
    runs the prepared call: no checks or planning again."""
    from fakv import interface
    q, k, v, lens, table = _inputs(page)
    lens = lens if seqlens == "tensor" else 200
    if COMPILE_ONLY:
        return fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    first = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)

    def slow_path(*args, **kwargs):
        raise AssertionError("the call was checked and planned again")

    def fast_and_slow(**kw):
        """(the prepared call's output for another q, the slow path's for it): the call prepared with q, run
        with q2 (other values: a prepared call still reading q's would give q's output), then again from
        scratch."""
        from fakv import prepare
        monkeypatch.undo()
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, **kw)
        monkeypatch.setattr(interface, "_attention", slow_path)
        fast = fakv.flash_attn_with_kvcache(q2, k, v, cache_seqlens=lens, block_table=table, **kw)
        monkeypatch.undo()
        prepare.CALLS.clear()
        slow = fakv.flash_attn_with_kvcache(q2, k, v, cache_seqlens=lens, block_table=table, **kw)
        torch.cuda.synchronize()
        return fast, slow
    q2 = torch.randn_like(q)
    second, slow = fast_and_slow()
    assert torch.equal(second, slow) and not torch.equal(second, first)
    seqlens_tensor = lens if seqlens == "tensor" else torch.full((q.shape[0],), lens, dtype=torch.int32,
                                                                    device="cuda")
    ok, msg = _reference_check(second, q2, k, v, seqlens_tensor, table, page)
    assert ok, msg
    # An option given as an int where the check takes any number (softcap): kept under the value given.
    capped, again = fast_and_slow(softcap=30)
    assert torch.equal(capped, again)
    # Flags given as ints (causal=1, as FlashAttention's bindings take them): prepared under the bools the
    # slow path keys them by (the fast path looked them up as ints: every such call was planned again).
    causal, again = fast_and_slow(causal=1, return_softmax_lse=1)
    assert torch.equal(causal[0], again[0]) and torch.equal(causal[1], again[1])


def _in_a_fresh_thread(fn):
    """fn() run by a new thread (no current CUDA context in it), its result returned (its exception fails)."""
    import threading
    done = {}

    def worker():
        try:
            done["out"] = fn()
        except Exception as e:  # noqa: BLE001
            done["error"] = e
    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert "error" not in done, done.get("error")
    return done["out"]


@pytest.mark.parametrize("page", [None, 256])
def test_prepared_call_in_a_fresh_thread(page):
    """A thread whose first CUDA work is a call another thread prepared (it has no current CUDA context: the
    fast path raised "not on the current CUDA device"), and a kept prepared call holds no tensor of the call
    that prepared it (its workspace allocator held q)."""
    import gc
    import weakref
    from fakv import prepare
    q, k, v, lens, table = _inputs(page)
    call = lambda q: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
    if COMPILE_ONLY:
        return call(q)
    prepare.CALLS.clear()
    first = torch.randn_like(q)
    gone = weakref.ref(first)
    want = call(first)
    del first
    gc.collect()
    assert gone() is None, "the prepared call keeps the q that prepared it"
    out = _in_a_fresh_thread(lambda: call(q))
    torch.cuda.synchronize()
    # (first held other values than q: a prepared call that kept reading first's memory would not give q's)
    assert not torch.equal(out, want)
    ok, msg = _reference_check(out, q, k, v, lens, table, page)
    assert ok, msg


def test_jit_launch_in_a_fresh_thread():
    """A @fakv.jit kernel launched by a thread whose first CUDA work this is (no current CUDA context; the
    kernel made by another thread): "no current CUDA context (initialise CUDA first ...)" before session 57,
    and so were the API's unprepared routes (appending at head dim 256) from such a thread."""
    if COMPILE_ONLY:
        return axpy[(8,)](np.zeros(1000, np.float32), np.zeros(1000, np.float32), 1000, 2.0, BLOCK=128)
    x = torch.arange(1000, device="cuda", dtype=torch.float32)
    y = torch.ones_like(x)
    axpy[(8,)](x, y, 1000, 2.0, BLOCK=128)
    _in_a_fresh_thread(lambda: axpy[(8,)](x, y, 1000, 2.0, BLOCK=128))
    torch.cuda.synchronize()
    assert torch.equal(y, 4 * x + 1)


def _on_cuda1(inputs):
    """For the two-GPU tests: a call with 3 splits, its result on cuda:0 (cuda:0 made current) and the inputs
    copied to cuda:1; skips with fewer GPUs."""
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    call = lambda *t: fakv.flash_attn_with_kvcache(*t[:3], cache_seqlens=t[3], block_table=t[4],  # noqa: E731
                                                   num_splits=3)
    torch.cuda.set_device(0)
    want = call(*inputs).cpu()
    return call, want, [t.to("cuda:1") if hasattr(t, "to") else t for t in inputs]


@pytest.mark.parametrize("page,seqlens", [(None, "tensor"), (256, "tensor"), (256, "int")])
def test_call_on_another_device(page, seqlens, monkeypatch):
    """As FlashAttention's (a CUDA guard on q's device): tensors on cuda:1 while cuda:0 is current run on
    cuda:1, the slow path's call and the prepared call's, the current device left as it was; what a call
    allocates (out, its workspace, an int cache_seqlens' tensor) is cuda:1's, nothing cuda:0's; a call
    prepared inside `with torch.cuda.device(1):` runs outside it. (Before: "not on the current CUDA
    device".)"""
    import gc
    from fakv import _runtime, interface, prepare
    q, k, v, lens, table = _inputs(page)
    lens = lens if seqlens == "tensor" else 200
    if COMPILE_ONLY:
        return None
    call, want, one = _on_cuda1((q, k, v, lens, table))
    slow = []
    real = interface._attention
    monkeypatch.setattr(interface, "_attention", lambda *a, **kw: slow.append(1) or real(*a, **kw))
    context = _runtime.current_context()            # cuda:0's, which every call must leave current
    for prepared_inside in (False, True):
        prepare.CALLS.clear()
        slow.clear()
        gc.collect()
        before = torch.cuda.memory_allocated(0)
        if prepared_inside:
            with torch.cuda.device(1):
                call(*one)
        outs = [call(*one) for _ in range(3)]       # the slow path's (prepared_inside: the fast path's), then kept
        assert len(slow) == 1, "the prepared call did not run"
        assert torch.cuda.current_device() == 0
        assert _runtime.current_context() == context, "the thread's context was not restored"
        torch.cuda.synchronize(1)
        for out in outs:
            assert out.device == torch.device("cuda:1")
            assert torch.equal(out.cpu(), want)
        del outs
        gc.collect()
        assert torch.cuda.memory_allocated(0) == before, "a call on cuda:1 allocated on cuda:0"


@pytest.mark.parametrize("page", [None, 256])
def test_prepared_call_launches_in_its_context(page, monkeypatch):
    """Python that a prepared call runs before its launches (torch's allocations: a device guard's exit, or
    another thread having made a context for the device torch notes) may leave another context current; the
    launches make the call's own current again (else: cuda:1's kernels queued in cuda:0's context on cuda:1's
    stream, an invalid handle or a launch on the wrong GPU)."""
    from fakv import interface, prepare
    q, k, v, lens, table = _inputs(page)
    if COMPILE_ONLY:
        return None
    call, want, one = _on_cuda1((q, k, v, lens, table))
    real, flip, flipped, slow = torch.empty_like, [], [], []

    def empty_like(*a, **kw):
        if flip:
            torch.cuda.set_device(0)             # cuda:0's context current
            flipped.append(1)
        return real(*a, **kw)
    monkeypatch.setattr(torch, "empty_like", empty_like)
    attention = interface._attention
    monkeypatch.setattr(interface, "_attention", lambda *a, **kw: slow.append(1) or attention(*a, **kw))
    torch.cuda.set_device(1)
    prepare.CALLS.clear()
    outs = [call(*one)]                          # the slow path's: prepared (with the patched empty_like)
    flip.append(1)
    for _ in range(2):
        torch.cuda.set_device(1)                 # the call's context current on entry (nothing to restore)
        outs.append(call(*one))
    assert len(slow) == 1, "the prepared call did not run"
    assert len(flipped) == 2, "the prepared call did not run the patched empty_like"
    torch.cuda.synchronize(1)
    for out in outs:
        assert out.device == torch.device("cuda:1") and torch.equal(out.cpu(), want)


_OTHER_DEVICE_ONLY = """
import sys, torch
sys.path[:0] = {paths!r}
import source_tree, fakv
from test_frontend_gpu import _inputs
with torch.cuda.device(1):            # (its exit leaves cuda:0 only noted by torch: no context made for it)
    q, k, v, lens, table = _inputs({page!r})
assert torch.cuda.current_device() == 0 and not torch._C._cuda_hasPrimaryContext(0)
call = lambda q: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, num_splits=3)
outs = [call(q) for _ in range(3)]    # the slow path's, then the prepared call's
with torch.cuda.device(1):
    fakv.prepare.CALLS.clear()
    want = call(q)
torch.cuda.synchronize(1)
assert all(o.device == torch.device("cuda:1") and torch.equal(o, want) for o in outs)
assert torch.cuda.memory_allocated(0) == 0, torch.cuda.memory_allocated(0)
assert not torch._C._cuda_hasPrimaryContext(0), "a call on cuda:1 made a context on cuda:0"
# prepare.raw_allocator itself (the calls above may have allocated their kept workspace under the slow
# path's device guard): made inside a guard on cuda:1, called outside it, where torch notes cuda:0
with torch.cuda.device(1):
    alloc, delete = fakv.prepare.raw_allocator(torch, 1)
before = torch.cuda.memory_allocated(1)
p = alloc(1 << 20, torch.cuda.current_stream(1).cuda_stream)
assert torch.cuda.memory_allocated(1) >= before + (1 << 20) and torch.cuda.memory_allocated(0) == 0
delete(p)
assert not torch._C._cuda_hasPrimaryContext(0), "the allocator made a context on cuda:0"
print("same")
"""


@pytest.mark.parametrize("page", [None, 256])
def test_call_on_another_device_only(page):
    """A process that never uses cuda:0, its tensors on cuda:1: torch notes cuda:0 as current without a
    context (c10's targetDeviceIndex) while the driver's context is cuda:1's, and torch's raw allocator takes
    torch's device: the prepared call's workspace is still cuda:1's (prepare.raw_allocator)."""
    import subprocess
    if COMPILE_ONLY:
        return None
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    script = _OTHER_DEVICE_ONLY.format(paths=[HERE, os.path.join(ROOT, "test", "python")], page=page)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.split()[-1:] == ["same"], r.stderr[-3000:]


@pytest.mark.parametrize("dim", [0, 2])
@pytest.mark.parametrize("splits", [1, 3])
def test_broadcast_cache(dim, splits):
    """A cache broadcast along the batch or the kv heads (a zero stride, as torch's expand makes it; FlashAttention
    reads it through its strides) reads as its copy does."""
    q, k, v, lens, table = _inputs(None)
    if COMPILE_ONLY:
        return None
    one = tuple(slice(0, 1) if i == dim else slice(None) for i in range(4))
    kb, vb = k[one].expand(k.shape), v[one].expand(v.shape)
    assert kb.stride(dim) == 0
    call = lambda kc, vc: fakv.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens, num_splits=splits)  # noqa: E731
    want = call(kb.contiguous(), vb.contiguous())
    got = call(kb, vb)
    torch.cuda.synchronize()
    assert torch.equal(got, want)


@pytest.mark.parametrize("page", [None, 256])
def test_appending_call_is_prepared(page, monkeypatch):
    """A call with new keys, rotary and left padding is prepared too: the
    second such call (other caches, other new keys) runs the prepared call,
    which takes every tensor's address afresh."""
    from fakv import interface
    q, k, v, lens, table = _inputs(page)
    lens = lens - 1
    g = torch.Generator(device="cuda").manual_seed(5)
    new = [torch.randn((q.shape[0], 1) + tuple(k.shape[2:]), device="cuda", dtype=q.dtype, generator=g)
           for _ in range(4)]
    angle = torch.rand((k.shape[1] * (table.shape[1] if page else 1), 64), device="cuda", generator=g)
    cos, sin = angle.cos().to(q.dtype), angle.sin().to(q.dtype)
    pad = torch.ones_like(lens)
    call = lambda kc, vc, kn, vn: fakv.flash_attn_with_kvcache(  # noqa: E731
        q, kc, vc, kn, vn, cos, sin, cache_seqlens=lens, block_table=table, cache_leftpad=pad, causal=True)
    caches = [(k.clone(), v.clone()) for _ in range(3)]
    want = call(*caches[0], new[0], new[1])                 # prepares
    monkeypatch.setattr(interface, "_attention", lambda *a, **kw: (_ for _ in ()).throw(
        AssertionError("the call was checked and planned again")))
    got = call(*caches[1], new[0], new[1])
    other = call(*caches[2], new[2], new[3])
    torch.cuda.synchronize()
    assert torch.equal(want, got) and not torch.equal(want, other)
    assert torch.equal(caches[0][0], caches[1][0]) and torch.equal(caches[0][1], caches[1][1])
    assert not torch.equal(caches[0][1], caches[2][1])      # each call appended its own new values


_RECIPE_RUN = """
import sys, torch
sys.path[:0] = {paths!r}
import source_tree, fakv
from test_frontend_gpu import _inputs
q, k, v, lens, table = _inputs({page!r})
lens = lens if {seqlens!r} == "tensor" else 200
assert "fakv.interface" not in sys.modules
out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=True)
torch.save(out.cpu(), {out!r})
print("slow-path" if "fakv.interface" in sys.modules else "from-recipe")
"""


@pytest.mark.parametrize("page,seqlens", [(256, "tensor"), (None, "int")])
def test_new_process_prepares_from_the_recipe(page, seqlens):
    """Recipes (fakv/recipes.py, on by default): a process's first call
    takes the slow path (fakv.interface: checks, plan) and leaves its
    PreparedCall's recipe; the next process's first call of the same
    signature is prepared from it without importing fakv.interface, and
    gives the same output."""
    import subprocess
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items() if k != "FAKV_RECIPES"}
        env["FAKV_CACHE_DIR"] = os.path.join(d, "cache")
        outs, how = [os.path.join(d, f"out{i}.pt") for i in (0, 1)], []
        for out in outs:
            script = _RECIPE_RUN.format(paths=[HERE, os.path.join(ROOT, "test", "python")], page=page,
                                        seqlens=seqlens, out=out)
            r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr[-3000:]
            how.append(r.stdout.split()[-1])
        assert how == ["slow-path", "from-recipe"], how
        assert os.listdir(os.path.join(d, "cache", "recipes"))
        assert torch.equal(torch.load(outs[0]), torch.load(outs[1]))


_FIRST_IN_CAPTURE = """
import sys, torch
sys.path[:0] = {paths!r}
import source_tree, fakv
from test_frontend_gpu import _inputs
q, k, v, lens, table = _inputs({page!r})
new = dict()
if {append!r}:                          # (a contiguous cache of 320 rows: room for one more in each)
    new = dict(k=torch.randn_like(k[:, :1]), v=torch.randn_like(v[:, :1]))
    lens = (lens - 1).clamp(min=0).to(torch.int32)
kc, vc = k.clone(), v.clone()
graph = torch.cuda.CUDAGraph()
with torch.cuda.graph(graph):          # (the default, global capture mode)
    out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=True, **new)
graph.replay()
torch.cuda.synchronize()
eager = fakv.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=lens, block_table=table, causal=True, **new)
assert torch.equal(out, eager) and torch.equal(k, kc) and torch.equal(v, vc)
print("same")
"""


@pytest.mark.parametrize("page,append", [(256, False), (None, True), (16, False)])
def test_first_call_inside_a_capture(page, append):
    """A process's first call made inside torch.cuda.graph (global capture mode): its kernels' module loads and
    the error word's pinned page are "unsafe" calls that invalidated the capture ("operation failed due to a
    previous error during capture", session 40); the runtime makes them in relaxed capture mode. Replayed, the
    graph gives the eager call's output and appends the same rows; then again in a second process whose first
    call is prepared from the first one's recipe."""
    import subprocess
    with tempfile.TemporaryDirectory() as d:
        env = {k: v for k, v in os.environ.items() if k != "FAKV_RECIPES"}
        env["FAKV_CACHE_DIR"] = os.path.join(d, "cache")
        script = _FIRST_IN_CAPTURE.format(paths=[HERE, os.path.join(ROOT, "test", "python")], page=page,
                                          append=append)
        for _ in range(2):
            r = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0 and r.stdout.split()[-1] == "same", (r.stdout + r.stderr)[-3000:]


def without_fixture(test):
    """`test`, which takes pytest's monkeypatch fixture last, as a function of the rest (run_all)."""
    def run(*args):
        mp = pytest.MonkeyPatch()
        try:
            test(*args, mp)
        finally:
            mp.undo()
    run.__name__ = test.__name__
    return run


def compile_all():
    """Fill the kernel cache with every kernel these tests launch."""
    x = np.zeros((ROWS, COLS), np.float32)
    score_modifiers[(1,)](x, np.zeros(ROWS, np.float32), x, VALID, OFFSET, CAP, LEFT, RIGHT, ROWS=ROWS, COLS=COLS)
    axpy[(8,)](np.zeros(1000, np.float32), np.zeros(1000, np.float32), 1000, 2.0, BLOCK=128)
    tile_stats[(1,)](np.zeros(1000, np.int32), np.zeros((2, 1024), np.float32), np.zeros(8, np.int32),
                     np.zeros(2, np.float32), 1000, BLOCK=1024)
    import ml_dtypes
    i8, i64, bf16 = np.zeros(16, np.int8), np.zeros(16, np.int64), np.zeros(384, ml_dtypes.bfloat16)
    abs_and_half_math[(1,)](i8, i8, i64, i64, bf16, bf16[:128])
    test_random_dot_kernels()
    test_edge_values()
    test_random_elementwise_kernels()
    for page, splits in [(None, 1), (256, 3), (16, 0)]:
        test_readme_variant(page, splits)
        test_per_head_variant(page, splits)
        test_causal_variant_at_one_query_row(page, splits)
    for page, splits in [(None, 4), (256, 3), (16, 0)]:
        test_combine_variant_runs(page, splits)
    for page, splits in [(256, 1), (16, 3)]:
        test_cuda_graph_capture(page, splits)
    cluster_rows[(1, 1, 8)](np.zeros(256, np.float32), np.zeros((256, 4), np.float32), N=32, SIZE=4)
    cluster_columns[(1, 1, 8)](np.zeros((32, 32), np.float32), np.zeros((32, 8), np.float32), N=32, SIZE=4)
    for case in CLUSTER_SPLIT_CASES:
        test_cluster_splits(*case)
    for page in (16, 256):
        test_bad_block_table_is_reported(page)
        test_streams_keep_their_own_workspace(page)
    for page in (None, 256):
        test_layers_each_with_their_own_caches(page)
        test_q_of_a_fused_projection(page)
        test_int_length_first_seen_in_a_capture(page)
    print("compiled the kernels of test_frontend_gpu.py")


def run_all():
    """Without pytest: every test, a line each."""
    cases = [(test_score_modifiers, ()), (test_dlpack_arrays, ()), (test_abs_and_half_math, ())]
    cases += [(test_random_dot_kernels, ()), (test_random_elementwise_kernels, ()), (test_edge_values, ())]
    cases += [(test_tile_reductions_to_scalars, (n,)) for n in (1000, 77)]
    cases += [(test_cluster_gather, ())] + [(test_cluster_splits, c) for c in CLUSTER_SPLIT_CASES]
    cases += [(test_longest_first_batch, (p,)) for p in (None, 16, 256)]
    cases += [(test_ragged_batch_planned_from_earlier_lengths, (p,)) for p in (None, 256)]
    cases += [(test_readme_variant, c) for c in [(None, 1), (256, 3), (16, 0)]]
    cases += [(test_per_head_variant, c) for c in [(None, 1), (256, 3), (16, 0)]]
    cases += [(test_causal_variant_at_one_query_row, c) for c in [(None, 1), (256, 3), (16, 0)]]
    cases += [(test_combine_variant_runs, c) for c in [(None, 4), (256, 3), (16, 0)]]
    cases += [(test_cuda_graph_capture, c) for c in [(256, 1), (16, 3)]]
    cases += [(test_bad_block_table_is_reported, (p,)) for p in (16, 256)]
    cases += [(test_streams_keep_their_own_workspace, (p,)) for p in (16, 256)]
    cases += [(test_hint_beside_another_threads_capture, (p,)) for p in (None, 256)]
    cases += [(test_layers_each_with_their_own_caches, (p,)) for p in (None, 256)]
    cases += [(test_q_of_a_fused_projection, (p,)) for p in (None, 256)]
    cases += [(test_int_length_first_seen_in_a_capture, (p,)) for p in (None, 256)]
    cases += [(test_bad_seqlens_are_reported, (p,)) for p in (None, 16, 256)]
    cases += [(test_call_does_not_wait_for_the_gpu, c) for c in [(256, "tensor"), (None, "int")]]
    cases += [(without_fixture(test_second_call_is_prepared), c) for c in [(256, "tensor"), (None, "int")]]
    cases += [(without_fixture(test_appending_call_is_prepared), (p,)) for p in (None, 256)]
    cases += [(test_prepared_call_in_a_fresh_thread, (p,)) for p in (None, 256)]
    cases += [(test_jit_launch_in_a_fresh_thread, ())]
    cases += [(without_fixture(test_call_on_another_device), c)
              for c in [(None, "tensor"), (256, "tensor"), (256, "int")]]
    cases += [(without_fixture(test_prepared_call_launches_in_its_context), (p,)) for p in (None, 256)]
    cases += [(test_call_on_another_device_only, (p,)) for p in (None, 256)]
    cases += [(test_broadcast_cache, c) for c in [(0, 1), (2, 1), (0, 3), (2, 3)]]
    cases += [(test_new_process_prepares_from_the_recipe, c) for c in [(256, "tensor"), (None, "int")]]
    cases += [(test_first_call_inside_a_capture, c) for c in [(256, False), (None, True), (16, False)]]
    fails = skips = 0
    for fn, args in cases:
        try:
            fn(*args)
            print(f"PASS {fn.__name__}{args}")
        except pytest.skip.Exception as e:
            skips += 1
            print(f"SKIP {fn.__name__}{args}: {e}")
        except Exception as e:  # noqa: BLE001
            fails += 1
            print(f"FAIL {fn.__name__}{args}: {type(e).__name__}: {e}")
    print(f"{len(cases) - fails - skips} passed, {fails} failed, {skips} skipped")
    return fails


if __name__ == "__main__":
    if COMPILE_ONLY:
        compile_all()
    else:
        sys.exit(1 if run_all() else 0)          # (run_all.sh reports the status)
