#!/usr/bin/env python3
"""Each kernel of a small API call alone, for Nsight Compute: b1 s1024 and
b1 s8192 (32/8 heads, d128, bf16; paged 256 and contiguous), with decode
and combine as planned and with decode merging its own splits
(FAKV_MERGE_SPLITS), three calls each inside cudaProfilerStart/Stop:

    ncu --profile-from-start off --clock-control none --cache-control all \
        --metrics gpu__time_duration.sum -k regex:"decode|combine" python3 bench/kernel_times.py

(Without ncu it just runs the calls.) docs/gpu-results.md, session 18:
at b1 s1024 decode 5.4-6.4 us and combine 2.9-3.1, the merged decode
10.9-11.2.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401


def main():
    import torch
    import fakv
    from fakv import prepare
    from bench_decode import inputs
    for seqlen in (1024, 8192):
        for paged in (True, False):
            q, k, v, lens, table = inputs(torch, paged, B=1, S=seqlen)
            for merge in (False, True):
                prepare.MERGE_SPLITS = merge          # (read per call by the plan; prepared calls forgotten)
                prepare.CALLS.clear()
                call = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens,  # noqa: E731
                                                            block_table=table)
                for _ in range(3):
                    call()
                torch.cuda.synchronize()
                print(f"b1 s{seqlen} {'paged 256' if paged else 'contiguous'}{', merged' if merge else ''}",
                      flush=True)
                torch.cuda.cudart().cudaProfilerStart()
                for _ in range(3):
                    call()
                torch.cuda.synchronize()
                torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    main()
