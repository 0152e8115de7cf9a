#!/usr/bin/env python3
"""Split counts on ragged and equal-length batches: GPU time per call (CUDA
graphs over rotating caches, bench_grid.py's cells) of fakv as planned
(num_splits=0), with FAKV_ADAPTIVE_SPLITS=4 (a batch of one wave gets 4
splits and kernels/splits.py's ADAPTIVE), with 2 (adaptive2), with 4 and
FAKV_MERGE_SPLITS=1 (adaptive-merged: no combine launch), with
longest-first on (a batch of several waves by its sequences' lengths; the
default unless FAKV_LONGEST_FIRST=0), and with fixed num_splits
(1: unsplit; 2-6: even shares), bf16 GQA 32/8 d128, contiguous
and pages of 256. Diagnostics for the planner (interface._ADAPTIVE_SPLITS),
not a benchmark against peers.

    python bench/ragged_splits.py
    ncu -k regex:"decode|combine" --metrics gpu__time_duration.sum,sm__cycles_active.max,sm__cycles_active.min \
        python bench/ragged_splits.py --ncu      # b32 s8K paged 256: 4 calls planned, then 4 with ADAPTIVE 4
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
import bench_grid as G  # noqa: E402

SHAPES = [("ragged b32 s<=16K", 32, 16384, 32, 8, 128, True), ("ragged b16 s<=32K", 16, 32768, 32, 8, 128, True),
          ("ragged b128 s<=4K", 128, 4096, 32, 8, 128, True), ("b32 s8K", 32, 8192, 32, 8, 128, False),
          ("b32 s32K", 32, 32768, 32, 8, 128, False), ("b16 s32K", 16, 32768, 32, 8, 128, False),
          ("b128 s8K", 128, 8192, 32, 8, 128, False)]
SPLITS = (0, "longest-first", "adaptive", "adaptive2", "adaptive-merged", 1, 2, 4, 6)
ADAPTIVE = {"adaptive": (4, False), "adaptive2": (2, False), "adaptive-merged": (4, True)}   # (splits, merged)


def ncu_calls():
    """Four calls of b32 s8K paged 256 as planned, then four with ADAPTIVE=4, for Nsight Compute."""
    import torch
    import fakv
    from fakv import interface, prepare
    cell = G.Cell(SHAPES[3], 256)
    for splits in (0, 4):
        interface._ADAPTIVE_SPLITS = splits
        interface._plan.cache_clear()
        prepare.CALLS.clear()
        for i in range(4):
            fakv.flash_attn_with_kvcache(cell.q, cell.k[i % cell.copies], cell.v[i % cell.copies],
                                         cache_seqlens=cell.lens, block_table=cell.table, causal=True)
    torch.cuda.synchronize()


def main():
    import torch
    import fakv
    from fakv import interface, prepare
    longest_first = interface._LONGEST_FIRST          # (FAKV_LONGEST_FIRST as set)
    adaptive = interface._ADAPTIVE_SPLITS             # (FAKV_ADAPTIVE_SPLITS as set)
    print(f"copy {G.copy_bandwidth():.2f} TB/s; us per call: s0 as planned (its split count and ADAPTIVE in "
          f"brackets), adaptive with FAKV_ADAPTIVE_SPLITS=4 (adaptive2: 2; adaptive-merged: 4 and "
          f"FAKV_MERGE_SPLITS=1), sN with num_splits=N")
    for shape in SHAPES:
        for page in (0, 256):
            cell = G.Cell(shape, page)
            p = interface.plan(cell.b, 1, cell.h, cell.hk, cell.d, "bf16", bool(page), page or cell.s, cell.s, True,
                               0, torch.cuda.get_device_properties(0).multi_processor_count)
            row = []
            for s in SPLITS:
                # (FAKV_ADAPTIVE_SPLITS, FAKV_MERGE_SPLITS), set before the calls are made and captured
                # ("planned", s0: the default, by the lengths hint; the rest never ADAPTIVE unless asked)
                interface._ADAPTIVE_SPLITS, prepare.MERGE_SPLITS = ADAPTIVE.get(s, (None if s == 0 else 0, False))
                interface._LONGEST_FIRST = s == "longest-first" or longest_first
                interface._plan.cache_clear()
                prepare.CALLS.clear()
                run = lambda i, s=s: fakv.flash_attn_with_kvcache(  # noqa: E731
                    cell.q, cell.k[i], cell.v[i], cache_seqlens=cell.lens, block_table=cell.table, causal=True,
                    num_splits=0 if s in ADAPTIVE or s == "longest-first" else s)
                t, _ = G.graph_time_ms(cell.calls(run))
                row.append(f"{s if s in ADAPTIVE or s == 'longest-first' else f's{s}'}={t * 1e3:7.1f}")
            interface._ADAPTIVE_SPLITS, prepare.MERGE_SPLITS, interface._LONGEST_FIRST = adaptive, False, longest_first
            interface._plan.cache_clear()
            prepare.CALLS.clear()
            print(f"{shape[0]:20} page {page:3} [{p['num_splits']} splits, ADAPTIVE={p['decode']['ADAPTIVE']}, "
                  f"LONGEST_FIRST={p['decode']['LONGEST_FIRST']}]: "
                  + " ".join(row), flush=True)
            del cell
            torch.cuda.empty_cache()


if __name__ == "__main__":
    ncu_calls() if "--ncu" in sys.argv else main()
