#!/usr/bin/env python3
"""What a one-token append with rotary adds to a decode call's GPU time
(issue 9: at most 5 %): bf16, 32/8 heads, head dim 128, paged 256, s8192,
batch 1 and 32, rotary interleaved (GPT-J) and NeoX, and the seed's decode
step (NeoX, float32 cos/sin, causal); the plain call and the
appending call timed in turn 7 times (CUDA graphs of 20 calls, 15
replays), medians and the range of each.

    python bench/append_cost.py [BATCH[:SEQLEN] ...]       # default: 1 32 (SEQLEN 8192)
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
import source_tree  # noqa: E402,F401
import torch  # noqa: E402
import fakv  # noqa: E402
from bench_decode import appending_inputs  # noqa: E402
from timing import graph_time_ms  # noqa: E402

# (rotary style, cos/sin dtype, causal): the API's default; NeoX; the seed's decode step (NeoX, float32
# angles, causal; seqlen_q 1, so causal changes no mask).
STYLES = [("interleaved", torch.bfloat16, False), ("NeoX", torch.bfloat16, False), ("NeoX", torch.float32, True)]

CELLS = [tuple(int(x) for x in (a + ":8192").split(":")[:2]) for a in sys.argv[1:]] or [(1, 8192), (32, 8192)]
for b, S in CELLS:
    for style, angle_dtype, causal in STYLES:
        q, k, v, lens, table, kn, vn, cos, sin = appending_inputs(b, S, angle_dtype)
        plain = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,  # noqa: E731
                                                     causal=causal)
        app = lambda: fakv.flash_attn_with_kvcache(q, k, v, kn, vn, cos, sin, cache_seqlens=lens, block_table=table,  # noqa: E731
                                                   causal=causal, rotary_interleaved=style == "interleaved")
        t0, t1 = [], []
        for _ in range(7):
            t0.append(graph_time_ms([plain] * 20, replays=15, warmup=3, fallback=False)[0] * 1e3)
            t1.append(graph_time_ms([app] * 20, replays=15, warmup=3, fallback=False)[0] * 1e3)
        m0, m1 = statistics.median(t0), statistics.median(t1)
        name = f"rotary {style}, {str(angle_dtype).split('.')[1]} angles{', causal' if causal else ''}"
        print(f"b{b} s{S} paged 256, {name}: plain {m0:.2f} us, + append 1 token with rotary {m1:.2f} us "
              f"({m1 / m0 - 1:+.1%}); plain runs {min(t0):.2f}-{max(t0):.2f}, appending {min(t1):.2f}-{max(t1):.2f}",
              flush=True)
        torch.cuda.empty_cache()
