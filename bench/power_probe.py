#!/usr/bin/env python3
"""Power and clocks per implementation under sustained load (the GPU machine,
FlashInfer on the path as bench/README.md says): each replayed for 1.5 s
after a 1.5 s idle, then its GPU time per call over 10 more replays, the
power draw and SM clock read then (torch.cuda's NVML readings). b128 s32K
paged 256, b32 s32K and b8 s8K contiguous; fakv, FlashInfer-tc, and cuDNN
through SDPA where it runs (contiguous). docs/gpu-results.md, sessions 11 and 12.

    python bench/power_probe.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_grid as G  # noqa: E402
from timing import graph_time_ms  # noqa: E402


def main():
    import torch
    shapes = {s[0]: s for s in G.SHAPES}
    for name, page in (("b128 s32K", 256), ("b32 s32K", 0), ("b8 s8K", 0)):
        cell = G.Cell(shapes[name], page)
        runs = {"fakv": G.fakv_calls(cell), "fi-tc": G.flashinfer_calls(cell, True)}
        if page == 0:
            runs["sdpa"] = G.sdpa_calls(cell, False)[0]
        for _ in range(2):
            for n, r in runs.items():
                time.sleep(1.5)
                ms, _ = graph_time_ms([lambda i=i: r(i) for i in range(cell.copies)], warm_s=1.5)
                print(f"{name} p{page} {n:6}: {ms * 1e3:8.1f} us  {torch.cuda.power_draw() / 1000:4.0f} W  "
                      f"sm {torch.cuda.clock_rate()} MHz  {torch.cuda.temperature()} C", flush=True)
        del cell, runs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
