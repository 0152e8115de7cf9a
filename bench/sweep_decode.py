#!/usr/bin/env python3
"""The decode kernel of bench_decode.py's configuration under other key-block
sizes, pipeline depths and with or without warp specialisation: which
(BLOCK_N, stages, warp_specialize) reads the cache fastest.

    python bench/sweep_decode.py [--compile-only]

Launches kernels/decode.py directly (one split, as bench_decode.py does) on
the paged (256) and contiguous caches; prints ms and the fraction of the
copy bandwidth measured in the same run.
"""
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_decode import B, D, H, HK, PAGE, S, inputs, time_ms  # noqa: E402
from timing import copy_ms, need_cuda  # noqa: E402

VARIANTS = [(128, 2, True), (64, 2, True), (32, 2, True), (32, 3, True), (32, 4, True), (16, 4, True),
            (64, 2, False), (64, 3, False), (32, 2, False), (32, 3, False), (32, 4, False)]


def kernel(stages, warp_specialize):
    """kernels/decode.py's decode compiled with `stages` buffers per ring."""
    from fakv.interface import _kernels
    return _kernels()[0].with_options(stages=stages, warp_specialize=warp_specialize)


def launches(lib, paged):
    import numpy as np
    from fakv.interface import plain_extras, plan
    q, k, v, lens, table = inputs(lib, paged)
    zeros = (lambda *shape: np.zeros(shape, np.float32)) if lib is np else \
        (lambda *shape: __import__("torch").zeros(shape, device="cuda"))
    out, lse = (np.zeros(q.shape, q.dtype) if lib is np else q.clone()), zeros(B, H, 1)
    p = plan(B, 1, H, HK, D, "bf16", paged, k.shape[1], S, False, 1)
    stride = (lambda t: tuple(s // t.itemsize for s in t.strides)) if lib is np else (lambda t: t.stride())
    qs, ks = stride(q), stride(k)
    args = (q, k, v, table if paged else lens, lens, out, lse, lse, lse, qs[0], qs[1], qs[2], ks[0], ks[1], ks[2],
            stride(table)[0] if paged else 0, B, 1, H, HK, D, k.shape[1], k.shape[0], 1 / math.sqrt(D),
            *plain_extras(lens, lse, S))
    for block_n, stages, ws in VARIANTS:
        fn = kernel(stages, ws)
        constexprs = dict(p["decode"], BLOCK_N=block_n)
        yield (block_n, stages, ws), (lambda fn=fn, c=constexprs: fn[p["decode_grid"]](*args, **c)), out


def main():
    if set(sys.argv[1:]) - {"--compile-only"}:       # (--help ran the whole sweep)
        raise SystemExit(__doc__ if "--help" in sys.argv or "-h" in sys.argv
                         else f"usage: python bench/sweep_decode.py [--compile-only], got {sys.argv[1:]}")
    if "--compile-only" in sys.argv:
        import numpy as np
        os.environ["FAKV_COMPILE_ONLY"] = "1"
        for paged in (True, False):
            for _, launch, _ in launches(np, paged):
                launch()
        print("compiled the sweep's kernels")
        return
    torch = need_cuda("bench/sweep_decode.py")
    src = torch.empty(2**30, dtype=torch.bfloat16, device="cuda")
    dst = torch.empty_like(src)
    t = copy_ms(dst, src)
    copy_bw = 2 * src.numel() * 2 / (t * 1e-3) / 1e12
    del src, dst
    kv_bytes = 2 * B * S * HK * D * 2
    print(f"copy {copy_bw:.2f} TB/s; bf16, batch {B}, heads {H}/{HK}, head dim {D}, seqlen_k {S}")
    for paged in (True, False):
        ref = None
        for (block_n, stages, ws), launch, out in launches(torch, paged):
            launch()
            torch.cuda.synchronize()
            ref = out.clone() if ref is None else ref
            err = (out.float() - ref.float()).abs().max().item()
            t, _ = time_ms(launch)
            bw = kv_bytes / (t * 1e-3) / 1e12
            print(f"{'paged 256' if paged else 'contiguous':10} BLOCK_N {block_n:3} stages {stages} "
                  f"{'warp-specialized' if ws else 'one role        '}: "
                  f"{t:.3f} ms {bw:.2f} TB/s {bw / copy_bw:6.1%} of copy  (max diff to the first {err:.1e})")
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
