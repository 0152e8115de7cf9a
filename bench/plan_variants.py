#!/usr/bin/env python3
"""fakv's decode under variants of its plan, cell by cell, next to chosen
peers: what a change of the plan would win or lose before it is made.

    python bench/plan_variants.py --cells "b32 s8K@16,ragged b32 s<=16K@256" \
        --variants planned,swap=0,stages=2,adaptive=4 [--peers flashinfer-tc,sdpa] [--sustain 0.3] [--rounds 3]

A cell is one of bench_grid.py's shapes and a layout (@0: contiguous, @16,
@64, @256: pages; @16s: pages of 16 in order, page j of sequence b at b x
pages a sequence + j: the memory of a contiguous cache). A variant changes fakv.interface for the call being
timed: `planned` (nothing), `swap=0|1` (FAKV_SWAP_AB), `stages=N` (the
decode's ring depth), `ctas=N` (at most N decode programs an SM: @fakv.jit's
ctas_per_sm), `splits=N` (num_splits passed to the call),
`adaptive=N` (FAKV_ADAPTIVE_SPLITS), `merge` (FAKV_MERGE_SPLITS;
`mergeregs=0`: its decode without setmaxnreg's rebalancing), `regs=P/C`
(any other decode's producer and consumer registers moved by setmaxnreg),
`order=seq|heads` (decode's grid sequences first, or heads first),
`early=0|1` (decode launched programmatically never / always:
interface._EARLY_DECODE_BYTES), `hint=0` (FAKV_LENGTHS_HINT=0),
`minblocks=N` (the key blocks a swapped split reads at least, head dims
up to 128: interface._SPLIT_MIN_BLOCKS_SWAPPED), `gather=0|1` (pages smaller
than a key block gathered, not by TMA: FAKV_GATHER_PAGES), `rowboxes=0|1`
(TMA boxes of 16 rows, a row's channels asked for together, none past a
sequence's last key: FAKV_ROW_BOXES, the default at head dims up to 128), `cluster=1`
(2 to 8 splits merged in a thread-block cluster: FAKV_CLUSTER_SPLITS), `longest=0|1` (a batch
of several waves run longest first or in index order: FAKV_LONGEST_FIRST), `warm=N` (each K / V copy
also prefetching into L2 the first lines of the tile N ahead: FAKV_WARM_PAGES, an experiment), or several
joined by `+` (`stages=2+splits=6`). Each
output is checked against a float32 reference first, and every call of the timed replays after
(bench_grid.py's rule); a call that cannot be captured in a CUDA graph fails (its host time is not
timed as GPU time). A switch takes 0 or 1 (`merge` no value): any other value is an error.
Rounds interleave the implementations (A B C, A B C, ...); each timing is
bench_grid.py's: a CUDA graph over rotating caches, after `--sustain`
seconds of its replays. Cells are bench_grid.py's SHAPES and MORE_SHAPES;
`--shapes "b2 s1K=2,1024,32,8,128"` adds others (batch, seqlen_k, heads,
kv_heads, head_dim).
Prints, per cell, each implementation's median and range over the
rounds, and its ratio to the first variant.
"""
import argparse
import contextlib
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from bench_grid import PEERS, Cell, names_of, peer_calls, shapes_by_name  # noqa: E402
from timing import graph_time_ms, need_cuda  # noqa: E402


SWITCHES = ("swap", "gather", "cluster", "rowboxes", "longest", "mergeregs", "early", "hint")
NUMBERS = ("warm", "minblocks", "adaptive", "regs", "stages", "ctas", "splits")


def check_variant(name):
    """SystemExit naming the part of `name` whose value is not its kind's (a switch read as off, or a value
    ignored, timed another configuration than its label names); before any part is applied."""
    for part in name.split("+"):
        kind, _, value = part.partition("=")
        if kind not in SWITCHES + NUMBERS + ("planned", "merge", "order"):
            raise SystemExit(f"unknown variant {part!r}")
        if (kind in NUMBERS and not value.replace("/", "").isdigit()) or (kind == "regs") != ("/" in value):
            raise SystemExit(f"variant {part!r}: {kind} takes " + ("P/C" if kind == "regs" else "a number"))
        if (kind in SWITCHES and value not in ("0", "1")) or (kind in ("merge", "planned") and value) \
                or (kind == "order" and value not in ("seq", "heads")):
            raise SystemExit(f"variant {part!r}: {kind} takes " + ("no value" if kind in ("merge", "planned")
                             else "seq or heads" if kind == "order" else "0 or 1"))


@contextlib.contextmanager
def variant(name):
    """fakv.interface as the variant `name` has it ("a=1+b=2": both), restored
    after; yields the num_splits to pass (0: planned)."""
    from fakv import interface, prepare
    from fakv import lengths_hint
    saved = {k: getattr(interface, k) for k in ("_SWAP_AB", "_ADAPTIVE_SPLITS", "_EARLY_DECODE_BYTES",
                                                 "_SPLIT_MIN_BLOCKS_SWAPPED", "_GATHER_PAGES", "_CLUSTER_SPLITS",
                                                 "_ROW_BOXES", "_LONGEST_FIRST", "_MERGE_REGISTERS", "_DECODE_REGISTERS",
                                                 "_WARM_PAGES",
                                                 "plan")}
    hint, merge = lengths_hint.ENABLED, prepare.MERGE_SPLITS
    splits, stages, order, ctas = 0, None, None, None
    check_variant(name)
    for part in name.split("+"):
        kind, _, value = part.partition("=")
        if kind == "swap":
            interface._SWAP_AB = value == "1"
        elif kind == "gather":
            interface._GATHER_PAGES = value == "1"
        elif kind == "cluster":
            interface._CLUSTER_SPLITS = value == "1"
        elif kind == "rowboxes":
            interface._ROW_BOXES = value == "1"
        elif kind == "longest":
            interface._LONGEST_FIRST = value == "1"
        elif kind == "warm":
            interface._WARM_PAGES = int(value)
        elif kind == "minblocks":
            interface._SPLIT_MIN_BLOCKS_SWAPPED = int(value)
        elif kind == "adaptive":
            interface._ADAPTIVE_SPLITS = int(value)
        elif kind == "regs":
            interface._DECODE_REGISTERS = tuple(int(r) for r in value.split("/"))
        elif kind == "mergeregs":
            interface._MERGE_REGISTERS = value == "1"
        elif kind == "merge":
            prepare.MERGE_SPLITS = True
        elif kind == "early":
            interface._EARLY_DECODE_BYTES = 1 << 62 if value == "1" else -1
        elif kind == "hint":
            lengths_hint.ENABLED = value != "0"
        elif kind == "stages":
            stages = int(value)
        elif kind == "ctas":
            ctas = int(value)
        elif kind == "order":
            order = value
        elif kind == "splits":
            splits = int(value)
        elif kind != "planned":
            raise SystemExit(f"unknown variant {part!r}")
    if stages is not None or order or ctas is not None:
        def plan(*args, **kwargs):
            p = saved["plan"](*args, **kwargs)
            if stages is not None:
                p["decode_options"]["stages"] = stages
            if ctas is not None:
                p["decode_options"]["ctas_per_sm"] = ctas
            heads_first = order == "heads"
            if order and p["decode"]["HEADS_FIRST"] != heads_first and (not heads_first
                                                                       or p["decode_grid"][0] <= 65535):
                # (interface._plan's other grid: the first two axes swapped, packed on axis 1 when sequences first)
                p["decode"]["HEADS_FIRST"] = heads_first
                a, b_, splits_ = p["decode_grid"]
                p["decode_grid"] = (b_, a, splits_)
                if heads_first:
                    p["decode_options"].pop("pack_gqa", None)
                else:
                    p["decode_options"]["pack_gqa"] = 1
            return p
        interface.plan = plan
    prepare.CALLS.clear()
    interface._plan.cache_clear()
    try:
        yield splits
    finally:
        for k, v in saved.items():
            setattr(interface, k, v)
        lengths_hint.ENABLED, prepare.MERGE_SPLITS = hint, merge
        prepare.CALLS.clear()
        interface._plan.cache_clear()


def fakv_run(cell, splits):
    import fakv
    return lambda i: fakv.flash_attn_with_kvcache(cell.q, cell.k[i], cell.v[i], cache_seqlens=cell.lens,
                                                  block_table=cell.table, causal=True, num_splits=splits)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", required=True)
    ap.add_argument("--variants", default="planned")
    ap.add_argument("--peers", default="")
    ap.add_argument("--sustain", type=float, default=0.3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", default="", help='more cells: "NAME=batch,seqlen_k,heads,kv_heads,head_dim;..."')
    args = ap.parse_args()
    for v in args.variants.split(","):
        check_variant(v)
    shapes = shapes_by_name(args.shapes)
    torch = need_cuda("bench/plan_variants.py")
    for spec in args.cells.split(","):
        name, _, layout = spec.strip().partition("@")
        shape = shapes[name]
        cell = Cell(shape, int(layout.rstrip("s") or 0))
        if layout.endswith("s") and cell.table is not None:     # pages in order: a contiguous cache's memory
            cell.table = torch.arange(cell.table.numel(), dtype=torch.int32, device="cuda").reshape(cell.table.shape)
        impls = {}
        for v in args.variants.split(","):
            impls[v] = ("fakv", v)
        for p in names_of(args.peers, PEERS, "--peers"):   # (bench_grid's bare read is not a peer_calls peer)
            impls[p] = ("peer", p)
        times = {k: [] for k in impls}
        bad = {}
        for _ in range(args.rounds):
            for label, (kind, what) in impls.items():
                if label in bad:
                    continue
                ctx = variant(what) if kind == "fakv" else contextlib.nullcontext(0)
                try:
                    with ctx as splits:
                        run = fakv_run(cell, splits) if kind == "fakv" else peer_calls(cell, what, shape[6])
                        if run is None:
                            bad[label] = "cannot run this cell"
                            continue
                        run(0)          # (a ragged batch: planned from this call's lengths in the next)
                        torch.cuda.synchronize()
                        err, tol = cell.error(run(0))
                        if not err <= tol:
                            bad[label] = f"output differs by {err:.3g}"
                            continue
                        outs = []
                        t, mode = graph_time_ms(cell.calls(run), warm_s=args.sustain, fallback=False,
                                                outputs=outs)
                        torch.cuda.synchronize()
                        # what the replays computed, every call against its cache copy (bench_grid's rule):
                        # a variant fast because a replay went wrong is not a gain
                        for i, out in enumerate(outs):
                            err, tol = cell.error(out.float(), i % cell.copies)
                            if not err <= tol:
                                raise RuntimeError(f"a replay's output (call {i}) differs by {err:.3g}")
                        times[label].append(t * 1e3)
                except Exception as e:  # noqa: BLE001
                    bad[label] = f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}"
        first = statistics.median(times[next(iter(impls))]) if times[next(iter(impls))] else None
        print(f"{spec} ({cell.kv_bytes / 2**20:.0f} MiB of K and V; sustain {args.sustain:g} s, "
              f"{args.rounds} rounds):", flush=True)
        for label in impls:
            if label in bad:
                print(f"  {label:>14}: {bad[label]}", flush=True)
                continue
            ts = times[label]
            m = statistics.median(ts)
            rel = f" ({m / first - 1:+.1%})" if first else ""
            print(f"  {label:>14}: {m:8.1f} us{rel}  [{min(ts):.1f}-{max(ts):.1f}]", flush=True)
        del cell
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
