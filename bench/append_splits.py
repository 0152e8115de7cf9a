#!/usr/bin/env python3
"""Where an appending call's time goes, against its split count: the plain
call and decode appending one token itself (FAKV_FUSED_APPEND forced)
without rotary, with interleaved and with NeoX rotary, at each num_splits
given (0: the plan's), bf16 32/8 heads d128 paged 256 s8192. Medians of 7
interleaved graph timings (20 calls, 15 replays). The last split attends
the new keys after its share of the cache: its tail shows as the gap.

    python bench/append_splits.py [BATCH [SPLITS,...]]      # default: 1  0,16,22,26,29,32,43
"""
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
import source_tree  # noqa: E402,F401
import torch  # noqa: E402
import fakv  # noqa: E402
from fakv import interface  # noqa: E402
from bench_decode import D, appending_inputs  # noqa: E402
from timing import graph_time_ms  # noqa: E402

interface._FUSED_APPEND = True
B = int(sys.argv[1]) if len(sys.argv) > 1 else 1
SPLITS = [int(s) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else [0, 16, 22, 26, 29, 32, 43]
KINDS = ("plain", "kv", "gptj", "neox")
q, k, v, lens, table, kn, vn, cos, sin = appending_inputs(B, 8192)
f = fakv.flash_attn_with_kvcache


def call(kind, s):
    if kind == "plain":
        return lambda: f(q, k, v, cache_seqlens=lens, block_table=table, num_splits=s)
    if kind == "kv":
        return lambda: f(q, k, v, kn, vn, cache_seqlens=lens, block_table=table, num_splits=s)
    return lambda: f(q, k, v, kn, vn, cos, sin, cache_seqlens=lens, block_table=table, num_splits=s,
                     rotary_interleaved=kind == "gptj")


fns = {(kind, s): call(kind, s) for s in SPLITS for kind in KINDS}
for fn in fns.values():
    fn()
torch.cuda.synchronize()
times = {c: [] for c in fns}
for _ in range(7):
    for c, fn in fns.items():
        times[c].append(graph_time_ms([fn] * 20, replays=15, warmup=2, fallback=False)[0] * 1e3)
for s in SPLITS:
    p = interface.plan(B, 1, 32, 8, D, "bf16", True, 256, 8192, False, s, appending=True)
    base = statistics.median(times[("plain", s)])
    row = "  ".join(f"{kind} {statistics.median(times[(kind, s)]):6.2f} "
                    f"({statistics.median(times[(kind, s)]) / base - 1:+.1%})" for kind in KINDS)
    print(f"b{B} num_splits={s:2d} (grid {p['decode_grid']}): {row}", flush=True)
