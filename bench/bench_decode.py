#!/usr/bin/env python3
"""Decode attention bandwidth on the GPU, next to the device's copy
bandwidth and peers, all measured in this one run.

    python bench/bench_decode.py [--compile-only]

Config (issue 3): bf16, head dim 128, 32 query / 8 kv heads, batch 32,
seqlen_k 8192, seqlen_q 1; a paged cache (pages of 256) and a contiguous
one. Effective bandwidth = bytes of K and V read / time; the copy bandwidth
= 2 x bytes / time of a device-to-device copy of 2 GiB. Times are medians of
CUDA-event-timed replays of a CUDA graph of 10 calls, after warm-up (GPU
time only), except the two whole-API-call rows, timed as launched, and a
sliding-window call (window_size
(1023, 0): its bandwidth counts the 1024 keys it reads per sequence). Next
to kernels/decode.py (written per query head,
packed by fakv-pack-gqa) runs bench/kernels/decode_packed_by_hand.py, the
same kernel packed in the source. Caches are ~1 GiB each, far above
the 50 MiB L2. Peers: torch's scaled_dot_product_attention on the
contiguous cache, and FlashInfer's paged decode (CUDA-core and tensor-core
kernels) on the same paged cache when `flashinfer` imports (the H200 image
has none: bench/README.md says how to carry it). FlashAttention is listed
as not installed when it cannot be imported.

Every fakv output is checked against a float32 reference of every
sequence (bench_grid.py's tolerance): the API call's, the kernel launch's
after its timing, the hand-packed kernel's, the window's, and the append
rows' (the appended K/V rows, rotated keys, and the output over the
rotated query); the script prints what failed and exits 1.

Host costs (start-up, per-call overhead, CUDA-graph replay) are
bench/bench_host.py's.
"""
import math
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "kernels"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401  (the source tree's fakv when it is built, else the installed one)
from timing import copy_ms, event_ms, graph_time_ms, need_cuda  # noqa: E402

B, H, HK, D, S = 32, 32, 8, 128, 8192
PAGE = 256
WINDOW = 1024                                  # keys of the sliding-window row
FAILED = []                                    # what check() found wrong


def inputs(lib, paged, B=B, S=S):
    import numpy as np
    if lib is np:
        import ml_dtypes
        bf = ml_dtypes.bfloat16
        q = np.zeros((B, 1, H, D), bf)
        shape = (B * S // PAGE, PAGE, HK, D) if paged else (B, S, HK, D)
        k = np.zeros(shape, bf)
        table = np.arange(B * S // PAGE, dtype=np.int32).reshape(B, S // PAGE) if paged else None
        return q, k, k, np.full(B, S, np.int32), table
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((B, 1, H, D), device="cuda", dtype=torch.bfloat16, generator=g)
    shape = (B * S // PAGE, PAGE, HK, D) if paged else (B, S, HK, D)
    k = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
    table = torch.randperm(B * S // PAGE, device="cuda", generator=g).to(torch.int32).reshape(B, S // PAGE) \
        if paged else None
    return q, k, v, torch.full((B,), S, dtype=torch.int32, device="cuda"), table


def appending_inputs(B=B, S=S, angle_dtype=None):
    """inputs(torch, paged) of S - 1 cached keys per sequence, plus one new
    token's k, v (B, 1, HK, D) and rotary cos, sin (S, D / 2; bf16 unless
    angle_dtype): (q, k, v, lens, table, k_new, v_new, cos, sin)."""
    import torch
    q, k, v, lens, table = inputs(torch, True, B=B, S=S)
    lens -= 1
    g = torch.Generator(device="cuda").manual_seed(1)
    kn, vn = (torch.randn((B, 1, HK, D), device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    angle = torch.rand((S, D // 2), device="cuda", generator=g)
    dtype = angle_dtype or torch.bfloat16
    return q, k, v, lens, table, kn, vn, angle.cos().to(dtype), angle.sin().to(dtype)


def reference(q, k, v, table, n=S, first=0):
    """float32 attention of each sequence's query (B, 1, H, D) over its keys first .. n - 1 (a paged cache read
    through `table`): (B, 1, H, D)."""
    import torch
    out = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    for b in range(q.shape[0]):
        kb, vb = ((c[table[b].long()].flatten(0, 1) if table is not None else c[b])[first:n].float()
                  for c in (k, v))
        qb = q[b, 0].float().view(HK, H // HK, D)
        p = torch.softmax(torch.einsum("kgd,skd->kgs", qb, kb) / math.sqrt(D), -1)
        out[b, 0] = torch.einsum("kgs,skd->kgd", p, vb).reshape(H, D)
    return out


def check(name, out, ref):
    """Records `name` in FAILED when some sequence of `out` is further from `ref` than bench_grid.py's
    tolerance of that sequence's size lets it be."""
    from bench_grid import worst_error
    errs = (out.float() - ref).abs().flatten(1).max(1).values.tolist()
    sizes = ref.abs().flatten(1).max(1).values.tolist()
    err, tol = worst_error(errs, sizes)
    if not err <= tol:
        FAILED.append(f"{name}: differs from the float32 reference by {err:.3g} (at most {tol:.3g})")


def rotated(x, cos, sin, pos):
    """x (..., D) rotated at position `pos` (rotary dim D, interleaved) in float32, rounded to x's dtype."""
    import torch
    c, s_ = cos[pos].float(), sin[pos].float()
    x1, x2 = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack((x1 * c - x2 * s_, x1 * s_ + x2 * c), -1).flatten(-2).to(x.dtype)


def time_ms(fn, iters=20, reps=10, warmup=3, graph=True):
    """Median GPU time per call over `iters` replays of a CUDA graph of
    `reps` calls, so that no host work (which differs between
    implementations and machines) shows in the time; with graph=False, or
    calls that cannot be captured, timed as launched (the host's work
    overlapping the GPU's). Returns (ms, "graph" or "eager")."""
    if graph:
        return graph_time_ms([fn] * reps, replays=iters, warmup=warmup)
    for _ in range(warmup):
        fn()
    return statistics.median(event_ms(lambda: [fn() for _ in range(reps)], iters, busy_cycles=0)) / reps, "eager"


def main():
    import numpy as np
    if set(sys.argv[1:]) - {"--compile-only"}:       # (--help ran the whole bench)
        raise SystemExit(__doc__ if "--help" in sys.argv or "-h" in sys.argv
                         else f"usage: python bench/bench_decode.py [--compile-only], got {sys.argv[1:]}")
    if "--compile-only" in sys.argv:
        os.environ["FAKV_COMPILE_ONLY"] = "1"
        import fakv
        for paged in (True, False):
            q, k, v, lens, table = inputs(np, paged)
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, window_size=(WINDOW - 1, 0))
            hand_packed(np, paged, q, k, v, lens, table)()
            if paged:                                       # append_rows' calls
                kn, cos = np.zeros((B, 1, HK, D), q.dtype), np.zeros((S, D // 2), q.dtype)
                fakv.flash_attn_with_kvcache(q, k, v, kn, kn, cos, cos, cache_seqlens=lens - 1, block_table=table)
        print("compiled the bench kernels")
        return
    torch = need_cuda("bench/bench_decode.py")
    import fakv
    from fakv.interface import _kernels, plain_extras, plan

    kv_bytes = 2 * B * S * HK * D * 2
    rows = []
    src = torch.empty(2**30, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    t = copy_ms(dst, src)
    copy_bw = 2 * src.numel() * 2 / (t * 1e-3) / 1e12
    rows.append(("device-to-device copy (2 GiB)", t, copy_bw))
    del src, dst

    for paged in (True, False):
        q, k, v, lens, table = inputs(torch, paged)
        out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
        # Time the kernel launches themselves (the API checks inputs on the host).
        p = plan(B, 1, H, HK, D, "bf16", paged, k.shape[1], S, False, 0)
        decode = _kernels()[0].with_options(**p["decode_options"])
        lse = torch.empty((B, H, 1), dtype=torch.float32, device="cuda")
        args = (q, k, v, table if paged else lens, lens, out, lse, lse, lse,
                q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                table.stride(0) if paged else 0, B, 1, H, HK, D, k.shape[1], k.shape[0], 1 / math.sqrt(D),
                *plain_extras(lens, lse, S))
        assert p["num_splits"] == 1
        launch = lambda: decode[p["decode_grid"]](*args, **p["decode"])  # noqa: E731
        name = f"fakv decode, {'paged 256' if paged else 'contiguous'}"
        ref = reference(q, k, v, table)
        check(name + ", API call", out, ref)
        out.zero_()
        t, _ = time_ms(launch)
        check(name + ", kernel launch (after its timing)", out, ref)
        rows.append((name, t, kv_bytes / (t * 1e-3) / 1e12))
        by_hand = hand_packed(torch, paged, q, k, v, lens, table)
        check(name + ", packed by hand", by_hand(), ref)
        t, _ = time_ms(by_hand)
        rows.append((name + ", packed by hand", t, kv_bytes / (t * 1e-3) / 1e12))
        t_api, _ = time_ms(lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table),
                           graph=False)
        rows.append((name + " (whole API call, with input checks)", t_api, kv_bytes / (t_api * 1e-3) / 1e12))
        # A sliding window of WINDOW keys: the blocks outside it are skipped,
        # so the bandwidth counts the window's bytes (graph-timed API call).
        t, _ = time_ms(lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,
                                                            window_size=(WINDOW - 1, 0)))
        check(f"{name}, window_size=({WINDOW - 1}, 0)", fakv.flash_attn_with_kvcache(
            q, k, v, cache_seqlens=lens, block_table=table, window_size=(WINDOW - 1, 0)),
            reference(q, k, v, table, first=S - WINDOW))
        win_bytes = 2 * B * WINDOW * HK * D * 2
        rows.append((f"{name}, window_size=({WINDOW - 1}, 0), API call", t, win_bytes / (t * 1e-3) / 1e12))
        c = decode._compiled[next(iter(decode._compiled))]
        if paged:
            fakv_paged = (q, k, v, table, out)
        if not paged:
            # Peer: torch SDPA over the same contiguous cache (GQA).
            qq, kk, vv = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            f = torch.nn.functional.scaled_dot_product_attention
            ref = f(qq, kk, vv, enable_gqa=True).transpose(1, 2)
            err = (ref.float() - out.float()).abs().max().item()
            t, _ = time_ms(lambda: f(qq, kk, vv, enable_gqa=True))
            rows.append((f"torch SDPA (enable_gqa), contiguous  [max |fakv - sdpa| = {err:.2e}]", t,
                         kv_bytes / (t * 1e-3) / 1e12))
        del q, k, v
        torch.cuda.empty_cache()
    try:
        __import__("flash_attn")
    except ImportError:
        rows.append(("flash_attn: not installed on this machine", float("nan"), float("nan")))
    rows += flashinfer_rows(kv_bytes, fakv_paged)
    rows += append_rows(time_ms)

    print(f"\nbf16, batch {B}, heads {H}/{HK}, head dim {D}, seqlen_k {S}; K+V = {kv_bytes / 2**30:.2f} GiB")
    print(f"{'':62} {'ms':>8} {'TB/s':>7} {'of copy':>8}")
    for name, t, bw in rows:
        print(f"{name:62} {t:8.3f} {bw:7.2f} {bw / copy_bw:8.1%}")
    for key, c in decode._compiled.items():
        print("cubin:", getattr(c, "path", None), c.facts["kernels"][0]["smem_bytes"], "bytes smem")
    for f in FAILED:
        print("FAILED:", f)
    if FAILED:
        sys.exit(1)


def append_rows(time_ms):
    """The cost of appending one token with rotary (issue 9; bench/append_cost.py
    has more rows): graph-timed API calls on a paged cache (pages of 256)
    holding S - 1 keys per sequence, without and with k, v (1 token each)
    and rotary_cos/sin (rotary dim = head dim, interleaved: the default),
    timed in turn five times (medians), at batch 32 and batch 1; the
    bandwidth counts the K, V bytes read (S keys with the append)."""
    import torch
    import fakv
    rows = []
    for b in (B, 1):
        q, k, v, lens, table, kn, vn, cos, sin = appending_inputs(b)
        plain = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
        append = lambda: fakv.flash_attn_with_kvcache(q, k, v, kn, vn, cos, sin, cache_seqlens=lens,  # noqa: E731
                                                      block_table=table)
        byt = 2 * b * S * HK * D * 2
        name = f"append, batch {b}"
        check(name + ", plain call", plain(), reference(q, k, v, table, n=S - 1))
        out = append()
        row = lambda c, i: c[table[i, (S - 1) // PAGE].long(), (S - 1) % PAGE]  # noqa: E731  (the appended row)
        check(name + ", appended keys (rotated)", torch.stack([row(k, i) for i in range(b)])[:, None],
              rotated(kn, cos, sin, S - 1).float())
        check(name + ", appended values", torch.stack([row(v, i) for i in range(b)])[:, None], vn.float())
        check(name + ", output", out, reference(rotated(q, cos, sin, S - 1), k, v, table))
        t0, t1 = [], []
        for _ in range(5):                # in turn, medians: one timing each varies by a few % at batch 32
            t0.append(time_ms(plain)[0])
            t1.append(time_ms(append)[0])
        t0, t1 = statistics.median(t0), statistics.median(t1)
        rows.append((f"API call, batch {b}, paged 256, {S - 1} keys", t0, byt * (S - 1) / S / (t0 * 1e-3) / 1e12))
        rows.append((f"  + append 1 token, rotary ({t1 / t0 - 1:+.1%})", t1, byt / (t1 * 1e-3) / 1e12))
        del q, k, v
        torch.cuda.empty_cache()
    return rows


def hand_packed(lib, paged, q, k, v, lens, table):
    """A launch of bench/kernels/decode_packed_by_hand.py on the bench's
    inputs (one split), writing a fresh output, which it returns."""
    from fakv.interface import plan
    from fakv.prepare import errors_for
    from decode_packed_by_hand import decode, hand_packed_launch
    p = plan(B, 1, H, HK, D, "bf16", paged, k.shape[1], S, False, 1)
    grid, constexprs = hand_packed_launch(p, HK, H // HK)
    if lib.__name__ == "numpy":
        import numpy as np
        out, lse = np.zeros(q.shape, q.dtype), np.zeros((B, H, 1), np.float32)
        stride = lambda t: tuple(s // t.itemsize for s in t.strides)  # noqa: E731
    else:
        out, lse = lib.empty_like(q), lib.empty((B, H, 1), dtype=lib.float32, device="cuda")
        stride = lambda t: t.stride()  # noqa: E731
    qs, ks = stride(q), stride(k)
    args = (q, k, v, table if paged else lens, lens, out, lse, lse, lse, qs[0], qs[1], qs[2], ks[0], ks[1], ks[2],
            stride(table)[0] if paged else 0, B, 1, H, HK, D, k.shape[1], k.shape[0], 1 / math.sqrt(D),
            errors_for(q))
    kernel = decode.with_options(**p["decode_options"])
    return lambda: (kernel[grid](*args, **constexprs), out)[1]


def flashinfer_decode(flashinfer, q, k, v, table, tensor_cores):
    """FlashInfer's paged decode of q over (k, v) through `table` (NHD,
    pages of PAGE, every sequence full), planned: a callable that runs it."""
    import torch
    workspace = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD", use_tensor_cores=tensor_cores)
    pages = table.shape[1]
    w.plan(torch.arange(B + 1, dtype=torch.int32, device="cuda") * pages, table.flatten().contiguous(),
           torch.full((B,), PAGE, dtype=torch.int32, device="cuda"), H, HK, D, PAGE,
           q_data_type=torch.bfloat16, kv_data_type=torch.bfloat16)
    q2 = q[:, 0].contiguous()
    return lambda: w.run(q2, (k, v))


def flashinfer_rows(kv_bytes, paged_inputs):
    """FlashInfer's paged decode on the same paged cache (layout NHD, the
    same block table), when it imports: its CUDA-core and its tensor-core
    decode kernels, with their max difference from fakv's output."""
    import torch
    nan = float("nan")
    try:
        import flashinfer
    except Exception as e:  # noqa: BLE001  (not installed, or a missing dependency)
        return [(f"flashinfer: not importable here ({type(e).__name__})", nan, nan)]
    q, k, v, table, out = paged_inputs
    rows = []
    for tensor_cores in (False, True):
        name = f"FlashInfer {flashinfer.__version__} decode{' (tensor cores)' if tensor_cores else ''}, paged 256"
        try:
            run = flashinfer_decode(flashinfer, q, k, v, table, tensor_cores)
            err = (run().float() - out[:, 0].float()).abs().max().item()
            t, _ = time_ms(run)
            rows.append((f"{name}  [max |fi - fakv| = {err:.2e}]", t, kv_bytes / (t * 1e-3) / 1e12))
        except Exception as e:  # noqa: BLE001
            print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
            rows.append((f"{name}: failed ({type(e).__name__})", nan, nan))
    return rows


if __name__ == "__main__":
    main()
