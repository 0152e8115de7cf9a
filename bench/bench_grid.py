#!/usr/bin/env python3
"""Decode attention over issue 11's grid, fakv next to its peers, all in one
run on the GPU machine.

    python bench/bench_grid.py [--out DIR] [--only NAME[,NAME...]] [--layouts 0,16,64,256] [--peers LIST] [--sustain S]
                               [--rounds N]
    python bench/bench_grid.py --shapes "NAME=batch,seqlen_k,heads,kv_heads,head_dim;..." [...]   # other shapes
    python bench/bench_grid.py --plot DIR/NAME.json     # the PNG plots, DIR/NAME-<layout>.png (needs matplotlib)
    python bench/bench_grid.py --markdown DIR/NAME.json # the table of a run, printed (no GPU needed)

`--only`: shapes of that name, else those whose name holds its words ("d64": both head-dim-64 shapes; "b1": the
batch-1 ones, not b128); `--peers`: names from the list below. An unknown one stops the run.

Shapes (bf16, seqlen_q 1, causal, num_splits=0 for fakv): GQA 32/8 with
head dim 128 at batch {1, 8, 32, 128} x seqlen_k {1K, 8K, 32K}; MHA 32/32;
head dims 64 and 256; two ragged batches (lengths drawn uniformly from
[1, seqlen_k], seeded). Layouts: contiguous and pages of 16, 64 and 256
(block tables a random permutation of the pages). 20 shapes x 4 layouts.

Timing: GPU time per call, from CUDA graphs of calls that rotate over
copies of the cache (at least 256 MiB in all, five times the L2; 512 MiB
from b1 s8K up), so no cache is read from L2; median of 10 replays after
warm-up, each replay's start event queued behind ~50 us of
torch.cuda._sleep (timing.py: the replay's launch not counted); every
implementation as many calls a graph (the cache copies, 2 at least). `--sustain S`:
every implementation's graph is replayed for S seconds first, so that
the GPU runs at the clocks that implementation's power draw sustains
(the H200 holds 700 W by lowering the SM clock; without it each is timed
near the clocks the work before left: a burst figure). `--rounds N`: each
implementation of a cell timed N times, the implementations interleaved
(fakv, peer, ..., fakv, peer, ...); the median counts (the range is in
grid.json): a difference between two implementations smaller than the
spread of one is noise. The first cell a
process times follows an idle stretch (the JIT compiles): at S = 0 it
reads up to ~10 % slow (session 11: b128 s1K 148-151 us first, 135-138
after another cell). Bandwidth:
bytes of K and V the call must read / time, as a fraction of a
device-to-device copy measured in the same run (2 GiB, bytes read +
written, after S seconds of copies; again at the end, for the record).

Every implementation's output, fakv's and each peer's, is checked against
a float32 reference of every sequence first (each sequence's max |out -
reference| under tolerance() of its own output's size: 1e-4 + size / 32,
2e-2 at most); one that fails is listed, not timed; each implementation's
second call is the one checked (fakv plans a ragged batch of one wave from
an earlier call's lengths: fakv/lengths_hint.py). After timing, the
outputs of every call of the graph (each against its cache copy) are
checked the same way: a timed replay that computed something else fails
the cell's implementation; the script exits 1 when fakv failed a cell. A
peer whose calls could not be captured in a graph is timed as launched
(host work included) and is not counted as the best peer; the footer
names it.
- `sdpa`: torch's scaled_dot_product_attention with the cuDNN backend
  (enable_gqa; the backend torch picks when cuDNN refuses), contiguous
  caches of equal lengths only;
- `triton`: bench/peers/triton_decode.py, a split-KV decode as a Triton
  user would write it, every layout;
- `fakv-merge` (not a peer; only when asked for): fakv with
  FAKV_MERGE_SPLITS, decode merging its own splits in one launch;
- `flashinfer`, `flashinfer-tc`: FlashInfer's BatchDecodeWithPagedKVCacheWrapper
  (CUDA-core and tensor-core kernels) when `flashinfer` imports, every
  layout (a contiguous cache as the same memory in pages of 64, in order:
  as one page a sequence FlashInfer would split nothing). bench/README.md
  says how to carry FlashInfer to the H200.
- `bare` (not a peer; only when asked for): on caches of 1 GiB or more, a
  read of the cell's bytes that does nothing else (stream_balance.py's
  `tma2kvmap` at head dims 64, 128 and 256: 4-D tensor maps as fakv's,
  pages of the cell's size through a random block table; `tma2kv`
  otherwise), as many
  blocks as sequences x kv heads but at least 256 (fakv's programs on such
  a cell: 64 blocks would read at two thirds of copy), over two buffers of
  that size; checked by the XOR of every word), interleaved
  with the rest: what the lease lets a one-pass read reach, beside issue
  11's 105 % of copy.

Writes DIR/grid.json (every number) and DIR/grid.md (the table: each cell
fakv's time and fraction of copy bandwidth, the best peer of that layout,
and whether fakv is at least as fast within 1 %); then the plots where
matplotlib imports, else `--plot` makes them elsewhere.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401  (the source tree's fakv when it is built, else the installed one)
from timing import copy_ms, graph_time_ms, need_cuda  # noqa: E402

# (name, batch, seqlen_k, heads, kv_heads, head_dim, ragged)
SHAPES = [(f"b{b} s{s // 1024}K", b, s, 32, 8, 128, False) for b in (1, 8, 32, 128) for s in (1024, 8192, 32768)]
SHAPES += [("MHA b1 s32K", 1, 32768, 32, 32, 128, False), ("MHA b8 s8K", 8, 8192, 32, 32, 128, False),
           ("d64 b8 s8K", 8, 8192, 32, 8, 64, False), ("d64 b32 s32K", 32, 32768, 32, 8, 64, False),
           ("d256 b1 s8K", 1, 8192, 32, 8, 256, False), ("d256 b8 s32K", 8, 32768, 32, 8, 256, False),
           ("ragged b32 s<=16K", 32, 16384, 32, 8, 128, True), ("ragged b128 s<=4K", 128, 4096, 32, 8, 128, True)]
# Cells beside the grid's for the probes (power_probe.py, dram_bytes.py): one wave of 256-block programs.
MORE_SHAPES = [("MHA b8 s16K", 8, 16384, 32, 32, 128, False), ("b32 s16K", 32, 16384, 32, 8, 128, False)]
LAYOUTS = (0, 16, 64, 256)                     # 0: contiguous


def shapes_by_name(extra=""):
    """SHAPES and MORE_SHAPES by name, with `extra` ones ("NAME=batch,seqlen_k,heads,kv_heads,head_dim;...",
    the probes' --shapes) added."""
    shapes = {s[0]: s for s in SHAPES + MORE_SHAPES}
    for name, _, dims in (e.partition("=") for e in filter(None, extra.split(";"))):
        try:
            values = tuple(map(int, dims.split(",")))
        except ValueError:
            values = ()
        if len(values) != 5:
            raise SystemExit(f"a shape is NAME=batch,seqlen_k,heads,kv_heads,head_dim, got {name}={dims}")
        shapes[name.strip()] = (name.strip(), *values, False)
    return shapes
PEERS = ("sdpa", "triton", "flashinfer", "flashinfer-tc")
ROTATE_BYTES = 512 << 20
TOLERANCE = 2e-2


def tolerance(size):
    """The largest error an output whose values reach `size` may have: 1e-4 + size / 32 (4 to 8 bf16 ulps of
    its largest value; every implementation measured within 1.5 in session 46's grid), TOLERANCE at most.
    Long sequences average to ~0.03: an all-zero output fails, and so does one of 32K keys that dropped its
    last 64 (1e-3 + 5e-2 x size let them pass, session 48's review)."""
    return min(TOLERANCE, 1e-4 + size / 32)


def worst_error(errs, sizes):
    """(error, tolerance) of the sequence furthest past its tolerance, given each sequence's largest error and
    largest reference value (NaN counts as past any)."""
    def excess(i):
        e = errs[i]
        return math.inf if e != e else e / tolerance(sizes[i])
    i = max(range(len(errs)), key=excess)
    return errs[i], tolerance(sizes[i])


def copy_bandwidth(sustain=0.0):
    """A 2 GiB device-to-device copy's bandwidth (bytes read + written), TB/s: median of 10, after
    `sustain` seconds of copies."""
    import torch
    src = torch.randn(2 ** 30, dtype=torch.bfloat16, device="cuda")     # (data, not what a fresh block holds)
    dst = torch.empty_like(src)
    start, i = time.perf_counter(), 0
    while i < 3 or time.perf_counter() - start < sustain:
        dst.copy_(src)
        torch.cuda.synchronize()
        i += 1
    t = copy_ms(dst, src, reps=1)
    return 2 * src.numel() * 2 / (t * 1e-3) / 1e12


def bare_way(batch, kv_heads, head_dim=128, page=0):
    """The bare read of a cell (stream_balance.py's way): a block a sequence's kv head, at least 256 (as many
    as fakv's programs on a cell of 1 GiB or more; 64 blocks read at two thirds of copy, s31k). At head dims
    64, 128 and 256 through 4-D tensor maps as fakv reads its caches (16-row boxes of 64 channels), in pages
    of the cell's size through a block table of random pages (what pages of 16 cost even a bare read,
    sessions 32-33; d64 / d256 since session 40, not yet run on a GPU); other head dims as 1-D bulk copies."""
    blocks = max(batch * kv_heads, 256)
    if head_dim not in (64, 128, 256):
        return f"tma2kv static {blocks}"
    return f"tma2kvmap static {blocks} heads={kv_heads}" + (f" page={page}" if page else "") + \
        (f" d={head_dim}" if head_dim != 128 else "")


def bare_bytes(kv_bytes, way):
    """The bytes a bare read `way` (bare_way's) takes of a cell of `kv_bytes`: tma2kvmap reads whole tiles of
    8192 / d rows (and pages) of each block's share of K and of V, so a ragged batch's bytes round down to them
    (ragged b128 s<=4K: ~1064 MiB to 1056, or 1024 in pages of 256); its fraction of copy counts those."""
    w = way.split()
    if w[0] != "tma2kvmap":
        return kv_bytes
    blocks = int(w[2])
    page = next((int(a[5:]) for a in w[3:] if a.startswith("page=")), 0)
    d = next((int(a[2:]) for a in w[3:] if a.startswith("d=")), 128)
    unit = 2 * blocks * 2 * d * math.lcm(8192 // d, page or 1)       # (whole tiles of 8192 / d rows, and pages)
    return kv_bytes // unit * unit


class Cell:
    """The inputs of one (shape, layout): q, the lengths, a block table, and
    `copies` caches (K and V each) that the timed calls rotate over."""

    def __init__(self, shape, page, seed=0):
        import torch
        name, b, s, h, hk, d, ragged = shape
        g = torch.Generator(device="cuda").manual_seed(seed)
        self.b, self.s, self.h, self.hk, self.d, self.page = b, s, h, hk, d, page
        self.lens = torch.randint(1, s + 1, (b,), generator=g, device="cuda", dtype=torch.int32) if ragged else \
            torch.full((b,), s, dtype=torch.int32, device="cuda")
        self.kv_bytes = int(self.lens.sum()) * hk * d * 2 * 2
        cache_bytes = b * s * hk * d * 2 * 2
        # (two at least up to 1 GiB: b128 s1K and MHA b1 s32K, 512 MiB each, read one copy twice in a row; the
        # cells of 1 GiB get two as well since session 46; above 1 GiB one copy is read twice, no L2 of it left)
        self.copies = max(2 if cache_bytes <= 1 << 30 else 1, min(64, math.ceil(ROTATE_BYTES / cache_bytes)))
        self.q = torch.randn((b, 1, h, d), generator=g, device="cuda").to(torch.bfloat16)
        if page:
            per_seq = s // page
            shape_ = (self.copies, b * per_seq, page, hk, d)
            self.table = torch.randperm(b * per_seq, generator=g, device="cuda").to(torch.int32).reshape(b, per_seq)
        else:
            shape_ = (self.copies, b, s, hk, d)
            self.table = None
        self.k = torch.randn(shape_, generator=g, device="cuda", dtype=torch.bfloat16)
        self.v = torch.randn(shape_, generator=g, device="cuda", dtype=torch.bfloat16)
        self.refs = {}                                  # copy -> its float32 reference (error())

    def dense(self, cache, i, copy=0):
        """Sequence i's keys (or values) of copy `copy`, (len, hk, d)."""
        n = int(self.lens[i])
        if self.table is None:
            return cache[copy, i, :n]
        pos = self.table[i].repeat_interleave(self.page)[:n].long()
        import torch
        return cache[copy][pos, torch.arange(n, device="cuda") % self.page]

    def reference(self, i, copy=0):
        """float32 attention of sequence i over copy `copy`: (h, d)."""
        import torch
        k, v = self.dense(self.k, i, copy).float(), self.dense(self.v, i, copy).float()
        group = self.h // self.hk
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        s = torch.einsum("hd,nhd->hn", self.q[i, 0].float(), k) / math.sqrt(self.d)
        return torch.einsum("hn,nhd->hd", torch.softmax(s, -1), v)

    def calls(self, run):
        """A graph's calls of `run(i)` over the cache copies, 2 at least (one copy: the same > 1 GiB read
        twice, nothing of it left in L2), so that every implementation's graph holds as many (a graph's first
        call starts after an event, the others after a call)."""
        return [lambda i=i: run(i % self.copies) for i in range(max(self.copies, 2))]

    def error(self, out, copy=0):
        """(max |out - reference| of a sequence, the most tolerance() lets that sequence's output differ) for
        the sequence furthest past its own tolerance, over copy `copy`: an implementation wrong on any one
        sequence fails, not only on the first or last, and each sequence is held to the size of its own
        output (a ragged batch's short ones have the largest: one tolerance for all let the long ones drop
        2 % of their keys)."""
        import torch
        if copy not in self.refs:
            self.refs[copy] = torch.stack([self.reference(i, copy) for i in range(self.b)])
        ref = self.refs[copy]
        assert tuple(out.shape) == (self.b, 1, self.h, self.d), f"output of shape {tuple(out.shape)}"
        errs = (out.float()[:, 0] - ref).abs().flatten(1).max(1).values.tolist()
        sizes = ref.abs().flatten(1).max(1).values.tolist()
        return worst_error(errs, sizes)


def fakv_calls(cell):
    import fakv
    run = lambda i: fakv.flash_attn_with_kvcache(  # noqa: E731
        cell.q, cell.k[i], cell.v[i], cache_seqlens=cell.lens, block_table=cell.table, causal=True)
    return run


def fakv_merge_calls(cell):
    """fakv with FAKV_MERGE_SPLITS (decode merges its own splits: one
    launch; a prepared call's key holds the mode)."""
    from fakv import prepare
    plain = fakv_calls(cell)

    def run(i):
        prepare.MERGE_SPLITS = True
        try:
            return plain(i)
        finally:
            prepare.MERGE_SPLITS = False
    return run


def sdpa_calls(cell, ragged):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if cell.table is not None or ragged:
        return None, "contiguous caches of equal lengths only"
    q = cell.q.transpose(1, 2)

    def make(backends):
        def run(i):
            with sdpa_kernel(backends):
                o = F.scaled_dot_product_attention(q, cell.k[i].transpose(1, 2), cell.v[i].transpose(1, 2),
                                                   enable_gqa=True)
            return o.transpose(1, 2)
        return run
    try:
        run = make([SDPBackend.CUDNN_ATTENTION])
        run(0)
        return run, "cuDNN"
    except Exception:  # noqa: BLE001  (cuDNN refuses the shape: torch's own pick)
        return make([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                     SDPBackend.MATH]), "torch's pick (cuDNN refused)"


def triton_calls(cell):
    from peers.triton_decode import decode
    return lambda i: decode(cell.q, cell.k[i], cell.v[i], cell.lens, block_table=cell.table)


# FlashInfer's pages over a contiguous cell's cache (the same bytes in the same order): one page a sequence would
# leave its split-KV nothing to split (it splits whole pages): b8 s32K 374.8 us against 253.3 in pages of 256
# (grid-s34). 64: within 0.8 % of its best of 16, 64 and 256 on every paged cell of grid-s34.
FLASHINFER_CONTIGUOUS_PAGE = 64


def flashinfer_calls(cell, tensor_cores):
    import torch
    import flashinfer
    page = cell.page or FLASHINFER_CONTIGUOUS_PAGE
    lens = cell.lens.long()
    pages = (lens + page - 1) // page
    indptr = torch.zeros(cell.b + 1, dtype=torch.int32, device="cuda")
    indptr[1:] = torch.cumsum(pages, 0)
    table = cell.table
    if table is None:           # sequence j's rows are pages j * s / page, ... of the cache seen as (b * s / page) pages
        assert cell.s % page == 0, f"seqlen_k {cell.s} is not whole pages of {page}"
        table = torch.arange(cell.b * cell.s // page, dtype=torch.int32, device="cuda").reshape(cell.b, -1)
    keep = torch.arange(table.shape[1], device="cuda")[None, :] < pages[:, None]
    indices = table[keep].contiguous()
    last = (lens - (pages - 1) * page).to(torch.int32)
    workspace = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(workspace, "NHD", use_tensor_cores=tensor_cores)
    w.plan(indptr, indices, last, cell.h, cell.hk, cell.d, page, q_data_type=torch.bfloat16,
           kv_data_type=torch.bfloat16)
    q = cell.q[:, 0].contiguous()
    if cell.table is None:
        k, v = (c.view(cell.copies, cell.b * cell.s // page, page, cell.hk, cell.d) for c in (cell.k, cell.v))
    else:
        k, v = cell.k, cell.v
    return lambda i: w.run(q, (k[i], v[i]))[:, None]


def peer_calls(cell, name, ragged):
    """The call of peer `name` (one of PEERS) on `cell`, as `run(i)` over its cache copies; None for cuDNN where
    it does not run (paged or ragged)."""
    if name == "sdpa":
        return sdpa_calls(cell, ragged)[0]
    if name == "triton":
        return triton_calls(cell)
    if name not in ("flashinfer", "flashinfer-tc"):     # (plan_variants' `bare` ran FlashInfer's CUDA-core decode)
        raise ValueError(f"unknown peer {name!r} (known: {', '.join(PEERS)})")
    return flashinfer_calls(cell, name == "flashinfer-tc")


def measure(shape, page, peers, copy_bw, sustain=0.0, rounds=1):
    import torch
    cell = Cell(shape, page)
    ragged = shape[6]
    result = {"shape": shape[0], "layout": page, "kv_bytes": cell.kv_bytes, "copies": cell.copies, "impls": {}}
    runs = {}                               # the implementations whose output passed, in timing order

    def failed(e):
        return f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"

    def checked(name, run, note=""):
        entry = result["impls"][name] = {"note": note} if note else {}
        try:
            run(0)                          # (fakv plans a ragged batch from an earlier call's lengths:
            torch.cuda.synchronize()        # the second call is what is timed, and checked)
            out = run(0).float()
            torch.cuda.synchronize()
            err, tol = cell.error(out)
            entry["err_vs_reference"] = err
            if not err <= tol:
                entry["failed"] = f"output differs from the float32 reference by {err:.3g} (at most {tol:.3g})"
            else:
                runs[name] = run
        except Exception as e:  # noqa: BLE001  (a peer that cannot run this cell)
            entry["failed"] = failed(e)

    checked("fakv", fakv_calls(cell))
    if "bare" in peers and cell.kv_bytes >= 1 << 30:
        from stream_balance import Reader
        try:
            way = bare_way(cell.b, cell.hk, cell.d, cell.page)
            nbytes = bare_bytes(cell.kv_bytes, way)
            way, reads = Reader(nbytes).cell_calls(way, cell)
            result["impls"]["bare"] = {"note": way, **({"bytes": nbytes} if nbytes != cell.kv_bytes else {})}
            runs["bare"] = lambda i, reads=reads: reads[i % 2]()
        except Exception as e:  # noqa: BLE001
            result["impls"]["bare"] = {"failed": failed(e)}
    if "fakv-merge" in peers:
        checked("fakv-merge", fakv_merge_calls(cell))
    if "sdpa" in peers:
        run, note = sdpa_calls(cell, ragged)
        if run is None:
            result["impls"]["sdpa"] = {"skipped": note}
        else:
            checked("sdpa", run, note)
    if "triton" in peers:
        checked("triton", triton_calls(cell))
    for name, tc in (("flashinfer", False), ("flashinfer-tc", True)):
        if name in peers:
            try:
                run = flashinfer_calls(cell, tc)
            except Exception as e:  # noqa: BLE001  (not installed, or cannot plan this cell)
                result["impls"][name] = {"failed": failed(e)}
                continue
            checked(name, run)
    def replayed(entry, outs):
        """What the timed replays computed, checked as the eager call was: every call's output against its
        cache copy's reference (a graph that read one copy throughout, or stale pointers, fails)."""
        torch.cuda.synchronize()
        for i in range(len(outs)):
            err, tol = cell.error(outs[i].float(), i % cell.copies)
            if not err <= tol:
                entry["failed"] = f"a replay's output (call {i}, copy {i % cell.copies}) differs from the float32 " \
                                  f"reference by {err:.3g} (at most {tol:.3g})"
                return

    # Rounds interleave the implementations (fakv, peer, ..., then peer, ..., fakv, ...: each round starts one
    # later, so none always follows the checks or the same one); each one's median counts.
    times = {name: [] for name in runs}
    order = list(runs)
    for r in range(rounds):
        shift = r % len(order) if order else 0
        for name in order[shift:] + order[:shift]:
            run = runs[name]
            entry = result["impls"][name]
            if "failed" in entry:
                continue
            try:
                # As many calls a graph for every one (Cell.calls; the bare read's two buffers).
                calls = [lambda i=i, run=run: run(i) for i in range(max(cell.copies, 2))] if name == "bare" \
                    else cell.calls(run)
                outs = []
                t, mode = graph_time_ms(calls, warm_s=sustain, outputs=outs)
                times[name].append(t * 1e3)
                # (a round timed as launched in a cell whose other rounds replayed a graph: "eager" for all,
                # the median mixes host time in, so it is not compared as GPU time)
                entry["timing"] = "eager" if "eager" in (mode, entry.get("timing")) else mode
                if name != "bare":          # (the bare read checked its words before it was timed)
                    replayed(entry, outs)
            except Exception as e:  # noqa: BLE001
                entry["failed"] = failed(e)
    for name, ts in times.items():
        entry = result["impls"][name]
        if ts and "failed" not in entry:
            us = statistics.median(ts)
            tbps = entry.get("bytes", cell.kv_bytes) / (us * 1e-6) / 1e12
            entry.update(us=us, tbps=tbps, copy_fraction=tbps / copy_bw, **({"us_rounds": ts} if rounds > 1 else {}))
    return result


def _peers_timed(cell, eager):
    """(us, name) of the peers timed in `cell`, those timed as launched (eager) or those from a graph."""
    return [(e["us"], n) for n, e in cell["impls"].items()
            if n in PEERS and "us" in e and (e.get("timing") == "eager") == eager]


def best_peer(cell):
    """(us, name) of the fastest peer timed from a graph; a peer that could not be captured was timed with its
    host work (eager) and does not count (fakv would win against its launches)."""
    timed = _peers_timed(cell, eager=False)
    return min(timed) if timed else None


def eager_peers(cell):
    return [n for _, n in _peers_timed(cell, eager=True)]


def markdown(run):
    lines = [f"Decode grid, {run['device']}, {run['date']}: bf16, seqlen_q 1, causal; GPU time per call "
             f"(CUDA graphs over rotating caches); % of the same run's copy bandwidth "
             f"({run['copy_tbps']:.2f} TB/s)"
             + (f"; {run['copy_tbps_end']:.2f} at the end" if run.get("copy_tbps_end") else "")
             + (f"; each implementation replayed {run['sustain_s']:g} s before it is timed" if run.get("sustain_s") else "")
             + (f"; median of {run['rounds']} rounds, the implementations interleaved" if run.get("rounds", 1) > 1
                else "")
             + ". Each cell: fakv, then the best peer of that layout; "
             "**win** when fakv is at most 1 % slower.", "",
             "| shape | " + " | ".join("contiguous" if p == 0 else f"pages of {p}" for p in run["layouts"]) + " |",
             "|---|" + "---|" * len(run["layouts"])]
    wins = total = ahead = 0
    alone = []                  # the cells where fakv ran and no peer was timed (every one failed or refused)
    failed = []                 # the cells where fakv failed and a peer ran: lost
    neither = []                # the cells where fakv failed and no peer ran
    eager = []                  # the cells with a peer timed as launched (not counted)
    by = {(c["shape"], c["layout"]): c for c in run["cells"]}
    for shape in run["shapes"]:
        row = [shape]
        for page in run["layouts"]:
            c = by.get((shape, page))
            if c is None:
                row.append("")
                continue
            f = c["impls"]["fakv"]
            eager += [f"{shape} @{page} {n}" for n in eager_peers(c)]
            if "us" not in f:
                row.append(f"fakv failed: {f.get('failed')}")
                if best_peer(c):
                    total += 1
                    failed.append(f"{shape} @{page}")
                else:
                    neither.append(f"{shape} @{page}")
                continue
            text = f"{f['us']:.1f} µs ({f['copy_fraction']:.1%})"
            if f.get("timing") == "eager":
                text += " (eager: host work included)"
            if "us" in c["impls"].get("fakv-merge", {}):
                text += f" [merged splits: {c['impls']['fakv-merge']['us']:.1f} µs]"
            peer = best_peer(c)
            if not peer:
                alone.append(f"{shape} @{page}")
            if peer:
                us, name = peer
                p = c["impls"][name]
                win = f["us"] <= 1.01 * us
                wins += win
                ahead += f["us"] < 0.99 * us
                total += 1
                text += f" vs {name} {us:.1f} µs ({p['copy_fraction']:.1%}){' **win**' if win else ''}"
            row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"fakv at or ahead of the best peer (within 1 %): {wins} of {total} cells ({ahead} more than 1 % "
                  f"ahead, {wins - ahead} within 1 % either way, {total - wins} behind)"
              + (f"; {len(failed)} where fakv failed (lost): {', '.join(failed)}" if failed else "")
              + (f"; {len(alone)} with no peer timed: {', '.join(alone)}" if alone else "")
              + (f"; {len(neither)} where fakv failed and no peer was timed: {', '.join(neither)}" if neither else "")
              + "." + (f" Peers timed as launched (host work included; not counted): {', '.join(eager)}." if eager
                       else "")
              + (f" Peers asked for: {', '.join(run['peers'])}." if run.get("peers") else ""), ""]
    # (a cell where fakv failed counts as one below, as a lost cell counts above)
    large = [c for c in run["cells"] if c["kv_bytes"] >= 1 << 30 and "fakv" in c["impls"]]
    # (two decimals: with one, 104.95 % below the line shows as 105.0 %)
    def bare(c):
        return f", the bare read {c['impls']['bare']['copy_fraction']:.2%}" if "us" in c["impls"].get("bare", {}) \
            else ""
    def fraction(c):
        f = c["impls"]["fakv"]
        return f"{f['copy_fraction']:.2%}" if "us" in f else "fakv failed"
    below = [f"{c['shape']} @{c['layout']} ({fraction(c)}{bare(c)})" for c in large
             if "us" not in c["impls"]["fakv"] or c["impls"]["fakv"]["copy_fraction"] < 1.05]
    lines += [f"Caches of 1 GiB or more at 105 % of copy or more: {len(large) - len(below)} of {len(large)}"
              + (f"; below: {', '.join(below)} (@0: contiguous, @N: pages of N)." if below else "."), ""]
    bares = [c["impls"]["bare"]["copy_fraction"] for c in large if "us" in c["impls"].get("bare", {})]
    if bares:
        lines += ["The bare read of the same bytes (no attention; stream_balance.py's tma2kvmap, in the cell's pages, "
                  "at head dims 64, 128 and 256, else tma2kv; of a ragged batch, about its bytes in equal sequences, "
                  f"without its imbalance) in this run: {min(bares):.2%} to {max(bares):.2%} of copy "
                  f"over those {len(bares)} cells, "
                  f"{sum(b >= 1.05 for b in bares)} of them at 105 % or more.", ""]
    failures = [f"- {c['shape']}, layout {c['layout']}: {n}: {e['failed']}" for c in run["cells"]
                for n, e in c["impls"].items() if "failed" in e]
    if failures:
        lines += ["Failed or refused (not timed):", ""] + failures + [""]
    return "\n".join(lines)


def plot(path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    run = json.load(open(path))
    stem = os.path.splitext(path)[0]          # grid.json: grid-contiguous.png, ...; grid-s46.json: grid-s46-...
    by = {(c["shape"], c["layout"]): c for c in run["cells"]}
    names = ["fakv"] + list(PEERS)
    written = []
    for page in run["layouts"]:
        fig, axes = plt.subplots(1, 4, figsize=(16, 3.6), sharey=True)
        for ax, b in zip(axes, (1, 8, 32, 128)):
            for name in names:
                xs, ys = [], []
                for s in (1024, 8192, 32768):
                    c = by.get((f"b{b} s{s // 1024}K", page))
                    e = c and c["impls"].get(name)
                    if e and "copy_fraction" in e:
                        xs.append(s)
                        ys.append(100 * e["copy_fraction"])
                if xs:
                    ax.plot(xs, ys, marker="o", label=name, linewidth=2.5 if name == "fakv" else 1.2)
            ax.set_xscale("log", base=2)
            ax.set_title(f"batch {b}")
            ax.set_xlabel("seqlen_k")
            ax.axhline(100, color="gray", linewidth=0.6)
        axes[0].set_ylabel("% of copy bandwidth")
        axes[-1].legend(fontsize=8)
        fig.suptitle(f"decode, GQA 32/8, d128, bf16, {'contiguous' if page == 0 else f'pages of {page}'} "
                     f"({run['device']}, {run['date']})")
        fig.tight_layout()
        name = f"{stem}-{'contiguous' if page == 0 else f'page{page}'}.png"
        fig.savefig(name, dpi=90)
        plt.close(fig)
        written.append(name)
    print("wrote " + ", ".join(written))


def names_of(text, known, option):
    """The comma-separated names of `text`, stripped; one not in `known` stops the run (a misspelt peer left
    the best peer to the others)."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"{option}: unknown {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def selected(shapes, only):
    """The shapes `only` names (comma-separated; empty: all): a shape of that name, else those whose name holds
    its words as whole words in order ("b1": b1 s1K, b1 s8K, b1 s32K, MHA b1 s32K, not b128; "d64": the
    head-dim-64 cells); one that selects nothing stops the run."""
    tokens = [t.strip() for t in only.split(",") if t.strip()]
    if not tokens:
        return list(shapes)
    picked = set()
    for t in tokens:
        exact = [s[0] for s in shapes if s[0] == t]
        words = t.split()
        near = [s[0] for s in shapes if any(s[0].split()[i:i + len(words)] == words
                                              for i in range(len(s[0].split())))]
        if not (exact or near):
            raise SystemExit(f"--only: {t!r} names no shape (shapes: {', '.join(s[0] for s in shapes)})")
        picked.update(exact or near)
    return [s for s in shapes if s[0] in picked]


def layouts_of(text):
    """--layouts' page sizes (0: contiguous); one that is not a power of two up to 256 (every shape's seqlen_k a
    multiple of it) is refused before anything runs: it failed every implementation of every cell."""
    try:
        layouts = [int(x) for x in text.split(",")]
    except ValueError:
        raise SystemExit(f"--layouts: comma-separated page sizes (0: contiguous), got {text!r}") from None
    bad = [p for p in layouts if p < 0 or p > 256 or p & (p - 1)]
    if bad or not layouts:
        raise SystemExit(f"--layouts: page sizes are 0 (contiguous) or powers of two up to 256, got {bad or text!r}")
    return layouts


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "perf"))
    ap.add_argument("--only", default="", help="shapes of this name, else whose name holds its words (comma-separated)")
    ap.add_argument("--layouts", default=",".join(map(str, LAYOUTS)))
    ap.add_argument("--peers", default=",".join(PEERS))
    ap.add_argument("--sustain", type=float, default=0.0, metavar="S",
                    help="seconds of replays before each implementation is timed (steady clocks under load)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="timings per implementation, interleaved within a cell; the median counts")
    ap.add_argument("--shapes", default="", metavar="NAME=b,s,h,hkv,d;...",
                    help="time these shapes instead of the grid's (shapes outside the grid the plans were tuned on)")
    ap.add_argument("--plot", metavar="JSON", help="only make the plots of a run")
    ap.add_argument("--markdown", metavar="JSON", help="only print the table of a run (as grid.md has it)")
    args = ap.parse_args()
    if args.plot:
        try:
            plot(args.plot)
        except ImportError:
            raise SystemExit("bench_grid.py --plot needs matplotlib (pip install matplotlib)") from None
        return
    if args.markdown:
        with open(args.markdown) as f:
            print(markdown(json.load(f)))
        return
    if args.rounds < 1 or args.sustain < 0:             # (0 rounds timed nothing and exited 0)
        raise SystemExit(f"--rounds must be at least 1 and --sustain not negative, got {args.rounds}, {args.sustain}")
    layouts = layouts_of(args.layouts)
    peers = names_of(args.peers, PEERS + ("bare", "fakv-merge"), "--peers")
    if args.shapes:
        extra = shapes_by_name(args.shapes)
        shapes = [extra[e.partition("=")[0].strip()] for e in filter(None, args.shapes.split(";"))]
    else:
        shapes = SHAPES
    shapes = selected(shapes, args.only)
    torch = need_cuda("bench/bench_grid.py")                 # (the names above checked without it)
    copy_bw = copy_bandwidth(args.sustain)
    run = {"device": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"), "copy_tbps": copy_bw,
           "layouts": layouts, "shapes": [s[0] for s in shapes], "peers": peers, "sustain_s": args.sustain,
           "rounds": args.rounds, "cells": []}
    print(f"copy bandwidth {copy_bw:.2f} TB/s", flush=True)
    os.makedirs(args.out, exist_ok=True)
    for shape in shapes:
        for page in layouts:
            t0 = time.time()
            cell = measure(shape, page, peers, copy_bw, args.sustain, args.rounds)
            torch.cuda.empty_cache()
            run["cells"].append(cell)
            parts = [f"{n} {e['us']:.1f}us {e['copy_fraction']:.1%}{' (' + e['note'] + ')' if e.get('note') else ''}"
                     if "us" in e else
                     f"{n} {e.get('failed') or e.get('skipped')}" for n, e in cell["impls"].items()]
            print(f"{shape[0]:>18} page {page:>3}: " + "; ".join(parts) + f"  [{time.time() - t0:.1f}s]", flush=True)
            json.dump(run, open(os.path.join(args.out, "grid.json"), "w"), indent=1)
    run["copy_tbps_end"] = copy_bandwidth(args.sustain)     # (the fractions use the first)
    print(f"copy bandwidth at the end {run['copy_tbps_end']:.2f} TB/s", flush=True)
    json.dump(run, open(os.path.join(args.out, "grid.json"), "w"), indent=1)
    md = markdown(run)
    open(os.path.join(args.out, "grid.md"), "w").write(md + "\n")
    print(md)
    if not args.shapes:                 # (the plots are of the grid's GQA cells)
        try:
            plot(os.path.join(args.out, "grid.json"))
        except ImportError:
            print(f"(no matplotlib here: python bench/bench_grid.py --plot {args.out}/grid.json makes the plots)")
    sys.exit(1 if fakv_failed(run) else 0)


def fakv_failed(run):
    """The cells (shape @layout) where fakv failed: its check, or its run."""
    bad = [f"{c['shape']} @{c['layout']}" for c in run["cells"] if "failed" in c["impls"].get("fakv", {})]
    if bad:
        print(f"fakv failed in {len(bad)} cells: {', '.join(bad)}")
    return bad


if __name__ == "__main__":
    main()
