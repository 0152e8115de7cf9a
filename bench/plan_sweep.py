#!/usr/bin/env python3
"""Which plan reads the cache fastest where bench_grid.py shows fakv behind:
the API call of a grid cell under other split counts, key blocks and ring
depths than fakv.interface.plan picks (plan's result patched in process;
each variant's output checked against the default plan's).

    python bench/plan_sweep.py

Times as bench_grid.py (CUDA graphs over rotating caches); prints us and
the fraction of the copy bandwidth measured in the same run.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_grid import SHAPES, Cell, copy_bandwidth  # noqa: E402
from timing import graph_time_ms  # noqa: E402

# (shape name, layout, [(num_splits, BLOCK_N, stages), ...]); None keeps plan's choice.
SWEEP = [
    ("b1 s1K", 0, [(0, None, None), (4, None, None), (8, None, None), (14, None, None)]),
    ("b1 s1K", 256, [(0, None, None), (4, None, None), (8, None, None), (14, None, None)]),
    ("b1 s8K", 256, [(0, None, None), (16, None, None), (48, None, None), (0, None, 4)]),
    ("MHA b1 s32K", 0, [(0, None, None), (16, None, None), (32, None, None)]),
    ("b8 s8K", 16, [(0, None, None), (0, 16, 3), (0, 16, 4), (0, 16, 6), (0, 16, 8)]),
    ("b32 s8K", 16, [(0, None, None), (0, 16, 4), (0, 16, 6), (0, 16, 8)]),
    ("d64 b8 s8K", 0, [(0, None, None), (0, 64, 2), (0, 64, 3), (0, 64, 4), (0, 32, 4), (0, 32, 6)]),
    ("d64 b32 s32K", 0, [(0, None, None), (0, 64, 3), (0, 64, 4), (0, 32, 6)]),
    ("d256 b1 s8K", 16, [(0, None, None), (0, 16, 4), (0, 16, 6)]),
    ("b8 s8K", 256, [(0, None, None), (0, None, 4), (0, 64, 3), (8, None, None)]),
]


def main():
    import torch
    import fakv
    from fakv import interface, prepare
    original = interface._plan
    override = {}

    def patched(*args, **kwargs):
        p = original(*args, **kwargs)
        if override.get("BLOCK_N"):
            p = dict(p, decode=dict(p["decode"], BLOCK_N=override["BLOCK_N"]))
        if override.get("stages"):
            p = dict(p, decode_options=dict(p["decode_options"], stages=override["stages"]))
        return p
    interface._plan = patched
    copy_bw = copy_bandwidth()
    print(f"copy bandwidth {copy_bw:.2f} TB/s")
    shapes = {s[0]: s for s in SHAPES}
    for name, page, variants in SWEEP:
        cell = Cell(shapes[name], page)
        ref = None
        for splits, block_n, stages in variants:
            override.clear()
            override.update(BLOCK_N=block_n, stages=stages)
            prepare.CALLS.clear()                  # prepared calls hold the plan they were made with
            run = lambda i, s=splits: fakv.flash_attn_with_kvcache(  # noqa: E731
                cell.q, cell.k[i], cell.v[i], cache_seqlens=cell.lens, block_table=cell.table, causal=True,
                num_splits=s)
            label = f"{name:>14} layout {page:>3}: splits {splits or 'plan':>4} BLOCK_N {block_n or 'plan':>4} " \
                    f"stages {stages or 'plan':>4}"
            try:
                out = run(0).float()
                torch.cuda.synchronize()
                ref = out if ref is None else ref
                err = (out - ref).abs().max().item()
                if err > 2e-2:
                    print(f"{label}: output differs from the default plan's by {err:.3g}", flush=True)
                    continue
                t, _ = graph_time_ms(cell.calls(run))
                print(f"{label}: {t * 1e3:8.1f} us {cell.kv_bytes / (t * 1e-3) / 1e12 / copy_bw:6.1%}", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"{label}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}", flush=True)


if __name__ == "__main__":
    main()
