#!/usr/bin/env python3
"""An eager b1 s1024 call's host and GPU time under the ways its splits can
be merged: `combine` (FAKV_CLUSTER_SPLITS=0: decode, then combine
launched programmatically behind it), `cluster` (FAKV_CLUSTER_SPLITS=1:
the splits of a row one thread-block cluster merging through distributed
shared memory: one launch; planned for this call since session 19) and `1 split` (num_splits=1: one launch, no merge, the reference
for one launch's host time). Per mode and layout: the GPU time of the call
replayed from a CUDA graph, the eager time per call (500 in a row), the
host time per call before the synchronise, and eager - GPU (bench_host's
overhead); three rounds interleaving the modes, medians.

    python bench/eager_modes.py
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from bench_host import eager_us, gpu_us, inputs, warmed  # noqa: E402

MODES = ("combine", "cluster", "1 split")


def main():
    import fakv
    from fakv import interface, prepare
    rows = {}
    for rnd in range(3):
        for paged in (True, False):
            q, k, v, lens, table = inputs(1, 1024, paged)
            ref = None
            for mode in (MODES if rnd % 2 == 0 else MODES[::-1]):
                interface._CLUSTER_SPLITS = mode == "cluster"
                prepare.CALLS.clear()
                splits = 1 if mode == "1 split" else 0
                fn = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,  # noqa
                                                          num_splits=splits)
                out = warmed(fn)
                ref = out if ref is None else ref
                err = (out.float() - ref.float()).abs().max().item()
                assert err < 2e-2, (mode, err)
                gpu = gpu_us(fn)
                eager, host = eager_us(fn)
                rows.setdefault((paged, mode), []).append((gpu, eager, eager - gpu, host))
    print(f"{'b1 s1024':22} {'gpu':>7} {'eager':>7} {'overhead':>9} {'host':>7}   (us, medians of 3 rounds)")
    for (paged, mode), r in rows.items():
        med = [statistics.median(x[i] for x in r) for i in range(4)]
        print(f"{('paged 256 ' if paged else 'contiguous ') + mode:22} " + " ".join(f"{m:7.2f}" for m in med[:2])
              + f" {med[2]:9.2f} {med[3]:7.2f}")


if __name__ == "__main__":
    main()
