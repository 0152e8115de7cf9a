#!/usr/bin/env python3
"""fakv's one-wave decode against a bare TMA stream of the same bytes, at
several lengths: each one's streaming rate and fixed cost per call (time =
bytes / rate + fixed, least squares), so that what fakv pays besides a
plain read shows as rate or as fixed cost.

    python bench/fixed_cost.py [--seqlens 2048,4096,8192,16384] [--batch 32] [--kv-heads 8] [--group 4]
        [--page 0] [--rounds 3]

fakv: bench_grid.py's cell (bf16, one query row, causal, head dim 128,
--group query heads per kv head) called with num_splits=1 and a ring of two stages
(plan_variants.py's `stages=2` variant and num_splits=1: one program per sequence and kv
head, the same program at every length; checked against a float32
reference first), and the same call with softcap=30 (more softmax work a
block; not checked). stream: stream_balance.py's `tma2 static N`, N =
batch x kv heads blocks reading as many bytes as the cell's K and V.
Rounds interleave everything; each time is bench_grid.py's (a CUDA graph
over copies that never sit in L2, median of 10 replays).
"""
import argparse
import os
import statistics
import sys
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from bench_grid import Cell, copy_bandwidth  # noqa: E402
from plan_variants import variant  # noqa: E402
from stream_balance import Reader  # noqa: E402
from timing import graph_time_ms  # noqa: E402


def fit(points):
    """(rate TB/s, fixed µs) of time = bytes / rate + fixed over (bytes, µs) points."""
    n = len(points)
    mx, my = sum(b for b, _ in points) / n, sum(t for _, t in points) / n
    slope = sum((b - mx) * (t - my) for b, t in points) / sum((b - mx) ** 2 for b, _ in points)
    return 1e-6 / slope if slope > 0 else float("nan"), my - slope * mx


def measure(s, b, hk, group, page, rounds):
    """(seqlen, bytes, median µs by implementation) of one length."""
    import fakv
    cell = Cell((f"b{b} s{s}", b, s, group * hk, hk, 128, False), page)
    reader = Reader(cell.kv_bytes)
    way = f"tma2 static {b * hk}"
    reader.check(way)

    def call(i, softcap=0.0):
        return fakv.flash_attn_with_kvcache(cell.q, cell.k[i], cell.v[i], cache_seqlens=cell.lens,
                                            block_table=cell.table, causal=True, num_splits=1, softcap=softcap)
    impls = {"fakv": call, "fakv softcap": lambda i: call(i, 30.0), "stream": lambda i: reader.launch(way, i % 2)}
    times = {k: [] for k in impls}
    with variant("stages=2"):
        out = call(0).float()
        err, tol = cell.error(out)
        assert err <= tol, f"s{s}: fakv's output differs by {err:.3g}"
        for _ in range(rounds):
            for name, run in impls.items():
                # (as many calls a graph for each: the stream's two buffers, the cache's copies, 2 at least)
                calls = [lambda i=i, r=run: r(i) for i in (0, 1)] if name == "stream" else cell.calls(run)
                ms, _ = graph_time_ms(calls, fallback=False)
                times[name].append(ms * 1e3)
    print(f"s{s}: {cell.kv_bytes / 2 ** 20:.0f} MiB: " + ", ".join(
        f"{k} {statistics.median(v):.1f} us [{min(v):.1f}-{max(v):.1f}]" for k, v in times.items()), flush=True)
    return s, cell.kv_bytes, {k: statistics.median(v) for k, v in times.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seqlens", default="2048,4096,8192,16384")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--group", type=int, default=4, help="query heads per kv head")
    ap.add_argument("--page", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    b, hk = args.batch, args.kv_heads
    rows = []
    for s in map(int, args.seqlens.split(",")):
        rows.append(measure(s, b, hk, args.group, args.page, args.rounds))
        torch.cuda.empty_cache()
    copy = copy_bandwidth()
    print(f"\nb{b}, {hk} kv heads, {'pages of %d' % args.page if args.page else 'contiguous'}, {b * hk} programs; "
          f"copy {copy:.3f} TB/s")
    print("| seqlen_k | MiB | " + " | ".join(f"{k} µs (% of copy)" for k in rows[0][2]) + " |")
    print("|---|---|" + "---|" * len(rows[0][2]))
    for s, nbytes, med in rows:
        print(f"| {s} | {nbytes / 2 ** 20:.0f} | " + " | ".join(
            f"{t:.1f} ({nbytes / (t * 1e-6) / 1e12 / copy:.1%})" for t in med.values()) + " |")
    for k in rows[0][2]:
        rate, fixed = fit([(nbytes, med[k]) for _, nbytes, med in rows])
        print(f"{k}: {rate:.3f} TB/s ({rate / copy:.1%} of copy) + {fixed:.1f} us a call")


if __name__ == "__main__":
    main()
