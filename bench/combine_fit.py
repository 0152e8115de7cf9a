#!/usr/bin/env python3
"""Why fakv.interface.plan keeps combine's programs inside decode's wave:
b1 s8192 paged 256 (bf16, 32/8 heads, d128), the plain call and a one-token
append with interleaved rotary, at 29, 32 and 33 splits, with combine's
heads per program as planned and forced to 1, 2 and 4 (plan's result
patched in process). Combine is launched early (programmatic dependent
launch); its programs wait in the SMs' free slots (two decode programs per
SM, 132 SMs), so what does not fit beside decode starts late.

    python bench/combine_fit.py

GPU time per call (us), CUDA graphs of 20 calls, median of 5.
"""
import math
import os
import statistics
import sys

sys.path[:0] = [os.path.dirname(os.path.abspath(__file__)), os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "test", "gpu")]
import source_tree  # noqa: E402,F401
import torch  # noqa: E402
import fakv  # noqa: E402
from fakv import interface, prepare  # noqa: E402
from timing import graph_time_ms  # noqa: E402

H, HK, D, PAGE, S = 32, 8, 128, 256, 8192


def main():
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((1, 1, H, D), device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn((S // PAGE, PAGE, HK, D), device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn_like(k)
    table = torch.randperm(S // PAGE, device="cuda", generator=g).to(torch.int32)[None]
    lens = torch.full((1,), S - 1, dtype=torch.int32, device="cuda")
    kn, vn = (torch.randn((1, 1, HK, D), device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
    angle = torch.rand((S, D // 2), device="cuda", generator=g)
    cos, sin = angle.cos().bfloat16(), angle.sin().bfloat16()
    calls = {
        "plain": lambda ns: lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,
                                                                 num_splits=ns),
        "append+rotary": lambda ns: lambda: fakv.flash_attn_with_kvcache(
            q, k, v, kn, vn, cos, sin, cache_seqlens=lens, block_table=table, num_splits=ns)}
    original = interface.plan
    print(f"{'heads per combine program':26}" + "".join(f"{c + ' ' + str(ns):>22}" for c in calls
                                                         for ns in (29, 32, 33)))
    for hb in (0, 1, 2, 4):
        def plan(*a, **kw):
            p = original(*a, **kw)
            if hb:
                p["combine"]["HEAD_BLOCK"] = hb
                p["combine_grid"] = (math.ceil(a[2] / hb),) + tuple(p["combine_grid"][1:])
            return p
        interface.plan = plan
        prepare.CALLS.clear()
        row = []
        for make in calls.values():
            for ns in (29, 32, 33):
                fn = make(ns)
                row.append(statistics.median(graph_time_ms([fn] * 20, replays=15, warmup=3, fallback=False)[0] * 1e3
                                             for _ in range(5)))
        print(f"{hb or 'planned':<26}" + "".join(f"{t:22.2f}" for t in row), flush=True)
    interface.plan = original


if __name__ == "__main__":
    main()
