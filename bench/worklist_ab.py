#!/usr/bin/env python3
"""kernels/worklist.py's persistent decode (a work list of (sequence, block)
entries a program, built by fakv.worklist from the lengths) against fakv's
planned call, cell by cell of bench_grid.py's grid (the multi-wave cells it
is for: ragged b128 s<=4K, b128 s1K; b128 s8K, one-wave b32 s8K and b8
s32K as controls): GPU time per call (CUDA graphs over rotating caches,
bench_grid.py's way), the variants interleaved round by round, each checked
against the planned call's output first. P: programs per kv head (default: the GPU's two program slots per SM
once); stages: the K/V ring's depth.

    python bench/worklist_ab.py [--cells "ragged b128 s<=4K@0"] [--programs 33] [--stages 2,3] [--lists whole,cut]
        [--rounds 3] [--no-check]
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


def worklist_call(cell, programs, stages, cut=True):
    """A call of the work-list kernel on copy i of `cell`'s caches (out, lse fresh per call)."""
    import math
    import torch
    from fakv.kernels.worklist import decode_worklist
    from fakv.worklist import MAX_PARTS, work_list
    b, h, hk, d, page = cell.b, cell.h, cell.hk, cell.d, cell.page
    capacity = cell.table.shape[1] * page if page else cell.s
    lists = work_list(cell.lens.tolist(), programs, 64, cut, capacity)
    print(f"  {'cut' if cut else 'whole'} lists: blocks a program {lists[2].max()} at most, {lists[2].mean():.1f} "
          f"on average")
    work, flags, count = (torch.from_numpy(a).cuda() for a in lists)
    head_tile = max(64, 1 << (d - 1).bit_length())
    out_part = torch.empty((MAX_PARTS * b, 1, h, head_tile), dtype=torch.float32, device="cuda")
    lse_part = torch.empty((MAX_PARTS * b, h), dtype=torch.float32, device="cuda")
    counters = torch.zeros(b * h, dtype=torch.int32, device="cuda")
    table = cell.table if cell.table is not None else cell.lens
    errors = torch.zeros(1, dtype=torch.int32, device="cuda")
    kernel = decode_worklist.with_options(swap_ab=True, stages=stages)

    def run(i):
        q, k, v = cell.q, cell.k[i], cell.v[i]
        out = torch.empty_like(q)
        lse = torch.empty((b, h), dtype=torch.float32, device="cuda")
        kernel[(h, programs, 1)](q, k, v, table, out, lse, out_part, lse_part, counters, work, flags,
                                 count, work.shape[1], b, q.stride(0), q.stride(2), k.stride(0), k.stride(1),
                                 k.stride(2), table.stride(0) if cell.table is not None else 0, h, d,
                                 page or cell.s, k.shape[0], 1 / math.sqrt(d), errors,
                                 HEAD_DIM=head_tile, BLOCK_N=64, GROUP=h // hk, PAGE_SIZE=page,
                                 MAX_PARTS=MAX_PARTS)
        return out
    return run, errors, counters


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="ragged b128 s<=4K@0,ragged b128 s<=4K@256,ragged b128 s<=4K@16,"
                                       "b128 s1K@0,b128 s8K@256,b32 s8K@0,b8 s32K@16")
    ap.add_argument("--programs", default="", help="programs per kv head (default: 264 // kv heads)")
    ap.add_argument("--stages", default="2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--lists", default="whole,cut", help="whole (whole sequences), cut (the blocks cut evenly)")
    ap.add_argument("--no-check", action="store_true", help="time variants whose output differs too")
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
            for st, lists in [(int(x), y) for x in args.stages.split(",") for y in args.lists.split(",")]:
                run, errors, counters = worklist_call(cell, p, st, lists == "cut")
                out = run(0)
                torch.cuda.synchronize()
                err = (out.float() - ref.float()).abs().max().item()
                left = int(counters.abs().sum())
                print(f"{name} worklist {lists} P={p} stages={st}: max |out - planned| {err:.2e}, errors {errors.item()}, "
                      f"counters left {left}")
                if (err <= 2e-2 and errors.item() == 0 and left == 0) or args.no_check:
                    impls[f"{lists} P={p} st={st}"] = run
        times = {k: [] for k in impls}
        for _ in range(args.rounds):
            for k, run in impls.items():
                times[k].append(graph_time_ms(cell.calls(run), warm_s=0.1)[0] * 1e3)
        base = statistics.median(times["planned"])
        print(f"{name} ({cell.kv_bytes >> 20} MiB):")
        for k, t in times.items():
            m = statistics.median(t)
            print(f"  {k:>22}: {m:8.1f} us ({m / base - 1:+.1%})  [{min(t):.1f}-{max(t):.1f}]")
        del cell
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
