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

    python bench/host_drift.py MODE

instead runs the paged call in fourteen rounds of 500 calls and, after
each, times torch.empty_like and a Python loop of 1000 iterations (the
host's speed right then); MODE says what runs between or before the rounds:
`alone` nothing, `interleaved` a round of the Triton peer
(bench/peers/triton_decode.py), `triton-imported` nothing with Triton
imported and warmed, `b8-between` a round of fakv at b8 s8192 (GPU-bound),
`busy-first` a 2 s busy loop first. Session 24: the call's host time
follows the loop's, whatever the mode (docs/gpu-results.md).
"""
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))      # (triton_decode, the Triton peer)
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from bench_host import eager_round, eager_us, gpu_us, inputs, warmed  # noqa: E402

MODES = ("alone", "interleaved", "triton-imported", "b8-between", "busy-first")


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



def speed(q):
    """(torch.empty_like(q), a Python loop of 1000) in microseconds, means of 200."""
    import torch
    t = time.perf_counter()
    for _ in range(200):
        torch.empty_like(q)
    empty = (time.perf_counter() - t) / 200 * 1e6
    t = time.perf_counter()
    for _ in range(200):
        for _ in range(1000):
            pass
    return empty, (time.perf_counter() - t) / 200 * 1e6


def rounds(mode):
    start = time.perf_counter()
    import fakv
    q, k, v, lens, table = inputs(1, 1024, True)
    between = None
    call = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
    warmed(call)
    if mode in ("interleaved", "triton-imported"):
        import triton_decode
        peer = lambda: triton_decode.decode(q, k, v, lens, table)  # noqa: E731
        warmed(peer)
        between = peer if mode == "interleaved" else None
    if mode == "b8-between":
        q8, k8, v8, lens8, table8 = inputs(8, 8192, True)
        between = lambda: fakv.flash_attn_with_kvcache(q8, k8, v8, cache_seqlens=lens8, block_table=table8)  # noqa: E731
        warmed(between)
    if mode == "busy-first":
        t = time.perf_counter()
        while time.perf_counter() - t < 2.0:
            pass
    hosts = []
    for r in range(14):
        if between is not None:
            eager_round(between)
        eager, host = eager_round(call)
        empty, loop = speed(q)
        hosts.append(host)
        print(f"{mode:16} round {r:2d} t={time.perf_counter() - start:6.2f}s eager {eager:6.2f} host {host:6.2f} us"
              f"  empty_like {empty:5.2f}  loop {loop:6.2f}", flush=True)
    print(f"{mode:16} host median {statistics.median(hosts):.2f}, first 3 {statistics.mean(hosts[:3]):.2f}, "
          f"last 3 {statistics.mean(hosts[-3:]):.2f} us")



if __name__ == "__main__":
    if len(sys.argv) == 1:
        main()
    elif len(sys.argv) == 2 and sys.argv[1] in MODES:
        rounds(sys.argv[1])
    else:
        sys.exit(f"usage: host_drift.py [{'|'.join(MODES)}]")
