#!/usr/bin/env python3
"""One plain call and one appending call that decode appends itself
(FAKV_FUSED_APPEND forced), bf16 32/8 heads d128 paged 256 s8192, inside
the CUDA profiler's range, for Nsight Compute: where the fused call's extra
time goes (session 14: the last split's tail, docs/decisions.md, "Power").

    ncu --clock-control none --profile-from-start off -k regex:decode \
        --section SpeedOfLight --section Occupancy --section WarpStateStats \
        python3 bench/profile_append.py [BATCH]          # default 8
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
import source_tree  # noqa: E402,F401
import torch  # noqa: E402
import fakv  # noqa: E402
from fakv import interface  # noqa: E402
from bench_decode import appending_inputs  # noqa: E402

interface._FUSED_APPEND = True
b = int(sys.argv[1]) if len(sys.argv) > 1 else 8
q, k, v, lens, table, kn, vn, cos, sin = appending_inputs(b, 8192)
calls = [lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=True),
         lambda: fakv.flash_attn_with_kvcache(q, k, v, kn, vn, cos, sin, cache_seqlens=lens, block_table=table,
                                              causal=True)]
for _ in range(3):                 # compiled and warm
    for c in calls:
        c()
torch.cuda.synchronize()
torch.cuda.profiler.start()
for c in calls:
    c()
torch.cuda.synchronize()
torch.cuda.profiler.stop()
print(f"b{b}: one plain call, then one appending call decode appends itself, profiled")
