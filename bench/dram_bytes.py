#!/usr/bin/env python3
"""One planned fakv call per grid cell inside cudaProfilerStart/Stop, for
Nsight Compute: what decode reads from DRAM against the keys and values the
call attends (each cell's `kv_bytes`, printed):

    ncu --profile-from-start off --clock-control none --cache-control all -k regex:"decode|combine" \\
        --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv python3 bench/dram_bytes.py

CELLS="b8 s32K@0,ragged b128 s<=4K@256" picks bench_grid.py's cells (@0:
contiguous, @N: pages of N; its MORE_SHAPES too); the
default list is the 1 GiB cells below 105 % of copy in session 21.
PEERS="flashinfer,flashinfer-tc,sdpa,triton" profiles each peer's call after fakv's
(drop `-k` then; FlashInfer on the path as bench/README.md says). Session 25
(docs/gpu-results.md): uniform cells read what they attend within 0.03 %,
the ragged b128 batch 1.66 % more before row boxes, 0.45 % with them;
session 26: fakv, FlashInfer and cuDNN read the same bytes in the same
128-byte L2 requests. (Without ncu it just runs the calls.)
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
CELLS = "b8 s32K@0,b8 s32K@16,b8 s32K@64,b8 s32K@256,b32 s8K@16,b32 s8K@0,MHA b8 s8K@16,MHA b8 s8K@0," \
        "ragged b128 s<=4K@256,ragged b128 s<=4K@0"


def main():
    import torch
    from bench_grid import Cell, fakv_calls, peer_calls, shapes_by_name
    by_name = shapes_by_name()
    peers = [p for p in os.environ.get("PEERS", "").split(",") if p]
    for cell_name in os.environ.get("CELLS", CELLS).split(","):
        name, page = cell_name.rsplit("@", 1)
        cell = Cell(by_name[name], int(page))
        runs = [("fakv", fakv_calls(cell))] + [(p, peer_calls(cell, p, by_name[name][6])) for p in peers]
        for label, run in filter(lambda r: r[1] is not None, runs):
            for _ in range(3):              # (compiled, and a ragged batch planned from an earlier call's lengths)
                run(0)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStart()
            run(0)
            torch.cuda.synchronize()
            torch.cuda.cudart().cudaProfilerStop()
            print(f"CELL {cell_name} {label} kv_bytes {cell.kv_bytes}", flush=True)
        del cell, runs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
