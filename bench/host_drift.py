#!/usr/bin/env python3
"""Whether an eager b1 s1024 call's host time is the layout's or the
host's: bench_host.py's eager measure (500 calls in a row, median of 9
rounds) for the paged and the contiguous call in turn, both orders, three
rounds, then pinned to one core:

    python bench/host_drift.py

On the H200's lent host (session 18) both layouts took 19.8-21.1 us per
call in one process, then 14.8-15.4 pinned; 14.2-16.3 throughout in the
next (paged 0.4-1.4 us above contiguous): the 8-16 us spread of the eager
figure between runs is the host's state, not the call's.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from bench_host import eager_us, gpu_us, inputs  # noqa: E402


def main():
    import torch
    import fakv
    calls = {}
    for paged in (True, False):
        q, k, v, lens, table = inputs(1, 1024, paged)
        calls["paged 256" if paged else "contiguous"] = (
            lambda q=q, k=k, v=v, lens=lens, table=table:
            fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table))
    for name, fn in calls.items():
        for _ in range(20):
            fn()
        torch.cuda.synchronize()
        print(f"{name}: GPU {gpu_us(fn):.2f} us per call (graph)", flush=True)
    names = list(calls)
    for rnd in range(3):
        for name in (names if rnd % 2 == 0 else names[::-1]):
            eager, host = eager_us(calls[name])
            print(f"round {rnd} {name:10}: eager {eager:5.1f} us, host {host:5.1f} us", flush=True)
    core = sorted(os.sched_getaffinity(0))[-1]
    os.sched_setaffinity(0, {core})
    for rnd in range(2):
        for name in names:
            eager, host = eager_us(calls[name])
            print(f"pinned to core {core}, round {rnd} {name:10}: eager {eager:5.1f} us, host {host:5.1f} us",
                  flush=True)


if __name__ == "__main__":
    main()
