#!/usr/bin/env python3
"""Whether a contiguous cache pays for its sequences sitting a power of
two apart: bench_grid.py's cells (MHA b8 s8K, b128 s1K, b32 s8K, b8 s32K)
with the batch stride padded by 0, 1, 8 or 64 rows, and in pages of 256,
interleaved over 3 rounds (outputs checked against bench_grid's float32
reference first):

    python bench/padded_caches.py

docs/gpu-results.md, session 18 (run as .carry/exp/camp.py, this code):
every variant of a cell within 0.5 % of the others.
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from bench_grid import SHAPES, Cell  # noqa: E402
from timing import graph_time_ms  # noqa: E402


def padded(shape, pad):
    """bench_grid's contiguous Cell, its caches views of (copies, b, s + pad, hk, d) tensors."""
    import torch
    c = Cell(shape, 0)
    if pad:
        c.k = c.v = None
        torch.cuda.empty_cache()
        full = lambda: torch.randn((c.copies, c.b, c.s + pad, c.hk, c.d), device="cuda",  # noqa: E731
                                   dtype=torch.bfloat16)
        c.k, c.v = full()[:, :, :c.s], full()[:, :, :c.s]
    return c


def main():
    import torch
    import fakv
    shapes = {s[0]: s for s in SHAPES}
    for name in ("MHA b8 s8K", "b128 s1K", "b32 s8K", "b8 s32K"):
        cells = {f"pad {pad}": padded(shapes[name], pad) for pad in (0, 1, 8, 64)}
        cells["pages 256"] = Cell(shapes[name], 256)
        times = {k: [] for k in cells}
        for _ in range(3):
            for label, c in cells.items():
                run = lambda i, c=c: fakv.flash_attn_with_kvcache(c.q, c.k[i], c.v[i], cache_seqlens=c.lens,  # noqa: E731
                                                                  block_table=c.table, causal=True)
                err, tol = c.error(run(0))
                assert err <= tol, (name, label, err)
                t, _ = graph_time_ms(c.calls(run), warm_s=0.1)
                times[label].append(t * 1e3)
        print(name, "  ".join(f"{k}: {statistics.median(v):.1f} us" for k, v in times.items()), flush=True)
        del cells
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
