#!/usr/bin/env python3
"""kernels/persistent.py's prototype persistent decode against fakv's planned
call, cell by cell of bench_grid.py's grid (the multi-wave cells it is for:
b128 s1K, b128 s8K, ragged b128 s<=4K; b32 s1K, one wave, as a control):
GPU time per call (CUDA graphs over rotating caches, bench_grid.py's way),
rounds interleaved, the persistent kernel's output checked against the
planned call's first. P: programs per kv head (grid (heads, P)); the
default fills the GPU's two program slots per SM once.

    python bench/persistent_ab.py [--cells "b128 s1K@256,ragged b128 s<=4K@0"] [--programs 33,66] [--rounds 3]
"""
import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from bench_grid import SHAPES, Cell  # noqa: E402
from timing import graph_time_ms  # noqa: E402


def persistent_call(cell, programs):
    """A call of the persistent kernel on copy i of `cell`'s caches (out, lse fresh per call)."""
    import math
    import torch
    from fakv.kernels.persistent import decode_persistent
    b, h, hk, d, page = cell.b, cell.h, cell.hk, cell.d, cell.page
    group, max_j = h // hk, math.ceil(b / programs)
    table = cell.table if cell.table is not None else cell.lens
    capacity = cell.table.shape[1] * page if page else cell.s
    errors = torch.zeros(1, dtype=torch.int32, device="cuda")
    kernel = decode_persistent.with_options(swap_ab=True)

    def run(i):
        q, k, v = cell.q, cell.k[i], cell.v[i]
        out = torch.empty_like(q)
        lse = torch.empty((b, h), dtype=torch.float32, device="cuda")
        kernel[(h, programs, 1)](q, k, v, table, cell.lens, out, lse, q.stride(0), q.stride(2), k.stride(0),
                                 k.stride(1), k.stride(2), table.stride(0) if cell.table is not None else 0, b, h,
                                 d, page or cell.s, k.shape[0], 1 / math.sqrt(d), errors, capacity,
                                 HEAD_DIM=max(64, 1 << (d - 1).bit_length()), BLOCK_N=64, GROUP=group,
                                 PAGE_SIZE=page, MAX_J=max_j)
        return out
    return run, errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="b128 s1K@256,b128 s1K@0,b128 s8K@256,ragged b128 s<=4K@256,"
                                       "ragged b128 s<=4K@0,b32 s1K@256")
    ap.add_argument("--programs", default="", help="programs per kv head (default: 264 // kv heads)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch
    import fakv
    for name in args.cells.split(","):
        shape_name, _, page = name.rpartition("@")
        shape = next(s for s in SHAPES if s[0] == shape_name)
        cell = Cell(shape, int(page))
        planned = lambda i: fakv.flash_attn_with_kvcache(cell.q, cell.k[i], cell.v[i],  # noqa: E731
                                                         cache_seqlens=cell.lens, block_table=cell.table,
                                                         causal=True)
        ref = planned(0)
        ref = planned(0)                    # (the second call: a ragged batch's plan, from the first's lengths)
        impls = {"planned": planned}
        for p in [int(x) for x in args.programs.split(",") if x] or [264 // cell.hk]:
            run, errors = persistent_call(cell, p)
            out = run(0)
            torch.cuda.synchronize()
            err = (out.float() - ref.float()).abs().max().item()
            print(f"{name} persistent P={p}: max |out - planned| {err:.2e}, errors {errors.item()}")
            if err <= 2e-2 and errors.item() == 0:
                impls[f"persistent P={p}"] = run
        times = {k: [] for k in impls}
        for _ in range(args.rounds):
            for k, run in impls.items():
                calls = [lambda i=i, run=run: run(i) for i in range(cell.copies)]
                times[k].append(graph_time_ms(calls, warm_s=0.1)[0] * 1e3)
        base = statistics.median(times["planned"])
        print(f"{name} ({cell.kv_bytes >> 20} MiB):")
        for k, t in times.items():
            m = statistics.median(t)
            print(f"  {k:>18}: {m:8.1f} us ({m / base - 1:+.1%})  [{min(t):.1f}-{max(t):.1f}]")
        del cell
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
