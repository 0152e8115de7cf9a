#!/usr/bin/env python3
"""FlashInfer's JIT modules for bench_grid.py's head dims (64, 128, 256) and
group sizes (GQA 4, MHA), compiled by one small call each of its CUDA-core
and tensor-core decode, so that the grid times calls, not nvcc: 112 s on
the H200's 16 cores (session 31), a 7 MB cache (~/.cache/flashinfer).
FlashInfer on the path as bench/README.md says:

    PYTHONPATH=/tmp/fi CUDA_HOME=/usr/local/cuda FLASHINFER_CUDA_ARCH_LIST=9.0a python3 bench/flashinfer_warm.py
"""
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
import torch  # noqa: E402
from bench_grid import Cell, peer_calls, shapes_by_name  # noqa: E402

by_name = shapes_by_name()
for cell_name in ("b1 s1K@16", "MHA b1 s32K@16", "d64 b8 s8K@16", "d256 b1 s8K@16"):
    name, page = cell_name.rsplit("@", 1)
    cell = Cell(by_name[name], int(page))
    for peer in ("flashinfer", "flashinfer-tc"):
        t = time.time()
        run = peer_calls(cell, peer, False)
        run(0)
        torch.cuda.synchronize()
        print(f"{cell_name} {peer}: {time.time() - t:.1f} s", flush=True)
    del cell
    torch.cuda.empty_cache()
