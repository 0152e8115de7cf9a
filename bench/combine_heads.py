#!/usr/bin/env python3
"""Combine's heads per program (HEAD_BLOCK) at batches of several decode
waves' worth of programs, where combine's programs cannot wait beside
decode's (bench/combine_fit.py is batch 1): the plan's choice against
smaller ones (the plan's result patched in process: combine's constexpr and
grid), plain calls, bf16 32/8 heads d128, paged 256 and contiguous. Each
forced value's output is checked against the planned one.

    python bench/combine_heads.py [--fixed N]    # --fixed: the planned value as if the cap were N (32: none)

GPU time per call (us), CUDA graphs of 20 calls, medians of 5 interleaved rounds.
"""
import os
import statistics
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "test", "gpu")]
import source_tree  # noqa: E402,F401
import torch  # noqa: E402
import fakv  # noqa: E402
from fakv import interface, prepare  # noqa: E402
from bench_decode import inputs  # noqa: E402
from timing import graph_time_ms  # noqa: E402

CELLS = [(1, 8192, True), (2, 8192, True), (4, 8192, True), (8, 8192, True), (8, 8192, False), (16, 8192, True),
         (8, 1024, True), (4, 32768, True), (8, 32768, False)]
FORCE = [None]
real_plan = interface.plan


def plan(*args, **kwargs):
    p = real_plan(*args, **kwargs)
    if FORCE[0] and p["num_splits"] > 1:
        batch, heads = args[0], args[2]
        p["combine"]["HEAD_BLOCK"] = FORCE[0]
        p["combine_grid"] = (heads // FORCE[0], p["combine_grid"][1], batch)
    return p


def forced(hb, call):
    def fn():
        if FORCE[0] != hb:
            FORCE[0] = hb
            prepare.CALLS.clear()          # (prepared calls are keyed by the arguments, not the plan)
        return call()
    return fn


def main():
    if "--fixed" in sys.argv:
        interface._COMBINE_MAX_HEADS = int(sys.argv[sys.argv.index("--fixed") + 1])
        interface._plan.cache_clear()
    interface.plan = plan
    for b, s, paged in CELLS:
        q, k, v, lens, table = inputs(torch, paged, B=b, S=s)
        call = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
        p = real_plan(b, 1, 32, 8, 128, "bf16", paged, 256, s, False, 0)
        planned = p["combine"]["HEAD_BLOCK"]
        if p["num_splits"] == 1:
            continue
        fns = {None: forced(None, call), **{hb: forced(hb, call) for hb in (16, 8, 4, 2, 1) if hb < planned}}
        ref = fns[None]().float()
        bad = [hb for hb, f in fns.items() if (f().float() - ref).abs().max().item() > 1e-2]
        times = {hb: [] for hb in fns}
        for _ in range(5):
            for hb, f in fns.items():
                times[hb].append(graph_time_ms([f] * 20, replays=15, warmup=2, fallback=False)[0] * 1e3)
        med = {hb: statistics.median(t) for hb, t in times.items()}
        print(f"b{b} s{s} {'paged 256' if paged else 'contiguous'} ({p['num_splits']} splits): planned {planned} "
              f"heads {med[None]:.2f} us; " + ", ".join(f"{hb} {med[hb]:.2f} ({med[hb] / med[None] - 1:+.1%})"
                                                       for hb in fns if hb) + f"; mismatches {bad or 'none'}",
              flush=True)
        del q, k, v
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
