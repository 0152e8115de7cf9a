#!/usr/bin/env python3
"""Where a one-wave decode's time goes: each program's timeline (%globaltimer)
in fakv's decode and in a bare TMA read of the same bytes, calls replayed
back to back from a CUDA graph as bench_grid.py times them.

    python bench/timeline.py [--cells "MHA b8 s8K@0,b32 s8K@0"] [--replays 5] [--light] [--dump DIR]
        [--shapes "NAME=batch,seqlen_k,heads,kv_heads,head_dim;..."]

fakv's decode is instrumented through its PTX: this script passes itself
as the assembler (FAKV_ASSEMBLER=ptxas, FAKV_PTXAS), and in that role
(`timeline.py -arch=... k.ptx -o k.cubin`) it adds to the decode kernel,
before calling the real ptxas, reductions (red.global.min/max) of the time
into a buffer whose address it is given: a program's entry, its producer's
first and last copy (each mbarrier.arrive.expect_tx), its consumer's first
and last wait for a full slot (thread 128), and its exit. A call's entries
sit in the region of its K cache's address (bits 29-34: the copies of a
cell of 1 GiB or more, 512 MiB or more apart, never share one; a smaller
cell is refused); the kernels are compiled into a
fresh FAKV_CACHE_DIR. The bare read is stream_balance.py's `tma2 static N`
(N = the decode's programs), two buffers of the cell's K and V bytes.

Prints, per implementation, over the last replay: the calls' durations (first
entry to last exit) and the gaps between them, and over the programs (times
after the call's first entry, µs, median and max): entry, first copy, first
data, last data, exit; the exits' p10 / median / max; where both are
stamped, each program's entry to first copy and first copy to first data
(median, p90); for fakv, how many SMs
ran one, two (three) programs (%smid), their exits, and the last programs
out. The reductions cost: an instrumented call is 2-10 % slower than a
plain one, starts later and ends in a tail of its own (a reduction by every
thread at entry and exit, one at each copy and slot wait); `--light` keeps
the entry (thread 0) and the exit (thread 128) only, two reductions a
program, and times like the bare ring on one wave (not on several: b128
s8K's light calls took 1075-1107 us against 947-977 plain, session 29).
`--first` keeps those two and adds the first copy (the producer's first
expect_tx) and the first data (thread 128's first slot), once a program
each: where a program's start goes. --dump DIR also writes each cell's
timelines (ns, one array a call) to DIR/<cell>.npz; --shapes adds cells
beside bench_grid.py's.

    python bench/timeline.py --time 3 [--cells ...] [--plan stages=2+ctas=2] [--bare "tma2kv static,..."]

only times fakv on the cells (bench_grid.py's cell and timing; --plan: as
plan_variants.py's variant of that name plans it), with --bare beside the
bare TMA reads of the same bytes by as many blocks as the cell has sequences
x kv heads (stream_balance.py's ways; rounds interleaved), its decode
assembled through this script either way, patched as the environment says:
FAKV_PTX_PAD=N (N bytes of static shared memory more a program: fewer
programs an SM), FAKV_PTX_PREFETCH=1 (prefetch.tensormap of its TMA
descriptors at entry), FAKV_PTX_TABLE=L1|L2 (the sequence's block-table
row prefetched into that cache beside its length's load; rowsL1|rowsL2: every
sequence's row at entry, thread i the i-th's, for longest-first programs
whose sequence is known only after the batch's lengths are reduced;
nextL1|nextL2: after each block-table lookup of the TMA producer, the
table's next 128-byte line), FAKV_PTX_L2HINT=first|last|normal|unchanged
(every TMA copy of the caches with that L2 eviction priority),
FAKV_PTX_SOLO=1 (only thread 0 of the TMA producer's warp group in its loop),
FAKV_PTX_NOSUSPEND=1 (mbarrier.try_wait without a suspend-time hint). What
was measured with them: docs/decisions.md, "Where a one-wave decode's time
goes (session 28)" and "Pages asked for ahead (session 35)".
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGION, SLOT, PROGRAMS = 1 << 16, 64, 1024          # bytes a call's region, a program's slot; programs a region
REGION_BITS = 29                                    # a call's region: its K cache's address >> REGION_BITS, mod 64
MIN_SLOTS, MAX_SLOTS = (0, 1, 3, 5), (2, 4, 6)       # entry, first copy, first data, exit; their maxima


def patch(ptx, base=None, pad=0, prefetch=False, light=False, table="", first=False, hint="", solo=False,
          nosuspend=False):
    """The decode kernel's PTX with the timeline's reductions into the buffer at `base` (None: none;
    `light`: only the entry, by thread 0, and the exit, by thread 128; `first`: those and the first copy
    and the first data, once a program); `pad` bytes of static shared
    memory more a program (fewer programs an SM); `prefetch`: its TMA descriptors prefetched
    (prefetch.tensormap) at entry; `table` ("L1" or "L2"): the sequence's block-table row prefetched
    into that cache right after its length's load is issued (a kernel that loads Seqlens[b] itself);
    ("rowsL1" or "rowsL2"): the first line of every sequence's row, at entry, by thread i for sequence i;
    ("nextL1" or "nextL2"): after each scalar global load (the TMA producer's table lookups; a sequence's
    length's), the next line; `hint` ("first", "last", "normal" or "unchanged"): every TMA copy of the caches
    carries that L2 eviction priority (`.L2::cache_hint`, a createpolicy at entry; the gather's cp.async with
    it assembled but stopped the H200 on an illegal instruction, session 35: not patched); `solo`: only
    thread 0 of the TMA producer's warp group enters its loop (the others return at once instead of waiting
    on every free slot with it; a kernel that copies by TMA only); `nosuspend`: every mbarrier.try_wait
    without its suspend-time hint (the bare ring's wait)."""
    lines, out, waiting = ptx.split("\n"), [], False
    if hint not in ("", "first", "last", "normal", "unchanged"):
        raise SystemExit(f"timeline.py: FAKV_PTX_L2HINT={hint!r}: first, last, normal or unchanged")
    hinted = 0
    for i, t in enumerate(lines if hint else ()):
        m = re.match(r"(\s*(?:@%p\d+\s+)?cp\.async\.bulk\.tensor\.\S*mbarrier::complete_tx::bytes)(\s.*);$", t)
        if m:
            lines[i], hinted = f"{m.group(1)}.L2::cache_hint{m.group(2)}, %tlh;", hinted + 1
    if hint and not hinted:
        raise SystemExit("timeline.py: FAKV_PTX_L2HINT: no TMA copy (cp.async.bulk.tensor) to hint")
    if solo:                # the producer's loop guard, tid > 127 (the consumers) or no block: tid > 0
        tid = re.search(r"mov\.u32 \t(%r\d+), %tid\.x;", ptx)
        guard = [i for i, t in enumerate(lines)
                 if tid and re.fullmatch(rf"\tsetp\.gt\.u32 \t%p\d+, {tid.group(1)}, 127;", t)]
        if len(guard) != 1 or "cp.async.c" in ptx or "cp.async.bulk.tensor" not in ptx:
            raise SystemExit("timeline.py: FAKV_PTX_SOLO: not one TMA producer loop guarded by tid > 127")
        lines[guard[0]] = lines[guard[0]].replace(", 127;", ", 0;")
    for i, t in enumerate(lines if nosuspend else ()):
        lines[i] = re.sub(r"(mbarrier\.try_wait\.parity\S* P1, \[%r\d+\], %r\d+), %r\d+;", r"\1;", t)
    mode = re.fullmatch(r"(rows|next)?(L1|L2)", table) if table else None
    if table and not mode:
        raise SystemExit(f"timeline.py: FAKV_PTX_TABLE={table!r}: L1, L2, rowsL1, rowsL2, nextL1 or nextL2")
    rows, ahead, table = (mode.group(1) == "rows", mode.group(1) == "next", mode.group(2)) if mode else (0, 0, "")
    if ahead:               # the scalar global loads (the producer's table lookups, a length's load): the next line
        for i, t in enumerate(lines):
            m = re.match(r"\s*ld\.global\.b32\s+%r\d+, \[(%rd\d+)\];$", t)
            if m:
                lines[i] += f"\n\tprefetch.global.{table} \t[{m.group(1)}+128];"
    if table and not rows and not ahead:
        seq = next((i for i, t in enumerate(lines) if "[decode_param_4]" in t), None)
        for i in range(seq or len(lines), min(len(lines) - 2, (seq or 0) + 24)):
            m = re.match(r"\s*mul\.wide\.s32\s+(%rd\d+), (%r\d+), 4;", lines[i])
            if m and "ld.global.b32" in lines[i + 2] and m.group(1) in lines[i + 1]:
                row = m.group(2)              # b, the sequence: the prefetch goes after its length's load
                lines[i + 2] += ("\n\tld.param.b64 \t%tpa, [decode_param_3];\n\tld.param.b32 \t%tps, [decode_param_15];"
                                 f"\n\tmul.lo.s32 \t%tps, {row}, %tps;\n\tmul.wide.s32 \t%tpo, %tps, 4;"
                                 f"\n\tadd.s64 \t%tpa, %tpa, %tpo;\n\tprefetch.global.{table} \t[%tpa];")
                break
        else:
            raise SystemExit("timeline.py: FAKV_PTX_TABLE: no load of Seqlens[b] to put the prefetch after")
    entry = next(i for i, s in enumerate(lines) if ".entry decode(" in s)
    body = next(i for i in range(entry, len(lines)) if lines[i].strip() == "{")
    maps = [m.group(1) for m in (re.search(r"\.align 64 \.b8 (\w+)\[128\]", s) for s in lines[entry:body]) if m]
    regs = body + 1
    while lines[regs].strip().startswith(".reg"):
        regs += 1

    def stamp(*slots, pred=""):
        if base is None:
            return []
        code = ["\tmov.u64 \t%tlt, %globaltimer;"]
        for s in slots:
            op = "min" if s in MIN_SLOTS else "max"
            code.append(f"\t{pred}red.global.{op}.u64 \t[%tlb+{8 * s}], %tlt;")
        return code
    light = light or first
    for i, s in enumerate(lines):
        if i == entry and pad:
            out.append(f".shared .align 1024 .b8 fakv_pad[{pad}];")
        if i == regs:
            out += ["\t.reg .b64 \t%tpa, %tpo;", "\t.reg .b32 \t%tps;"] if table else []
            if hint:            # (the policy every hinted copy names)
                out += ["\t.reg .b64 \t%tlh;", f"\tcreatepolicy.fractional.L2::evict_{hint}.b64 \t%tlh, 1.0;"]
            if rows:            # (decode's parameters: 3 Table, 15 table_stride, 16 batch)
                out += ["\t.reg .b32 \t%tpt;", "\t.reg .pred \t%tpp;", "\tmov.u32 \t%tpt, %tid.x;",
                        "\tld.param.b32 \t%tps, [decode_param_16];", "\tsetp.lt.u32 \t%tpp, %tpt, %tps;",
                        "\tld.param.b64 \t%tpa, [decode_param_3];", "\tld.param.b32 \t%tps, [decode_param_15];",
                        "\tmul.lo.s32 \t%tps, %tpt, %tps;", "\tmul.wide.s32 \t%tpo, %tps, 4;",
                        "\tadd.s64 \t%tpa, %tpa, %tpo;", f"\t@%tpp prefetch.global.{table} \t[%tpa];"]
            out += ["\t.reg .b64 \t%tlb, %tlt, %tlk;", "\t.reg .b32 \t%tli, %tlj, %tln;",
                    "\t.reg .pred \t%tlc, %tl0;", "\tmov.u32 \t%tlj, %tid.x;", "\tsetp.eq.u32 \t%tlc, %tlj, 128;",
                    "\tsetp.eq.u32 \t%tl0, %tlj, 0;"]
            out += ["\t.reg .pred \t%tlf, %tlg, %tlq;", "\tsetp.eq.u32 \t%tlf, %tlj, %tlj;",
                    "\tsetp.eq.u32 \t%tlg, %tlj, %tlj;"] if first else []
            for m in maps if prefetch else ():
                out += [f"\tmov.b64 \t%tlk, {m};", "\tcvta.param.u64 \t%tlk, %tlk;", "\tprefetch.tensormap \t[%tlk];"]
            if pad:
                out += ["\t@%tlc st.shared.u32 \t[fakv_pad], %tlj;"]
            if base is not None:
                out += ["\tmov.u32 \t%tli, %ctaid.z;", "\tmov.u32 \t%tln, %nctaid.y;", "\tmov.u32 \t%tlj, %ctaid.y;",
                        "\tmad.lo.u32 \t%tli, %tli, %tln, %tlj;", "\tmov.u32 \t%tln, %nctaid.x;",
                        "\tmov.u32 \t%tlj, %ctaid.x;", "\tmad.lo.u32 \t%tli, %tli, %tln, %tlj;",
                        "\tld.param.u64 \t%tlk, [decode_param_1];", f"\tshr.u64 \t%tlk, %tlk, {REGION_BITS};",
                        "\tand.b64 \t%tlk, %tlk, 63;", f"\tmul.lo.u64 \t%tlk, %tlk, {REGION};",
                        f"\tmul.wide.u32 \t%tlb, %tli, {SLOT};", "\tadd.u64 \t%tlb, %tlb, %tlk;",
                        f"\tadd.u64 \t%tlb, %tlb, {base};", "\tmov.u32 \t%tlj, %smid;",
                        "\tcvt.u64.u32 \t%tlt, %tlj;", "\t@%tl0 red.global.max.u64 \t[%tlb+56], %tlt;"
                        ] + stamp(0, pred="@%tl0 " if light else "")
        if "mbarrier.arrive.expect_tx" in s and i > regs and not light:
            out += stamp(1, 2)
        elif "mbarrier.arrive.expect_tx" in s and i > regs and first:       # (one thread: the producer's)
            out += stamp(1, pred="@%tlf ") + ["\tsetp.ne.u32 \t%tlf, %tlj, %tlj;"]
        if re.match(r"\s*ret;", s):
            out += stamp(5, 6, pred="@%tlc " if light else "")
        out.append(s)
        if "mbarrier.try_wait" in s:
            waiting = True
        elif waiting and "end inline asm" in s and not light:
            out += stamp(3, 4, pred="@%tlc ")
            waiting = False
        elif waiting and "end inline asm" in s and first:
            out += ["\tand.pred \t%tlq, %tlc, %tlg;"] + stamp(3, pred="@%tlq ") + [
                "\t@%tlc setp.ne.u32 \t%tlg, %tlj, %tlj;"]
            waiting = False
    return "\n".join(out)


def assemble(argv):
    """The assembler's role: patch the PTX file of argv (the decode kernel's
    only), then run the real ptxas on it."""
    src = next(a for a in argv if a.endswith(".ptx"))
    with open(src) as f:
        ptx = f.read()
    at = os.environ.get("FAKV_TIMELINE_AT")
    if ".entry decode(" in ptx:
        with open(src, "w") as f:
            f.write(patch(ptx, int(at) if at else None, int(os.environ.get("FAKV_PTX_PAD", "0")),
                          os.environ.get("FAKV_PTX_PREFETCH") == "1", os.environ.get("FAKV_TIMELINE_LIGHT") == "1",
                          os.environ.get("FAKV_PTX_TABLE", ""), os.environ.get("FAKV_TIMELINE_FIRST") == "1",
                          os.environ.get("FAKV_PTX_L2HINT", ""), os.environ.get("FAKV_PTX_SOLO") == "1",
                          os.environ.get("FAKV_PTX_NOSUSPEND") == "1"))
    ptxas = os.environ.get("FAKV_TIMELINE_PTXAS", "/usr/local/cuda/bin/ptxas")
    sys.exit(subprocess.run([ptxas] + argv).returncode)


def summary(name, calls, copies_stamped=True):
    """Prints the timeline of `calls`: one (programs, 7) array of times (ns) a call (`copies_stamped`: its
    first copy stamped apart from its entry; the bare ring's is not: its first data is timed from entry)."""
    import numpy as np
    calls = sorted(calls, key=lambda t: t[:, 0].min())
    spans = [(t[:, 0].min(), t[:, 6].max()) for t in calls]
    gaps = [b[0] - a[1] for a, b in zip(spans, spans[1:])]
    print(f"{name}: calls {', '.join(f'{(e - s) / 1e3:.1f}' for s, e in spans)} us"
          + (f"; gaps {', '.join(f'{g / 1e3:.1f}' for g in gaps)} us" if gaps else ""))
    for t in calls:
        rel = (t - t[:, 0].min()) / 1e3
        cols = {"entry": rel[:, 0], "first copy": rel[:, 1], "first data": rel[:, 3], "last data": rel[:, 4],
                "exit": rel[:, 6]}
        exit_ = np.sort(rel[:, 6])
        print("  " + "; ".join(f"{k} {np.median(v):.2f}/{v.max():.2f}" for k, v in cols.items() if v.max() > -1e6)
              + f"; exits p10 {exit_[len(exit_) // 10]:.1f} median {exit_[len(exit_) // 2]:.1f} max {exit_[-1]:.1f}")
        stamped = (t[:, 1] != -1) & (t[:, 3] != -1)     # (a program that copied nothing keeps its slots unset)
        if copies_stamped and stamped.any():            # each program's start (median, p90), µs
            copy, data = (rel[stamped, 1] - rel[stamped, 0]), (rel[stamped, 3] - rel[stamped, 1])
            print(f"    a program's start: entry to first copy {np.median(copy):.2f} (p90 "
                  f"{np.percentile(copy, 90):.2f}), first copy to first data {np.median(data):.2f} (p90 "
                  f"{np.percentile(data, 90):.2f})")
        elif stamped.any():
            data = rel[stamped, 3] - rel[stamped, 0]
            print(f"    a program's start: entry to first data {np.median(data):.2f} (p90 "
                  f"{np.percentile(data, 90):.2f})")
        if t.shape[1] > 7:                              # programs an SM: how many SMs, their exits
            sms, inverse, counts = np.unique(t[:, 7], return_inverse=True, return_counts=True)
            count = counts[inverse]
            last = np.argsort(rel[:, 6])[-6:][::-1]
            print("    last out (program, SM, programs on it, entry, exit): " + ", ".join(
                f"({p}, {t[p, 7]}, {count[p]}, {rel[p, 0]:.2f}, {rel[p, 6]:.1f})" for p in last))
            print("    " + "; ".join(f"{n} a SM: {int((counts == n).sum())} SMs, exit median "
                                     f"{np.median(rel[count == n, 6]):.1f} max {rel[count == n, 6].max():.1f}"
                                     for n in sorted(set(counts.tolist()))) + f" ({len(sms)} SMs)")


def fakv_cells(cells, cache_dir, min_copies=1, extra="", check=True, **env):
    """Sets `env` and the decode's assembly through this script (assemble()) into a fresh kernel cache,
    puts bench/ and test/gpu/ on sys.path, and returns an iterator of (spec, cell, call) over bench_grid.py's
    cells `cells` (at least `min_copies` copies of their caches each; `extra`: more shapes,
    "NAME=batch,seqlen_k,heads,kv_heads,head_dim;..."), each call(i) (copy i) checked against the float32
    reference first (check=False: a difference is printed, not raised: a kernel variant under FAKV_KERNELS)."""
    os.environ.update(FAKV_ASSEMBLER="ptxas", FAKV_PTXAS=os.path.abspath(__file__),
                      FAKV_CACHE_DIR=f"/tmp/{cache_dir}-{os.getpid()}", **env)
    sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
    import source_tree  # noqa: F401,E402
    import fakv
    import bench_grid
    from bench_grid import Cell, shapes_by_name
    shapes = shapes_by_name(extra)
    rotate = bench_grid.ROTATE_BYTES

    def checked(spec):
        shape, _, page = spec.rpartition("@")
        _, b, s, _, hk, d, _ = shapes[shape]
        bench_grid.ROTATE_BYTES = max(rotate, min_copies * b * s * hk * d * 4)
        cell = Cell(shapes[shape], int(page))

        def call(i):
            return fakv.flash_attn_with_kvcache(cell.q, cell.k[i], cell.v[i], cache_seqlens=cell.lens,
                                                block_table=cell.table, causal=True)
        err, tol = cell.error(call(0))
        assert err <= tol or not check, f"{spec}: fakv's output differs by {err:.3g}"
        if not err <= tol:                      # (NaN included)
            print(f"{spec}: fakv's output differs by {err:.3g} (--no-check: timed anyway)")
        return spec, cell, call
    return (checked(spec) for spec in cells.split(","))


def time_cells(cells, rounds, bare="", extra="", plan="planned", check=True):
    """Prints fakv's GPU time a call on each of `cells`: bench_grid.py's cell and timing (a CUDA graph over
    its copies, 0.1 s of replays first), median and range of `rounds` rounds, the PTX patched as the
    environment says (assemble()); `bare`: and, interleaved with it round by round, the bare TMA reads of
    the same bytes by batch x kv heads blocks (an unsplit call's programs; stream_balance.py's ways,
    "tma2 static,..." without N, or with it: "tma2kvmap static 256 heads=8"); `plan`: fakv's plan as
    plan_variants.py's variant of that name has it."""
    import statistics
    checked = fakv_cells(cells, "fakv-ptx", extra=extra, check=check)
    from timing import graph_time_ms
    from bench_grid import copy_bandwidth
    from plan_variants import variant
    from stream_balance import Reader
    with variant(plan) as splits:
        assert splits == 0, "a variant of num_splits: not here"
        for spec, cell, call in checked:
            # (as many calls a graph as the bare read's two: bench_grid.py's rule)
            timed = {f"fakv {plan}": cell.calls(call)}
            if bare:
                reader = Reader(cell.kv_bytes)
                for w in bare.split(","):
                    way, calls = reader.cell_calls(w, cell)
                    timed[way] = calls
            us = {k: [] for k in timed}
            for _ in range(rounds):
                for k, calls in timed.items():
                    us[k].append(graph_time_ms(calls, fallback=False, warm_s=0.1)[0] * 1e3)
            copy = copy_bandwidth()
            for k, t in us.items():
                print(f"{spec}: {k} {statistics.median(t):.1f} us [{min(t):.1f}-{max(t):.1f}]"
                      f" {cell.kv_bytes / statistics.median(t) / 1e6 / copy:.1%} of copy ({copy:.2f} TB/s)"
                      + ("" if not k.startswith("fakv") else "; " + " ".join(
                          f"{name} {os.environ.get('FAKV_PTX_' + name.upper(), '-')}"
                          for name in ("pad", "prefetch", "table", "l2hint", "solo", "nosuspend"))), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="MHA b8 s8K@0,b32 s8K@0")
    ap.add_argument("--replays", type=int, default=5)
    ap.add_argument("--light", action="store_true",
                    help="fakv's entry (thread 0) and exit (thread 128) only: two reductions a program")
    ap.add_argument("--first", action="store_true",
                    help="as --light, and the first copy and the first data: four reductions a program")
    ap.add_argument("--shapes", default="", help='more cells: "NAME=batch,seqlen_k,heads,kv_heads,head_dim;..."')
    ap.add_argument("--plan", default="planned", help="with --time: fakv's plan as plan_variants.py's variant "
                    "of that name has it (stages=2, ...)")
    ap.add_argument("--no-check", action="store_true", help="with --time: time fakv even where its output "
                    "differs from the reference (a kernel variant under FAKV_KERNELS)")
    ap.add_argument("--bare", nargs="?", const="tma2 static", default="", metavar="WAYS",
                    help="with --time: bare TMA reads of the same bytes too (stream_balance.py's TMA ways, default "
                    "`tma2 static`; batch x kv heads blocks unless a way's third word gives them), interleaved round "
                    "by round")
    ap.add_argument("--dump", metavar="DIR", help="also write each cell's timelines (ns; fakv's and the bare "
                    "read's, one (programs, 8) array a call) to DIR/<cell>.npz")
    ap.add_argument("--time", type=int, default=0, metavar="ROUNDS",
                    help="only time fakv on the cells (bench_grid.py's way; FAKV_PTX_PAD / FAKV_PTX_PREFETCH / "
                         "FAKV_PTX_TABLE as the environment says), ROUNDS rounds")
    args = ap.parse_args()
    if args.time:
        return time_cells(args.cells, args.time, args.bare, args.shapes, args.plan, not args.no_check)
    import numpy as np
    import torch
    buf = torch.zeros((64, PROGRAMS, SLOT // 8), dtype=torch.int64, device="cuda")
    cells = fakv_cells(args.cells, "fakv-timeline", min_copies=2, extra=args.shapes,   # (two calls: a gap between)
                       FAKV_TIMELINE_LIGHT="1" if args.light else "0", FAKV_TIMELINE_FIRST="1" if args.first else "0",
                       FAKV_TIMELINE_AT=str(buf.data_ptr()))
    from stream_balance import Reader

    def reset():
        buf.zero_()
        buf[:, :, list(MIN_SLOTS)] = -1                 # (unsigned: the largest)

    def replay(calls):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for c in calls:
                c()
        for _ in range(args.replays):
            reset()
            g.replay()
        torch.cuda.synchronize()

    for spec, cell, call in cells:
        copies = cell.copies
        for i in range(copies):
            call(i)
        torch.cuda.synchronize()
        replay([lambda i=i: call(i) for i in range(copies)])
        t = buf.cpu().numpy()
        regions = sorted({(cell.k[i].data_ptr() >> REGION_BITS) & 63 for i in range(copies)})
        assert len(regions) == copies, f"{spec}: copies share a region of the timeline"
        calls = []
        for r in regions:
            used = t[r][t[r][:, 6] > 0]
            # (a region holds PROGRAMS programs' slots, b128's 1024 exactly: a call of more would stamp the
            # next call's region, which this slice cannot tell)
            calls.append(used.astype(np.int64))
        print(f"{spec}: {len(calls[0])} programs, {cell.kv_bytes / 2 ** 20:.0f} MiB, {copies} calls a graph")
        summary("  fakv", calls)
        reader = Reader(cell.kv_bytes)
        way = f"tma2 static {len(calls[0])}"
        reader.check(way)
        blocks = len(calls[0])
        reader.times.zero_()
        replay([lambda i=i: reader.launch(way, i, with_times=True, times_at=4 * blocks * i) for i in (0, 1)])
        rt = reader.times[:8 * blocks].view(2, blocks, 4).cpu().numpy().astype(np.int64)
        bare = [np.stack([r[:, 0], r[:, 0], r[:, 0], r[:, 1], r[:, 2], r[:, 3], r[:, 3]], 1) for r in rt]
        summary("  bare", bare, copies_stamped=False)
        if args.dump:
            os.makedirs(args.dump, exist_ok=True)
            name = re.sub(r"\W+", "_", spec.replace("@", " at ").replace("<=", " le "))
            np.savez(os.path.join(args.dump, f"{name}.npz"), **{f"fakv{i}": c for i, c in enumerate(calls)},
                     **{f"bare{i}": c for i, c in enumerate(bare)})
        print(flush=True)


if __name__ == "__main__":
    if any(a.startswith("-arch=") for a in sys.argv[1:]):
        assemble(sys.argv[1:])
    main()
