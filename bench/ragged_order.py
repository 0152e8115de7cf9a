#!/usr/bin/env python3
"""What longest_first's search costs the ragged batch: bench_grid.py's ragged b128 s<=4K cell with its lengths as
drawn or sorted longest first (the same bytes), fakv as planned, or (FAKV_LONGEST_FIRST=0 in the environment) in
index order: on the sorted batch, exactly longest first with no search, the upper bound of an order the host
would derive from the lengths hint. Each beside stream_balance.py's bare ring over the same bytes (tma2kv static
1024), rounds interleaved; prints both times and their ratio (run the modes as separate processes, alternated).

    python bench/ragged_order.py [--page 0|16|64|256] [--order drawn|sorted] [--rounds 5]
"""
import argparse
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
import source_tree  # noqa: E402,F401
from bench_grid import SHAPES, Cell, copy_bandwidth  # noqa: E402
from stream_balance import Reader  # noqa: E402
from timing import graph_time_ms  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", type=int, default=0)
    ap.add_argument("--order", choices=("drawn", "sorted"), default="drawn")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    import torch
    import fakv
    cell = Cell(next(s for s in SHAPES if s[0] == "ragged b128 s<=4K"), args.page)
    if args.order == "sorted":
        cell.lens = torch.sort(cell.lens, descending=True).values.to(torch.int32).contiguous()

    def call(i):
        return fakv.flash_attn_with_kvcache(cell.q, cell.k[i], cell.v[i], cache_seqlens=cell.lens,
                                            block_table=cell.table, causal=True)
    call(0)
    err, tol = cell.error(call(0))         # (the second call: the ragged plan, from the first's lengths)
    assert err <= tol, f"fakv's output differs by {err:.3g}"
    timed = {"fakv": cell.calls(call),
             "bare": Reader(cell.kv_bytes).cell_calls("tma2kv static", cell)[1]}
    us = {k: [] for k in timed}
    for _ in range(args.rounds):
        for k, calls in timed.items():
            us[k].append(graph_time_ms(calls, fallback=False, warm_s=0.1)[0] * 1e3)
    copy = copy_bandwidth()
    f, b = statistics.median(us["fakv"]), statistics.median(us["bare"])
    print(f"@{args.page} {args.order} longest_first={os.environ.get('FAKV_LONGEST_FIRST', '1')}: fakv {f:.1f} us "
          f"({cell.kv_bytes / f / 1e6 / copy:.1%} of copy {copy:.2f} TB/s), bare {b:.1f}, fakv/bare {f / b:.4f}",
          flush=True)


if __name__ == "__main__":
    main()
