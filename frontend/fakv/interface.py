"""The slow path of fakv.flash_attn_with_kvcache (api.py): FlashAttention's
KV-cache attention checked, planned and run by the kernels in kernels/
(decode.py, combine.py, append.py), on the CPU path through the JIT, or on
the GPU as a prepared call (prepare.py) the API's fast path keeps.

Same signature, defaults, shapes and results as flash_attn.flash_attn_with_kvcache
(docs/api.md lists what is implemented and what we chose where FlashAttention
is silent). Inputs are checked before anything is launched.
"""
import collections.abc
import functools
import math
import numbers
import os
import sys

from . import cache, prepare, runtime
from .cache import compile_only
from . import tensors as T
from .errors import DataError, FakvError, capacity_error
from .floats import as_float32
from .heuristics import num_splits_heuristic

_DTYPES = ("f16", "bf16")
MAX_SPLITS = 64
_MAX_CAPACITY = 2 ** 31 - 256      # a sequence's cache rows at most (int32 lengths, with a block's headroom)
MAX_ROWS = 64  # query rows (GQA group x query positions) per program: one wgmma's M (in the 64-row form)


def _kernels():
    from .kernels import combine, decode
    return decode.decode, combine.combine


def _append_kernel():
    from .kernels import append
    return append.append


def _lazy_kernels():
    return prepare.Lazy.get("decode", "decode"), prepare.Lazy.get("combine", "combine")


_REPLACED = {}


def _replaced(name):
    """Whether $FAKV_KERNELS holds a kernels/<name>.py other than fakv's own (by content: a copy of the
    kernels, or the checkout's own folder, is not a variant): fakv.kernels' folders as they were when it was
    imported, else as they would be (not imported here, for a warm start's sake)."""
    package = sys.modules.get("fakv.kernels")
    dirs = tuple(package.__path__ if package is not None else cache.kernel_dirs())
    key = (name, dirs)
    if key not in _REPLACED:
        first, own = os.path.realpath(dirs[0]), os.path.realpath(os.path.join(os.path.dirname(__file__), "kernels"))
        path = os.path.join(first, name + ".py")
        others = [os.path.realpath(d) for d in dirs[1:]]
        fakvs = [f for f in (os.path.join(d, name + ".py") for d in others) if os.path.exists(f)]
        replaced = first != own and first not in others and os.path.exists(path)   # (the checkout's: its own)
        if replaced and fakvs:
            with open(path, "rb") as a, open(fakvs[0], "rb") as b:
                replaced = a.read() != b.read()
        _REPLACED[key] = replaced
    return _REPLACED[key]


def _sequence_span(t):
    """The elements one sequence (index 0 of axis 0) of t reaches through its strides: what a kernel's offsets
    within a sequence address."""
    return 1 + sum((n - 1) * abs(st) for n, st in zip(t.shape[1:], T.strides(t)[1:]))


def _pow2(n):
    return 1 << max(0, int(n - 1).bit_length())


def _window_pair(window_size):
    """window_size as two ints: a tuple, a list, a numpy array or a tensor
    of two integers (what FlashAttention's tests pass)."""
    # (a CUDA tensor's values are read back by waiting for the GPU, which a CUDA graph's capture refuses:
    # FlashAttention's bindings take two ints)
    _check(not getattr(window_size, "is_cuda", False),
           f"`window_size` must be host values (a tuple or list of two ints, a numpy array or a CPU tensor), got a "
           f"tensor on {getattr(window_size, 'device', 'the GPU')}: reading it would wait for the GPU")
    items = window_size.tolist() if hasattr(window_size, "tolist") else window_size
    try:        # (a sequence: a dict's keys or a set's order are not the pair FlashAttention's [0], [1] read)
        items = list(items) if not isinstance(items, (collections.abc.Mapping, collections.abc.Set)) else None
    except TypeError:
        items = None
    ok = items is not None and len(items) == 2 and all(
        isinstance(w, numbers.Integral) and not isinstance(w, bool) for w in items)
    _check(ok, f"`window_size` must be a pair of ints (left, right), got {window_size!r}")
    return int(items[0]), int(items[1])


def plan(*args, **kwargs):
    """The kernel specialisations and launch grids of one call (no tensors
    needed: shapes and options only); see _plan. Returns fresh dicts."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in _plan(*args, **kwargs).items()}


# Ragged batches (_plan): a batch of one wave over long caches is launched
# with _RAGGED_SPLITS splits and decode.py's ADAPTIVE (kernels/splits.py) when
# its lengths are ragged: the planner's hint (lengths_hint.py) from the lengths
# of an earlier call with the same cache_seqlens, copied to the host without
# waiting. H200, bench/ragged_splits.py, b32 paged 256: lengths uniform in
# [1, 16K] 414 -> 284 us with 4 (session 12, swapped: 303-312 -> 251-255),
# but equal lengths (s8K) 240 -> 253 us (+5 %; with 2 splits, or without the
# combine launch, the same: docs/decisions.md), hence only where the lengths
# were ragged. FAKV_ADAPTIVE_SPLITS=n: always n (whatever the lengths), 0: never.
_RAGGED_SPLITS = 4


def _env_count(name, low, high):
    """Environment variable `name` as an integer in [low, high], None when unset or empty; anything else is an
    error naming it (`-1`, `abc` were passed over silently, `²` gave int()'s ValueError)."""
    text = os.environ.get(name, "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit() and low <= int(text) <= high):
        raise ValueError(f"{name}={text!r}: an integer in [{low}, {high}] is expected (unset: the default)")
    return int(text)


_ADAPTIVE_SPLITS = _env_count("FAKV_ADAPTIVE_SPLITS", 0, MAX_SPLITS)     # (unset: by the hint)
_ADAPTIVE_MAX_BATCH = 64      # (kernels/splits.py reads every length: BATCH loads, unrolled)
_ADAPTIVE_MIN_BLOCKS = 16     # key blocks per split of the longest sequence, at least


# Launches run a sequence's heads together (decode.py's HEADS_FIRST: grid
# (heads, batch x query blocks, splits), fakv-pack-gqa on axis 0) unless
# batch x query blocks passes CUDA's 65535 on axis y; H200, bench_grid's cells
# (.carry/exp/ab_heads_first.py, session 11), against sequences first: b128
# s1K -1.3 to -3.1 %, ragged b32 -1.8 to -3.2 %, d64 b32 s32K -0.7 to -1.2 %,
# the rest within +-1 % (the run's noise). Unsplit batches of several waves of
# one query block, over long caches, also run their sequences longest first
# (decode.py's LONGEST_FIRST, kernels/splits.py): a ragged batch's longest
# programs no longer start in the last wave: ragged b128 s<=4K -11 to -12 %,
# equal b128 s8K / s32K -0.6 to -3.2 % (same run). FAKV_LONGEST_FIRST=0: off.
_LONGEST_FIRST = os.environ.get("FAKV_LONGEST_FIRST") != "0"
_LONGEST_FIRST_MAX_BATCH = 128    # (splits.py reduces the batch's lengths as one tile, ~25 reductions)
_LONGEST_FIRST_MIN_BLOCKS = 64    # key blocks of the longest sequence, at least (a program's prologue: ~540
                                  # SASS instructions before its first copy at batch 128, d128, 126 registers in
                                  # session 11's 4 bands; its start on the H200 1.7-2.3 us in session 30's 16)
# One wave of programs over a contiguous MHA cache (one kv head a query head, one query row) runs its
# sequences first instead: H200, bench/plan_variants.py `order=seq` against heads first (session 27, five calls, 5-7
# interleaved rounds): MHA b8 s8K -1.6 / -0.1 / -0.7 / -0.2 %, MHA b8 s16K -2.6 / -0.4 / -2.6 %, 16 heads b16 s8K
# -0.3 %; not there: two waves or more (MHA b16 s4K +0.5 %, b32 s2K +0.3 %), pages (MHA b8 s8K: 16 +0.9 %, 64
# 0.0 %, 256 -0.3 / -0.2 %), GQA (b32 s8K -1.2 / +0.2 %, b8 s32K +0.2 %, 1 to 16 kv heads -1.0 to +1.2 %).
# FAKV_SEQ_FIRST_MHA=0: heads first there too.
_SEQ_FIRST_MHA = os.environ.get("FAKV_SEQ_FIRST_MHA") != "0"


# Decode's dots, a few query rows against a key block, run as wgmmas of
# their transposes (@fakv.jit(swap_ab=True): the keys as wgmma's M, the
# heads padded to 8 as its N) over blocks of 64 keys: 1/8 of the tensor
# work of a 64-row wgmma of 4 useful rows, and the SM clock no longer drops
# under the 700 W cap (docs/decisions.md, "Power"). H200, session 12
# (.carry/exp/ab_swap.py, ab_swap2.py; 1 s of replays first): b32 s32K -4.5
# to -6.5 %, b128 s32K -3.8 to -5.7 %, d64 b32 s32K -5 to -8 %, ragged b32
# -25 %, ragged b128 -7 to -10 %, MHA b1 s32K -2 to -5 %, at 1980 MHz
# against 1470-1700; in bursts within -5 to +1.6 %. Small calls too, since
# their splits may be of one swapped block (_SPLIT_MIN_BLOCKS_SWAPPED; the
# 64-row form below 65536 keys over sequences x kv heads until session 18):
# H200, bench/plan_variants.py, paged 256 unless said: b1 s1K 6.2 -> 5.9 us
# (contiguous) / 6.0 (pages of 64, 256; pages of 16 6.2 either way), b1 s512 5.8 ->
# 4.8, b2 s1K 7.6 -> 7.1, b4 s1K 9.4 -> 8.5, b1 s2K 7.7 -> 7.5, b1 s4K 9.9
# -> 9.5, d64 b1 s1K 5.8 -> 5.1, MHA b1 s1K 8.7 -> 8.1, MQA b1 s1K 6.1 ->
# 5.6 (docs/gpu-results.md, session 18). Appending calls swap too: their
# new keys are then attended a key block (64) at a time (a kernel swaps all
# its dots or none), rotated 16 rows at a time (kernels/append.py's
# new_rows). FAKV_SWAP_AB=1: wherever it can (the default), 0: never.
_SWAP_AB = {"1": True, "0": False}.get(os.environ.get("FAKV_SWAP_AB", ""))
# Pages smaller than a key block (pages of 16, say) gathered by decode's producer threads (cp.async) instead of
# copied by a TMA box per page (@fakv.jit(gather_pages=True)) for swapped head-dim-128 calls of one wave of
# programs whose splits read at most _TWO_STAGES_WAVE[1] key blocks, reading at least _GATHER_BYTES of cache,
# one query row, no new keys (as measured).
# H200, bench/plan_variants.py, pages of 16, gather=1 against 0 (session 20, interleaved): b32 s8K -2.4 %, MHA b8
# s8K -1.4 %, b8 s32K -0.8 %; but b8 s8K (256 MiB) +0.9 %, b32 s32K (512 blocks a program) +0.3 %, b128 s8K /
# b128 s1K / ragged b128 s<=4K (several waves) +0.2 / +2.1 / +2.1 %, ragged b32 s<=16K (4 adaptive splits) +6.1
# %, d64 b32 s32K +4.7 %, d256 b8 s32K +3.6 %; session 19: b1-b4 s1K +3.6 to +10.7 %.
# FAKV_GATHER_PAGES=1: wherever the pages are smaller than a block, 0: never.
_GATHER_PAGES = {"1": True, "0": False}.get(os.environ.get("FAKV_GATHER_PAGES", ""), "auto")
# Decode's TMA-copied K / V tiles in boxes of at most 16 rows (@fakv.jit(row_boxes=True)), each box's 64-channel
# halves asked for together: the boxes past a sequence's last key read no DRAM (whole tiles read up to 63 keys more
# per sequence and kv head: 1.7 % of ragged b128 s<=4K's bytes, 0.45 % with row boxes; ragged b128 -0.7 to -2.4 %,
# uniform cells within their spread: H200, session 25, docs/decisions.md "Row boxes by default"). Head dims up to
# 128 (d256 b8 s32K pages of 256 +4.0 % with them: 16 copies a tile). FAKV_ROW_BOXES=0 (and above 128): boxes of a
# tile's (or a page's) rows, every box's first 64 channels, then the rest.
_ROW_BOXES = os.environ.get("FAKV_ROW_BOXES") != "0"
# FAKV_WARM_PAGES=N (1-8; an experiment, off by default): decode compiled with @fakv.jit(warm_pages=N), each K / V
# copy prefetching into L2 the first lines of the tile N tiles ahead (docs/decisions.md).
_WARM_PAGES = _env_count("FAKV_WARM_PAGES", 0, 8) or 0
_GATHER_BYTES = 512 << 20
_RING_BYTES = 96 * 1024       # a K/V ring that still lets two programs share an SM


# What an appending call's last split does besides its cache blocks (the new
# keys attended), in key blocks: decode.py's APPEND, that many blocks fewer
# for the last split. H200, session 14 (one token, rotary, paged 256 s8192,
# decode appending): b4 (8 splits) +17.7 -> +9.3 % (interleaved), b8 (4)
# +10.7 -> +6.2 %, b1 with 32 splits +58 -> +25 %; the plans of b1 and b2
# (their last splits already short) unchanged.
_APPEND_BLOCKS = 3


# Key blocks a split reads at least. The 64-row form's blocks of 32 keys: 3
# (1K keys at batch 1, paged 256, on the H200, .carry/exp/b1_splits.py,
# session 9: 8 splits 6.32 us, 12 5.72, 16 6.12, 32 5.95). Swapped blocks of
# 64 keys: 1 at head dims up to 128 (b1 s1K: 16 splits of one block 5.9-6.0
# us, 8 of two 5.9-6.1, the 6 of three blocks 6.7-6.9), 2 above (d256 b1 s1K
# 7.7 us against 8.3 with one; one SM slot a program): bench/plan_variants.py,
# session 18.
_SPLIT_MIN_BLOCKS = 3
_SPLIT_MIN_BLOCKS_SWAPPED = 1
# A ring of two stages instead of three (64 KB instead of 96) for swapped d128 calls of one wave of programs
# whose splits read _TWO_STAGES_WAVE key blocks (b32 s8K, MHA b8 s8K unsplit; b8 s32K, b8 s16K, b4 s32K, MHA b1
# s32K in 4-8 splits). H200, bench/plan_variants.py (0.1 s of replays, interleaved), against three stages:
# session 16 (unsplit, two leases): b32 s8K -0.6 / -1.4 % (contiguous / pages of 256) and -2.0 % (256), MHA b8
# s8K contiguous -2.5 and -1.0 %, pages of 256 -1.3 %; session 20 (split): b8 s32K -0.3 / -1.3 / -1.3 %
# (contiguous / pages of 64 / 256), MHA b1 s32K -1.8 / -1.1 % (contiguous / 256), b8 s16K -1.6 %, b4 s32K -1.9 %
# (256); pages of 16 keep their extra stage (b8 s32K: +0.9 % with two). Not elsewhere: b32 s1K (one wave of 16
# blocks) +9 to +14 %, b128 s32K +0.5 to +2.7 %, d64 b8 s8K +2 %; b128 s1K -2.1 to -2.3 % on one lease but +5 %
# on another (docs/gpu-results.md, sessions 16 and 20). Session 26 (same tool, 3 rounds): splits of 129-512 blocks
# too (_LONG_TWO_STAGES), their small pages without the extra stage below: b32 s32K (512 blocks) -0.4 / -0.7 / -1.1 /
# -1.3 % (contiguous / pages of 16 / 64 / 256), b32 s16K -0.7 %, MHA b8 s16K -0.9 / -1.8 % (contiguous / 256).
_TWO_STAGES_WAVE = (64, 128)
_LONG_TWO_STAGES = 512
# The same two stages for several waves of such calls whose splits read _WAVES_TWO_STAGES key blocks or more, copied
# by TMA, at two programs an SM (@fakv.jit(ctas_per_sm=2): a 70 KB program would otherwise share its SM with two
# others, the 192 KB in flight an SM of three stages). H200, bench/plan_variants.py `stages=2+ctas=2` against three
# stages (session 29, 3 interleaved rounds): b128 s8K -2.2 / -0.7 / -2.0 % (contiguous / pages of 64 / 256), b128
# s32K -2.2 / -1.8 % (contiguous / 256); not pages of 16 (b128 s8K +0.4 %), ragged b128 s<=4K (64 blocks) 0.0 %,
# b128 s1K (16 blocks) -0.3 / -0.6 %; two stages at three programs an SM: b128 s8K -0.7 / +0.1 / 0.0 %, b128 s32K
# +2.5 / +0.3 %. A bare TMA read of the same bytes in 1024 blocks (bench/stream_balance.py, session 29) is 1.3-1.6 %
# faster with two 32 KB slots a block than with three, two blocks an SM.
# Session 39 (H100, same tool, 5 interleaved rounds, .carry/exp/s39g.sh): shorter splits too, from 16 blocks: b128 s1K
# -1.2 / -1.0 / -1.1 % (contiguous / pages of 64 / 256), b128 s2K -0.5 %, MHA b32 s1K -1.6 %, ragged b128 s<=4K -0.5 /
# -0.3 % (contiguous / 256).
_WAVES_TWO_STAGES = 16
# Heads per combine program, at most: more programs, each merging less, finish sooner even when they do not
# fit beside decode's (H200, 32/8 d128, .carry/exp/combine_hb.py, session 15; against as many as a tile held):
# b2 s8192 paged -3.0 %, b4 -3.8 %, b8 -3.1 % (contiguous -3.0 %), b16 -1.2 %, b8 s1024 -20.2 %, b4 s32768
# -1.2 %, b8 s32768 contiguous -1.0 %; 2 and 8 heads within 1 % of 4, 1 head slower.
_COMBINE_MAX_HEADS = 4

# Memory bandwidth (GB/s, the driver's peak) from which head-dim-64 calls keep three stages (_plan): the H200's 4.8
# TB/s (three measured faster, session 43) against the H100 SXM's 3.35 (two, session 39); Little's law: faster memory
# needs more bytes in flight. 0 (unknown): two.
_D64_THREE_STAGES_GBPS = 4000


@functools.lru_cache(maxsize=4096)
def _plan(batch, seqlen_q, heads, kv_heads, head_dim, dtype, paged, page_size, max_seqlen_k, causal,
         num_splits, num_sms=132, l2_bytes=50 * 1024 * 1024, appending=False, ragged=False, cluster=False,
         memory_gbps=0):
    """The kernel specialisations and launch grids of one call (no tensors
    needed: shapes and options only; `memory_gbps`: the device memory's peak
    bandwidth, 0 unknown; `ragged`: the lengths hint; `cluster`:
    whether splits may merge in a cluster, True, False or "auto" (where
    measured faster), _CLUSTER_SPLITS on the GPU). Returns a dict with the
    decode and combine constexprs and grids, the number of splits, whether
    the plan of ragged lengths differs ("by_lengths") and the splits of a
    cluster ("cluster", 0: none)."""
    if cluster == "auto":
        args = (batch, seqlen_q, heads, kv_heads, head_dim, dtype, paged, page_size, max_seqlen_k, causal, num_splits,
                num_sms, l2_bytes, appending, ragged)
        p = _plan(*args, cluster=True, memory_gbps=memory_gbps)
        n = math.ceil(max(max_seqlen_k, 1) / p["decode"]["BLOCK_N"])
        small = -(-n // p["num_splits"]) <= _CLUSTER_BLOCKS and batch * kv_heads * p["m_blocks"] * p["num_splits"] <= _CLUSTER_PROGRAMS
        return p if p["cluster"] and small else _plan(*args, cluster=False, memory_gbps=memory_gbps)
    group = heads // kv_heads
    head_tile = max(64, _pow2(head_dim))     # tiles of at least 64 channels (128-byte rows)
    group_tile = _pow2(group)
    if group_tile > MAX_ROWS:
        raise NotImplementedError(f"flash_attn_with_kvcache: {group} query heads per kv head is more than "
                                  f"fakv handles ({MAX_ROWS})")
    sq_block = max(1, min(_pow2(seqlen_q), MAX_ROWS // group_tile))
    m_blocks = math.ceil(seqlen_q / sq_block)
    # Keys per block (the 64-row form; swapped: 64): 32 reads the cache fastest on the H200 at head dim 128
    # (bench/sweep_decode.py: small tiles, several blocks per SM); 64 at 64
    # and at 256 (bench/plan_sweep.py). Pages that hold whole blocks, or
    # whole swizzle atoms (multiples of 8 rows: a box per page), are copied
    # by TMA, others gathered (the lowering decides: docs/decisions.md).
    swap = group_tile * sq_block < MAX_ROWS and _SWAP_AB is not False
    block_n = 32 if head_tile == 128 and not swap else 64
    n_blocks = math.ceil(max(max_seqlen_k, 1) / block_n)
    # Programs of the decode launch, and of the combine's with head_block heads each (none with one split).
    programs = lambda s: batch * kv_heads * m_blocks * s                                   # noqa: E731
    combine_programs = lambda s, hb: math.ceil(heads / hb) * seqlen_q * batch if s > 1 else 0  # noqa: E731
    # Whether decode appends the new keys itself with s splits (_FUSED_APPEND); head dims above 128 never do.
    decode_appends = lambda s: (appending and head_tile <= 128 and 1 < s                   # noqa: E731
                                and -(-(n_blocks + _APPEND_BLOCKS) // s) <= _FUSED_MAX_BLOCKS)
    max_head_block = lambda s: max(1, min(_pow2(heads), 16384 // (_pow2(s) * head_tile)))  # noqa: E731
    slots = num_sms * (2 if head_tile <= 128 else 1)
    adaptive, by_lengths = 0, False
    cluster = cluster and not appending and head_tile <= 128 and group_tile * sq_block <= _CLUSTER_ROWS
    if num_splits <= 0:
        # FlashAttention's heuristic over the programs that run at once: two
        # decode programs share an SM at head dims up to 128 (~120 registers
        # x 256 threads, 67 KB of shared memory each; swapped ~60 registers
        # and a 96 KB ring), one above (as
        # FlashAttention 2 passes 2 x the SMs for its two blocks per SM).
        size_one_kv_head = max_seqlen_k * head_dim * 2 * 2
        # A split reads at least _SPLIT_MIN_BLOCKS key blocks (swapped: _SPLIT_MIN_BLOCKS_SWAPPED, 2 above d128).
        min_blocks = (2 if head_tile > 128 else _SPLIT_MIN_BLOCKS_SWAPPED) if swap else _SPLIT_MIN_BLOCKS
        max_splits = min(MAX_SPLITS, max(1, -(-n_blocks // min_blocks)))
        if cluster:
            max_splits = min(max_splits, _CLUSTER_MAX)
        num_splits = num_splits_heuristic(batch * kv_heads * m_blocks, slots, n_blocks, m_blocks,
                                          size_one_kv_head, causal, max_splits, l2_bytes)
        if num_splits > 1:
            # Even shares: among the split counts whose programs still run at
            # once, combine's included (it is launched early, programmatically,
            # and its programs wait in the SMs' free slots: b1 s8192 with 32
            # combine programs behind 256 decode ones 14.1 us, 8 of them 12.1),
            # the one whose longest split has the fewest blocks (the call's
            # critical path), then the fewest splits (b1 s8192 d128: 32 splits
            # of 8 blocks 15.4-15.6 us, the heuristic's 29, 28 of 9 and one of
            # 4, 16.1-16.3 us). When decode appends, its last split also does
            # the new keys' work.
            def longest(s):
                spare = _APPEND_BLOCKS if decode_appends(s) else 0     # (decode.py's APPEND, as decode splits)
                per = -(-(n_blocks + spare) // s)
                return max(per, max(0, n_blocks - (s - 1) * per) + spare), s
            wave = max(num_splits, slots // (batch * kv_heads * m_blocks))
            counts = range(num_splits, min(max_splits, wave) + 1)
            if cluster:                     # (a power of two: the merge's tiles have the splits as a dimension)
                counts = [s for s in counts if s & (s - 1) == 0] or [1 << (num_splits.bit_length() - 1)]
            fit = [s for s in counts if programs(s) + combine_programs(s, max_head_block(s)) <= slots]
            num_splits = min(fit or counts, key=longest)
        # A batch of one wave without splits: if its lengths are ragged, one
        # long sequence is one long program while the others' slots idle.
        # Launched with _RAGGED_SPLITS splits (FAKV_ADAPTIVE_SPLITS's) and
        # decode.py's ADAPTIVE (kernels/splits.py), each sequence uses as many
        # as the batch's lengths call for: one each when they are near-equal.
        else:
            adaptive_splits = _RAGGED_SPLITS if _ADAPTIVE_SPLITS is None else _ADAPTIVE_SPLITS
            if (adaptive_splits > 1 and batch <= _ADAPTIVE_MAX_BATCH and programs(1) <= slots
                    and n_blocks >= adaptive_splits * _ADAPTIVE_MIN_BLOCKS):
                # (by the hint: one query row, head dims up to 128, what the H200 measured and tests run)
                by_lengths = _ADAPTIVE_SPLITS is None and seqlen_q == 1 and head_tile <= 128 and not appending
                if (ragged and by_lengths) or _ADAPTIVE_SPLITS is not None:
                    num_splits, adaptive = adaptive_splits, batch
    num_splits = max(1, min(num_splits, MAX_SPLITS, n_blocks))
    # The splits' partials (splits x batch x seqlen_q x heads x head_tile f32) are addressed in int32
    # (kernels/splits.py): fewer splits where they would pass 2**31 elements.
    num_splits = max(1, min(num_splits, (2 ** 31 - 1) // (batch * seqlen_q * heads * head_tile)))
    if seqlen_q > 65535 or batch > 65535:     # (combine's grid (heads, seqlen_q, batch): CUDA's 65535 on y and z)
        num_splits, adaptive = 1, 0
    several_waves = programs(num_splits) > slots      # (more decode programs than the GPU runs at once)
    # Heads first, but sequences first for one wave of contiguous MHA programs (_SEQ_FIRST_MHA).
    seq_first = (_SEQ_FIRST_MHA and group == 1 and not paged and batch > 1 and seqlen_q == 1 and not appending
                 and not several_waves)         # (measured with one query row only)
    heads_first = batch * m_blocks <= 65535 and not seq_first                 # (grid axis y: CUDA's 65535)
    longest_first = batch if (_LONGEST_FIRST and num_splits == 1 and m_blocks == 1 and not appending
                              and head_tile <= 128 and programs(1) > slots and batch <= _LONGEST_FIRST_MAX_BATCH
                              and n_blocks >= _LONGEST_FIRST_MIN_BLOCKS) else 0
    # Heads per combine program: as few as fit beside the decode programs (more programs, each
    # loading less: b1 s8192, 29 splits, 1 head 12.3 us, 4 heads 13.0), else _COMBINE_MAX_HEADS.
    head_block = min(max_head_block(num_splits), _COMBINE_MAX_HEADS)
    while head_block > 1 and programs(num_splits) + combine_programs(num_splits, head_block // 2) <= slots:
        head_block //= 2
    stages, ring_stage = (3 if head_tile <= 128 else 2), 2 * block_n * head_tile * 2   # a K and a V block, 16-bit
    # Swapped d128 calls of one query row, no new keys and no adaptive splits, whose programs run at once: where
    # splits of _TWO_STAGES_WAVE blocks ring two stages and small pages are gathered (_GATHER_PAGES); longer
    # splits, up to _LONG_TWO_STAGES blocks, ring two stages too.
    per_split = -(-n_blocks // num_splits)
    swapped_d128 = swap and head_tile == 128 and seqlen_q == 1 and not appending and not adaptive
    wave = swapped_d128 and not several_waves
    one_wave = wave and per_split <= _TWO_STAGES_WAVE[1]
    long_two = wave and _TWO_STAGES_WAVE[1] < per_split <= _LONG_TWO_STAGES    # (two in all, small pages too)
    if (one_wave and per_split >= _TWO_STAGES_WAVE[0]) or long_two:
        stages = 2          # (a 64 KB ring)
    # The same calls in several waves of splits of _WAVES_TWO_STAGES blocks or more, copied by TMA (no pages smaller
    # than a block): two stages, two programs an SM (the ring a third program would find room for left unused).
    waves_two = (swapped_d128 and several_waves and per_split >= _WAVES_TWO_STAGES
                 and not (paged and page_size < block_n))
    if waves_two:
        stages = 2
    # Swapped head-dim-64 calls (64 exactly: what was measured) of one query row, no new keys, no adaptive splits and
    # no cluster (d64), whose pages (if any) hold a key block: two stages (a 32 KB ring), and two programs an SM when
    # they run in several waves of splits of _WAVES_TWO_STAGES blocks or more. Their smaller pages: three stages, not
    # the fourth below.
    # H100, bench/plan_variants.py (session 39, 3 interleaved rounds, .carry/exp/s39c.sh, s39d.sh) against three
    # stages: d64 b8 s8K -4.9 / -3.8 / -3.3 % (contiguous / pages of 64 / 256), d64 b32 s32K -4.6 / -1.5 / -2.6 %,
    # b1 s32K -3.2 / -1.7 % (contiguous / 256), b32 s8K -3.1 %, b8 s32K -3.4 %; several waves, two programs an SM:
    # b128 s8K -5.1 / -3.4 % (two stages alone -1.7 / -1.3 %), b128 s1K -2.6 % (-0.5 %). Not pages of 16 (a TMA box
    # a page): b8 s8K +3.1 %, b32 s8K +1.8 %, b32 s32K +0.9 %.
    # But not on memory as fast as the H200's (_D64_THREE_STAGES_GBPS): there the same calls keep three stages (the
    # programs an SM as above). H200, bench/plan_sweep.py (session 43), three stages against two: d64 b8 s8K 41.3 ->
    # 37.1 / 40.1 -> 37.9 us (contiguous / pages of 256), d64 b32 s32K 508.9 -> 476.5, 513.3 -> 477.0 / 527.1 ->
    # 484.0, 526.1 -> 485.0 / 520.7 -> 485.6 us (contiguous / 64 / 256); pages of 16 (three already) unchanged.
    clustered = cluster and not adaptive and num_splits in (2, 4, 8)
    d64 = swap and head_dim == 64 and seqlen_q == 1 and not appending and not adaptive and not clustered
    d64_blocked = d64 and not (paged and page_size < block_n)     # (pages, if any, hold a key block)
    fast_memory = memory_gbps >= _D64_THREE_STAGES_GBPS
    if d64_blocked:
        stages = 3 if fast_memory else 2
    two_per_sm = waves_two or (d64_blocked and several_waves and per_split >= _WAVES_TWO_STAGES)
    # On memory as fast as the H200's, those d64 calls (small pages too) at three programs an SM in one wave, four in
    # several. H200, bench/plan_variants.py against the plan above (session 50, 5 interleaved rounds): three, d64 b8
    # s8K -2.6 / -1.2 / -2.7 / -2.3 % (contiguous / pages of 16 / 64 / 256), b2 s32K -3.0 %; within 0.2 % at b1, b4,
    # b16, b32 s8K, b8 s32K and b32 s32K (contiguous, pages of 16, 64, 256); four there: b8 s8K +1.6 to +3.9 %, b2
    # s32K +3.5 %. Several waves, four against three: b64 s1K -13.9 / -15.4 % (contiguous / 64), b128 s1K -2.4 / -1.7
    # / -2.2 % (contiguous / 16 / 256), b128 s8K -1.7 / -1.5 % (contiguous / 256); three against two: b128 s1K -2.2 %.
    if d64 and fast_memory:
        ctas = 4 if several_waves else 3
    else:
        ctas = 2 if two_per_sm else 0
    gathered = paged and page_size < block_n and (_GATHER_PAGES is True or (
        _GATHER_PAGES == "auto" and one_wave and batch * kv_heads * max_seqlen_k * head_dim * 4 >= _GATHER_BYTES))
    return {
        # decode.py is written per query head; fakv-pack-gqa runs the GROUP
        # heads of a kv head (padded to group_tile rows) in one program.
        # The new keys of an appending call are attended NEW_N at a time: a key block when swapped.
        "decode": dict(HEAD_DIM=head_tile, BLOCK_N=block_n, NEW_N=block_n if swap else 16, GROUP=group,
                       SQ_BLOCK=sq_block, PAGE_SIZE=page_size if paged else 0, CAUSAL=bool(causal) and seqlen_q > 1,
                       BATCH_IDX=False, SOFTCAP=False, WINDOW=False, ALIBI=False, LEFTPAD=False, PRESCALE=False,
                       MERGE=False, APPEND=0, ROTARY=False, INTERLEAVED=False, ADAPTIVE=adaptive,
                       LONGEST_FIRST=longest_first, HEADS_FIRST=heads_first),
        # (sequence x query block, heads, splits): the programs of a split start after those of the
        # split before (axis z: at most 64 splits, within CUDA's 65535); HEADS_FIRST: (heads, sequence
        # slots x query blocks, splits), a slot's heads starting together.
        "decode_grid": (heads, batch * m_blocks, num_splits) if heads_first else (batch * m_blocks, heads,
                                                                                   num_splits),
        "m_blocks": m_blocks,
        # Ring depth (docs/gpu-results.md): three K/V blocks in flight read
        # the cache fastest at head dims up to 128 (decode.py's own stages=3);
        # above, two (shared memory). One more with pages smaller than a
        # block (a TMA box per page) and splits of 64 blocks or more: b128
        # s8K pages of 16 1007.8 -> 987.8 us, d256 b8 s32K 538.5 -> 501.6
        # (H200, .carry/exp/s9_pages.py); but b128 s1K (32 blocks) 145.0 ->
        # 153.6 (bench_grid, two runs). Not where the ring would pass
        # _RING_BYTES at head dims up to 128 (two programs per SM): swapped
        # d128's 4 x 32 KB, b128 s32K pages of 16 4107.7 -> 3751.9 us with 3
        # (session 12, .carry/exp/ab_swap2.py). Nor at head dim 64: H100, bench/plan_variants.py (session 39,
        # .carry/exp/s39f.sh, s39g.sh), swapped, three stages against four, pages of 16: d64 b32 s32K -4.0 %, b8
        # s32K -2.7 %, b128 s8K -0.7 %.
        # The heads on grid axis 1 without HEADS_FIRST (packed there).
        "decode_options": dict(stages=stages + (
            1 if paged and page_size < block_n and per_split >= 64 and not long_two and not d64 and (
                head_tile > 128 or (stages + 1) * ring_stage <= _RING_BYTES) else 0),
            **({} if heads_first else dict(pack_gqa=1)), **(dict(swap_ab=True) if swap else {}),
            **(dict(gather_pages=True) if gathered else dict(row_boxes=True) if _ROW_BOXES and head_tile <= 128
               else {}), **(dict(ctas_per_sm=ctas) if ctas else {}),
            **(dict(warm_pages=_WARM_PAGES) if _WARM_PAGES else {})),
        "combine": dict(HEAD_DIM=head_tile, HEAD_BLOCK=head_block, MAX_SPLITS=_pow2(num_splits)),
        "combine_grid": (math.ceil(heads / head_block), seqlen_q, batch),
        "num_splits": num_splits,
        "fused_append": decode_appends(num_splits),
        "by_lengths": by_lengths,
        "cluster": num_splits if clustered else 0,
    }


def plain_extras(seqlens, lse, capacity, errors=None):
    """decode.py's arguments after `scale` when cache_batch_idx, softcap,
    window_size, alibi_slopes, cache_leftpad, new keys and rotary are not
    used: (BatchIdx, softcap, left, right, Slopes, slopes_batch_stride,
    Errors, capacity, LeftPad, new_keys, Counters, KNew, VNew, the new keys'
    3 strides, Cos, Sin, cos_stride, rotary_dim, rotary_rows, q_step);
    pointers to tensors never read, the error word (prepare.errors_for(seqlens) when
    not given) and the rows a sequence's cache holds."""
    errors = prepare.errors_for(seqlens) if errors is None else errors
    return (seqlens, 0.0, -1, -1, lse, 0, errors, capacity, seqlens, 0, seqlens, lse, lse, 0, 0, 0, lse, lse,
            0, 0, 0, 0)


# Small calls merge their splits in a thread-block cluster: on the GPU, a call whose splits (at most _CLUSTER_MAX, a
# power of two) read at most _CLUSTER_BLOCKS key blocks each, in at most _CLUSTER_PROGRAMS programs, runs each row's
# splits as one cluster that merges them through distributed shared memory (decode.py's MERGE > 1,
# kernels/splits.py's cluster_merge: each split merges a slice of the columns): one launch, no partials in global
# memory. Not for calls that append, ragged plans (ADAPTIVE), head dims above 128 or more than _CLUSTER_ROWS query
# rows a program. H200, session 19 (bench/plan_variants.py, against decode + combine): b1 s1K 5.9 -> 5.3 us
# (contiguous), 6.2 -> 5.4 (pages of 16), 6.0 -> 5.4 (64, 256), b1 s512 4.8 -> 4.2, d64 b1 s1K 5.1 -> 4.4, b2 s1K
# 7.0 -> 6.6, b1 s2K (4 blocks a split) 7.4 either way, b1 s8K (8 splits of 16 blocks against 29 of 5) 13.6 -> 19.2;
# ~2-4 us less host time per eager call (bench/eager_modes.py; docs/decisions.md). FAKV_CLUSTER_SPLITS=1: wherever
# it can (splits capped at _CLUSTER_MAX), 0: never.
_CLUSTER_SPLITS = {"1": True, "0": False}.get(os.environ.get("FAKV_CLUSTER_SPLITS", ""), "auto")
_CLUSTER_MAX = 8              # programs of a portable cluster, at most
_CLUSTER_ROWS = 8             # query rows a program, at most (the merge holds rows x head_dim x splits in registers)
_CLUSTER_BLOCKS = 2           # key blocks a split, at most, where clusters are planned (unset FAKV_CLUSTER_SPLITS)
_CLUSTER_PROGRAMS = 128       # decode programs, at most, likewise (measured up to b2 s1K: 128)
# Who appends k / v (and rotates q), when combine does not (_COMBINE_APPENDS): decode itself (kernels/decode.py's
# APPEND) when the call has several splits of few key blocks each, else
# kernels/append.py's kernel before the plain decode. H200, one-token
# append with rotary, paged 256 s8192 (bench/append_cost.py, session 13):
# b1 (29 splits of 5 blocks) fused +1.1-1.9 us on 9.6, append kernel first
# +3.2-3.5; b8 (4 splits of 32) fused +7.2-10.5 us on 68.3, append kernel
# first +4.3-4.5; b32 (one split) fused +10.6-21.4 us on 247, append kernel
# first +4.4-5.3. (Not the loop: the last split's tail of the new keys,
# on the critical path, Nsight Compute in session 14; its split is now
# _APPEND_BLOCKS shorter, so b4's 8 splits of 17 blocks append in decode.)
# Session 14's wheel (b688d5f): b1 +10.9-18.8 %, b2 +7.1-12.9, b4 (decode)
# +9.4-15.1, b8 (append kernel) +5.3, b32 +1.7-1.9. FAKV_FUSED_APPEND=1:
# always decode, 0: always the append kernel.
_FUSED_APPEND = {"1": True, "0": False}.get(os.environ.get("FAKV_FUSED_APPEND", ""))
# Decode steps that append (one query row, several splits, no window, ALiBi,
# softcap or padding, a scale > 0): the combine kernel appends the new keys
# and attends them (kernels/combine_new.py), before it waits for decode, which
# meanwhile reads the cache as a plain call does (new_keys 0, q rotated).
# H200, one token with rotary, paged 256 (bench/append_cost.py, session 15):
# b1 s8192 -2.3 to +0.6 % of the plain call (decode appending: +10.9 to
# +18.8 %), b8 +0.3 % (the append kernel first: +5.3 %).
# FAKV_COMBINE_APPENDS=0: the routes below instead.
_COMBINE_APPENDS = os.environ.get("FAKV_COMBINE_APPENDS", "1") != "0"
_FUSED_MAX_BLOCKS = 17        # key blocks per split (decode.py's share, APPEND's included), at most, of a
                              # call decode appends itself
_APPEND_REGISTERS = (24, 232)   # (producer, consumer) per thread: compiled at their average, 128
_MERGE_REGISTERS = True         # a merging decode (prepare.MERGE_SPLITS) rebalanced so too (plan_variants' mergeregs=0)
_DECODE_REGISTERS = None        # any other decode: no rebalancing (plan_variants' regs=P/C: (P, C))
_COUNTERS = {}          # (device, stream) -> the counters buffers made (the largest last; all kept)
_GRAPH_COUNTERS = []    # those made while a CUDA graph was captured: the graphs' own (zeroed at replay), kept


def _counters(q, n, on_gpu):
    """n zeroed int32 counters for decode's MERGE (each program that merges
    leaves its counter at 0): a fresh array on the CPU path, else the
    current stream's buffer, grown as needed (older ones stay alive: a CUDA
    graph may hold them)."""
    if not on_gpu:
        return T.full_int32((n,), 0, q)
    import torch
    if _capturing():                # (its zeros are written when the graph replays: never an eager call's)
        _GRAPH_COUNTERS.append(torch.zeros(max(n, 4096), dtype=torch.int32, device=q.device))
        return _GRAPH_COUNTERS[-1]
    kept = _COUNTERS.setdefault((q.device, prepare.current_stream(q)), [])
    if not kept or kept[-1].numel() < n:
        kept.append(torch.zeros(max(n, 4096), dtype=torch.int32, device=q.device))
    return kept[-1]


def _check_layout(name, t, copied=False):
    """A 4-D tensor's dims and strides: no empty dimension, the last one
    contiguous, no negative stride (numpy views) unless it is copied anyway."""
    _check(all(n >= 1 for n in t.shape), f"`{name}` has an empty dimension: shape {tuple(t.shape)}")
    _check(T.strides(t)[-1] == 1, f"`{name}` must be contiguous in its last dimension")
    _check(copied or min(T.strides(t)) >= 0,
           f"`{name}` has a negative stride {T.strides(t)}: the kernels read it in place; pass a copy")


def _raise_reported(errors):
    """On the CPU path: DataError if the kernel just launched reported bad
    data in `errors` (errors_for's array)."""
    code = int(errors[0])
    if code:
        raise DataError(runtime.describe(code, "the kernel"))


def _check(cond, message):
    if not cond:
        raise FakvError("flash_attn_with_kvcache: " + message)


def _capturing():
    import torch
    return torch.cuda.is_current_stream_capturing()


lengths_hint = None     # fakv.lengths_hint, loaded by the first call whose plan depends on the lengths (_ragged)


def _ragged(seqlens, capacity, on_gpu, capturing):
    """The lengths hint (lengths_hint.py): on the GPU from an earlier call's
    lengths, copied without waiting; on the CPU path from these. (Every call
    that asks comes here first: a warm start of another shape does not
    import the module.)"""
    global lengths_hint
    if lengths_hint is None:
        from . import lengths_hint as hint
        lengths_hint = hint
    if on_gpu:
        return lengths_hint.ragged(seqlens, capacity, capturing)
    return lengths_hint.ENABLED and lengths_hint.is_ragged(T.host(seqlens).tolist(), capacity)


class _ByLengths:
    """The prepared calls of a signature whose plan depends on the lengths
    hint: [the plan from shapes, the ragged one], each made by the first
    call that needs it (until then the call returns None: the slow path)."""
    __slots__ = ("calls", "capacity")

    def __init__(self, capacity):
        self.calls, self.capacity = [None, None], capacity

    def __call__(self, addresses, q, seqlens):
        capturing = _capturing()
        call = self.calls[lengths_hint.ragged(seqlens, self.capacity, capturing)]
        if call is None:
            return None
        out = call(addresses, q, seqlens)
        lengths_hint.copy_after(seqlens, capturing)          # (behind the call's kernels)
        return out


# Calls that read at most this much of the caches launch decode programmatically
# too (it may be scheduled while the kernel before it in the stream, say the
# previous call's combine, finishes; it waits for it before touching memory:
# lowering/DependentLaunch.cpp); not behind append.py's kernel (3 us slower
# once: docs/decisions.md). H200, bench/launch_modes.py: b1 s1024
# 6.66 -> 6.32 us, b1 s8192 12.18 -> 11.77, b8 s8192 (256 MiB) 67.70 -> 67.36;
# but b32 s8192 (1 GiB) 241.9 -> 246.9 (its programs wait in slots the
# previous call's still need).
_EARLY_DECODE_BYTES = 256 << 20


def _rotary_kind(rotary_dim, tile):
    """The kernels' ROTARY: 0 (none), 1, or 2 when every channel of the
    HEAD_DIM tile is rotated (rotary_dim == tile: NeoX's partners and angles
    are then one strided load each; kernels/append.py's rotated_rows)."""
    return 0 if rotary_dim <= 0 else 2 if rotary_dim == tile else 1


def _on_device_of(q, t):
    """Whether t is on q's device (CUDA's index included)."""
    return T.device(t) == T.device(q) and T.device_index(t) == T.device_index(q)


def _check_contents(seqlens, block_table, cache_batch_idx, batch, capacity, page_size, num_pages,
                    cache_batch, seqlen_new=0, leftpad=None, rotary_rows=0, q_span=0, picked=False, window_left=-1):
    """The host checks of the data (FAKV_CHECK_DATA; always on the CPU
    path unless it is 0): reads the tensors on the host. A paged cache too
    small for cache_seqlens + the new keys raises FlashAttention's message.
    picked: block_table holds the rows cache_batch_idx picked (a paged
    cache's cache_batch_idx), sequence i's row i. window_left: a sliding
    window's left bound (-1: none), its first query at row q_span before
    the last key."""
    import numpy as np
    lens = None if seqlens is None else T.host(seqlens).astype("int64")
    if lens is not None and lens.size:
        bad = np.nonzero(lens < 0)[0]
        if bad.size:
            r = int(bad[0])
            raise DataError(f"flash_attn_with_kvcache: cache_seqlens[{r}] = {int(lens[r])} is outside "
                            f"[0, {capacity}]; cache_seqlens must not be negative")
        total = lens + seqlen_new
        if int(total.max()) > capacity:
            r = int(np.argmax(total))
            raise capacity_error(r, int(lens[r]), seqlen_new, capacity, block_table is not None)
    if rotary_rows and lens is not None and lens.size and int(lens.max()) + q_span > rotary_rows:
        r = int(np.argmax(lens))
        raise DataError(f"flash_attn_with_kvcache: rotary_cos/rotary_sin have {rotary_rows} rows; q is rotated at "
                        f"positions up to cache_seqlens[{r}] + {q_span - 1} = {int(lens[r]) + q_span - 1}")
    if leftpad is not None and lens is not None:
        pads = T.host(leftpad).astype("int64")
        bad = np.nonzero((pads < 0) | (pads > lens + seqlen_new))[0]
        if bad.size:
            r = int(bad[0])
            raise DataError(f"flash_attn_with_kvcache: cache_leftpad[{r}] = {int(pads[r])} is outside "
                            f"[0, cache_seqlens[{r}] + seqlen_new = {int(lens[r] + seqlen_new)}]")
    if cache_batch_idx is not None:
        rows = T.host(cache_batch_idx)
        bad = np.nonzero((rows < 0) | (rows >= cache_batch))[0]
        if bad.size:
            r = int(bad[0])
            raise DataError(f"flash_attn_with_kvcache: cache_batch_idx[{r}] = {int(rows[r])}: cache_batch_idx "
                            f"entries must be in [0, {cache_batch}) "
                            f"({'block_table' if picked else 'the cache'}'s rows)")
    if block_table is not None and lens is not None:
        cols = np.arange(block_table.shape[1])[None, :]
        used = cols < ((lens + seqlen_new + page_size - 1) // page_size)[:, None]
        if leftpad is not None:          # (pages wholly before the padding, and before new rows, are not used)
            used &= cols >= (np.minimum(pads, lens) // page_size)[:, None]
        if window_left >= 0:             # (nor those wholly before every query's window, and before new rows:
            first = np.maximum(lens + seqlen_new - q_span - window_left, 0)      # pages freed behind it)
            used &= cols >= (np.minimum(first, lens) // page_size)[:, None]
        entries = T.host(block_table)
        bad = used & ((entries < 0) | (entries >= num_pages))
        if bad.any():
            r, c = (int(x[0]) for x in np.nonzero(bad))
            row = f"{int(T.host(cache_batch_idx)[r])} (cache_batch_idx[{r}])" if picked else r
            past = " (past cache_leftpad)" if leftpad is not None else ""
            past += " (from the window's first key's page)" if window_left >= 0 else ""
            raise DataError(f"flash_attn_with_kvcache: block_table[{row}, {c}] = {int(entries[r, c])}: "
                            f"block_table entries used by cache_seqlens{past} must be in [0, {num_pages})")


def _attention(decode, combine, q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens,
               cache_batch_idx, cache_leftpad, block_table, softmax_scale, causal, window_size, softcap,
               rotary_interleaved, alibi_slopes, num_splits, return_softmax_lse):
    # Docstring: api._DOC. Checks every argument and plans; runs the CPU
    # path through the JIT, or prepares the GPU call (a PreparedCall) and keeps it for
    # calls of the same signature.
    kernels, given_seqlens = (decode, combine), cache_seqlens

    # ---- shapes, dtypes, devices --------------------------------------------------------------
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("k", k), ("v", v),
                    ("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin), ("cache_seqlens", cache_seqlens),
                    ("cache_batch_idx", cache_batch_idx), ("cache_leftpad", cache_leftpad),
                    ("block_table", block_table), ("alibi_slopes", alibi_slopes)):
        _check(not T.is_array(t) or T.whole_elements(t),
               f"`{name}` has strides of {tuple(getattr(t, 'strides', ()))} bytes, not whole elements of "
               f"{getattr(t, 'itemsize', 0)} bytes (a structured array's field?); pass a copy")
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _check(T.is_array(t), f"`{name}` must be a torch.Tensor (or a numpy array on the CPU path)")
        _check(T.device(t) in ("cuda", "cpu"), f"`{name}` must be on a CUDA device or the CPU, got {T.device(t)}")
        _check(len(t.shape) == 4, f"`{name}` must be 4-D, got shape {tuple(t.shape)}")
        _check(T.dtype(t) in _DTYPES, f"`{name}` must be float16 or bfloat16, got {t.dtype}")
        _check(t.shape[3] >= 1, f"`{name}` has head_dim 0")
        _check_layout(name, t, copied=name == "q")
    _check(T.dtype(k_cache) == T.dtype(q) and T.dtype(v_cache) == T.dtype(q),
           f"q, k_cache and v_cache must share one dtype, got {q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    _check(T.device(k_cache) == T.device(q) and T.device(v_cache) == T.device(q)
           and T.device_index(k_cache) == T.device_index(q) and T.device_index(v_cache) == T.device_index(q),
           "q, k_cache and v_cache must be on one device")
    _check(tuple(k_cache.shape) == tuple(v_cache.shape),
           f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} must have one shape")
    _check(T.strides(k_cache) == T.strides(v_cache),
           f"k_cache and v_cache must have the same strides (fakv reads both caches with one set of strides), got "
           f"{tuple(T.strides(k_cache))} and {tuple(T.strides(v_cache))} elements")
    batch, seqlen_q, heads, head_dim = q.shape
    kv_heads = k_cache.shape[2]
    _check(seqlen_q >= 1, "seqlen_q must be at least 1")
    _check(k_cache.shape[3] == head_dim, f"head_dim of q ({head_dim}) and of the cache ({k_cache.shape[3]}) differ")
    _check(1 <= head_dim <= 256, f"head_dim must be at most 256, got {head_dim}")
    _check(kv_heads >= 1 and heads % kv_heads == 0, f"heads ({heads}) must be a multiple of kv heads ({kv_heads})")
    paged = block_table is not None
    copied_index = False                                  # block_table or cache_batch_idx copied: not kept
    if paged:
        _check(T.is_array(block_table) and T.dtype(block_table) == "i32" and len(block_table.shape) == 2
               and (block_table.shape[0] == batch or cache_batch_idx is not None),
               f"`block_table` must be an int32 tensor (batch={batch}, max_blocks) (with cache_batch_idx: "
               f"(rows, max_blocks), sequence i's row cache_batch_idx[i])")
        _check(_on_device_of(q, block_table), "`block_table` must be on q's device")
        if block_table.shape[1] > 1 and T.strides(block_table)[1] != 1:
            block_table, copied_index = T.contiguous(block_table), True   # (FlashAttention's maybe_contiguous)
        num_pages, page_size = k_cache.shape[0], k_cache.shape[1]
        capacity = block_table.shape[1] * page_size
    else:
        _check(cache_batch_idx is not None or k_cache.shape[0] >= batch,
               f"k_cache holds {k_cache.shape[0]} sequences, q has {batch}")
        num_pages, page_size = k_cache.shape[0], k_cache.shape[1]
        capacity = page_size
    # Lengths are int32 in the kernels, with headroom for a block's or a split's rounding up (decode.py's
    # `cached + BLOCK_N - 1`); offsets within one sequence's q, out, k and v too (a sequence's: kernels/*.py take
    # the batch's in int64).
    _check(capacity <= _MAX_CAPACITY, f"a sequence's cache holds {capacity} rows; at most {_MAX_CAPACITY} = "
                                      f"2**31 - 256 (int32 lengths)")
    _check(batch * seqlen_q * heads <= _MAX_CAPACITY, f"q holds {batch * seqlen_q * heads} query rows (batch x "
                                                      f"seqlen_q x heads); at most {_MAX_CAPACITY} = 2**31 - 256 "
                                                      f"(int32 offsets of the LSE)")
    _check(seqlen_q * heads * head_dim < 2 ** 31, f"q holds {seqlen_q * heads * head_dim} elements a sequence "
                                                  f"(seqlen_q x heads x head_dim); at most 2**31 - 1 (int32 offsets "
                                                  f"within a sequence)")

    on_gpu = T.device(q) == "cuda"
    mode = prepare.check_data()
    host_checks = (mode == 1) if on_gpu else (mode != 0)
    seqlens_int = cache_seqlens is None or type(cache_seqlens) is int
    if cache_seqlens is None:
        cache_seqlens = capacity
    if seqlens_int:
        _check(0 <= cache_seqlens <= capacity,
               f"cache_seqlens ({cache_seqlens}) must be in [0, {capacity}] (the cache's rows)")
        seqlens = T.full_int32((batch,), cache_seqlens, q)
    else:
        _check(T.is_array(cache_seqlens) and T.dtype(cache_seqlens) == "i32",
               f"`cache_seqlens` must be an int or a contiguous int32 tensor ({batch},)")
        _check(tuple(cache_seqlens.shape) == (batch,),
               f"`cache_seqlens` must have shape ({batch},) (one length per sequence), got "
               f"{tuple(cache_seqlens.shape)}")
        _check(batch <= 1 or T.strides(cache_seqlens)[0] == 1,
               f"`cache_seqlens` must be a contiguous int32 tensor ({batch},), got strides "
               f"{T.strides(cache_seqlens)}")
        _check(_on_device_of(q, cache_seqlens), "`cache_seqlens` must be on q's device")
        seqlens = cache_seqlens

    # ---- new keys and values, rotary, left padding ---------------------------------------------
    seqlen_new, copied_kv = 0, False
    _check((k is None) == (v is None), "`k` and `v` are given together (the keys and values to append)")
    if k is not None:
        for name, t in (("k", k), ("v", v)):
            _check(T.is_array(t) and len(t.shape) == 4 and tuple(t.shape[:1]) == (batch,)
                   and tuple(t.shape[2:]) == (kv_heads, head_dim),
                   f"`{name}` must be ({batch}, seqlen_new, {kv_heads}, {head_dim}), got "
                   f"{tuple(getattr(t, 'shape', ()))}")
            _check(T.dtype(t) == T.dtype(q), f"`{name}` must have q's dtype ({q.dtype}), got {t.dtype}")
            _check(_on_device_of(q, t), f"`{name}` must be on q's device")
            _check_layout(name, t, copied=True)
        _check(tuple(k.shape) == tuple(v.shape), "`k` and `v` must have one shape")
        if T.strides(k) != T.strides(v) or min(T.strides(k) + T.strides(v)) < 0:
            k, v = T.contiguous(k), T.contiguous(v)   # append.py takes one set of strides (new rows: cheap)
            copied_kv = True
        for name, t in (("k_cache", k_cache), ("v_cache", v_cache)):
            _check(T.writable(t), f"`{name}` is read-only; `k` and `v` are appended into it in place")
            _check(all(st != 0 for st, n in zip(T.strides(t), t.shape) if n > 1),
                   f"`{name}` has a zero stride {T.strides(t)} (a broadcast): the rows appended into it would "
                   f"overwrite each other; pass a cache of its own memory")
        seqlen_new = k.shape[1]
        if _sequence_span(k) >= 2 ** 31:      # (views whose strides reach further: compact copies)
            k, v = T.contiguous(k), T.contiguous(v)
            copied_kv = True
        _check(seqlen_new * kv_heads * head_dim < 2 ** 31,
               f"`k` and `v` hold {seqlen_new * kv_heads * head_dim} elements a sequence (seqlen_new x kv heads x "
               f"head_dim); at most 2**31 - 1 (int32 offsets within a sequence)")
        _check(1 <= seqlen_new <= capacity, f"`k` holds {seqlen_new} new keys; a sequence's cache holds "
                                            f"{capacity} (FlashAttention: at most the cache's seqlen)")
    _check((rotary_cos is None) == (rotary_sin is None), "`rotary_cos` and `rotary_sin` are given together")
    rotary_dim = 0
    if rotary_cos is not None:
        for name, t in (("rotary_cos", rotary_cos), ("rotary_sin", rotary_sin)):
            _check(T.is_array(t) and len(t.shape) == 2 and T.dtype(t) in ("f16", "bf16", "f32"),
                   f"`{name}` must be a 2-D tensor (seqlen_ro, rotary_dim / 2) of float32, float16 or bfloat16 "
                   f"(got {T.dtype(t) if T.is_array(t) else type(t).__name__}"
                   f"{', shape ' + str(tuple(t.shape)) if T.is_array(t) else ''})")
            _check(_on_device_of(q, t), f"`{name}` must be on q's device")
            _check(t.shape[1] <= 1 or T.strides(t)[1] == 1, f"`{name}` must be contiguous in its last dimension")
            _check(min(T.strides(t)) >= 0, f"`{name}` has a negative stride; pass a copy")
        _check(tuple(rotary_cos.shape) == tuple(rotary_sin.shape) and T.strides(rotary_cos) == T.strides(rotary_sin)
               and T.dtype(rotary_cos) == T.dtype(rotary_sin),
               "`rotary_cos` and `rotary_sin` must have one shape, dtype and strides")
        rotary_dim = 2 * rotary_cos.shape[1]
        _check(rotary_dim <= head_dim, f"rotary_dim (2 * rotary_cos.shape[1] = {rotary_dim}) must be at most "
                                       f"head_dim ({head_dim})")
        _check(k is not None,
               "rotary_cos / rotary_sin rotate the new keys: give `k` and `v` too (FlashAttention's rule)")
        _check(rotary_dim == 0 or rotary_cos.shape[0] >= capacity,
               f"rotary_cos / rotary_sin: cos/sin seqlen ({rotary_cos.shape[0]}) must be at least the seqlen of "
               f"the KV cache ({capacity})")
    for name, flag in (("rotary_interleaved", rotary_interleaved), ("causal", causal),
                       ("return_softmax_lse", return_softmax_lse)):
        _check(prepare.is_flag(flag), f"`{name}` must be a bool, got {flag!r}")
    # (as bools from here: a 0-d array is not hashable, and the plan is cached by its arguments)
    rotary_interleaved, causal, return_softmax_lse = bool(rotary_interleaved), bool(causal), bool(return_softmax_lse)
    if cache_leftpad is not None:
        _check(T.is_array(cache_leftpad) and T.dtype(cache_leftpad) == "i32"
               and tuple(cache_leftpad.shape) == (batch,) and (batch <= 1 or T.strides(cache_leftpad)[0] == 1),
               f"`cache_leftpad` must be a contiguous int32 tensor ({batch},)")
        _check(_on_device_of(q, cache_leftpad), "`cache_leftpad` must be on q's device")
    _check(k is None or given_seqlens is not None, "`cache_seqlens` must be given with `k` and `v`: the rows "
                                                   "they are appended at (FlashAttention's rule)")
    if seqlens_int and cache_seqlens + seqlen_new > capacity:    # known here: raised now, not reported
        raise capacity_error(0, cache_seqlens, seqlen_new, capacity, paged)

    # ---- cache_batch_idx, softcap, window_size, alibi_slopes -------------------------------------
    batch_idx = seqlens                                   # any int32 tensor when unused
    table_rows = None                                     # block_table's own rows, when cache_batch_idx picks them
    if cache_batch_idx is not None:
        _check(T.is_array(cache_batch_idx) and T.dtype(cache_batch_idx) == "i32"
               and tuple(cache_batch_idx.shape) == (batch,), f"`cache_batch_idx` must be an int32 tensor ({batch},)")
        _check(_on_device_of(q, cache_batch_idx), "`cache_batch_idx` must be on q's device")
        if batch > 1 and T.strides(cache_batch_idx)[0] != 1:
            cache_batch_idx, copied_index = T.contiguous(cache_batch_idx), True   # (as FlashAttention copies it)
        batch_idx = cache_batch_idx
        if paged:     # FlashAttention 3's: sequence i reads and appends through block_table's row cache_batch_idx[i]
            table_rows = block_table.shape[0]
            _check(batch == 0 or table_rows >= 1, "`block_table` has no rows for cache_batch_idx to pick")
            # Gathered on q's device (one small copy a call; such calls are not kept by the fast path): an index
            # outside the table gives a row of -1, which the kernels report as a block-table entry outside the
            # cache (the host checks refuse the index itself).
            block_table, batch_idx = T.rows_of(block_table, cache_batch_idx), seqlens
    has_batch_idx = cache_batch_idx is not None and table_rows is None      # (decode's BATCH_IDX: contiguous rows)
    cap = as_float32(softcap) if isinstance(softcap, numbers.Real) and not isinstance(softcap, bool) else None
    # (decode divides by it in float32: a cap whose reciprocal is past float32's range made 0 * inf = NaN)
    _check(cap is not None and math.isfinite(cap) and cap >= 0 and (cap > 0) == (softcap > 0)
           and (cap == 0 or math.isfinite(as_float32(1 / cap))),
           f"`softcap` must be a finite number >= 0 that float32 holds (0, or 2.94e-39 to 3.4e38), got {softcap!r}")
    # (cap: as the kernel gets it, in float32; the key keeps the value given)
    # FlashAttention 2's normalisation: causal is the window (left, 0); a
    # bound of at least the cache's capacity is no bound; "causal" is then
    # (unbounded, 0), whatever `causal` said (it selects ALiBi's causal form);
    # a left-only window gets the capacity as its right bound.
    left, right = (-1 if w < 0 or w >= capacity else w for w in _window_pair(window_size))
    if causal:
        right = 0
    fa_causal = left < 0 and right == 0
    if left >= 0 and right < 0:
        right = capacity
    q_rows = fa_causal or (left, right) != (-1, -1)       # rotary: q at cache_seqlens + i (FlashAttention)
    # A right bound of seqlen_q or more lets every query see its last key: the kernel gets at most seqlen_q, so
    # that a query's position plus the bound stays within int32 (a capacity's bound wrapped past 2**31).
    right = min(right, seqlen_q)
    _check((left, right) == (-1, -1) or fa_causal or capacity + seqlen_q + 128 < 2 ** 31,
           f"a window over a cache of {capacity} rows and {seqlen_q} queries: positions past int32 (at most "
           f"{2 ** 31 - 129} rows and queries together)")
    slopes, slopes_stride = None, 0
    if alibi_slopes is not None:
        _check(T.is_array(alibi_slopes) and T.dtype(alibi_slopes) == "f32"
               and tuple(alibi_slopes.shape) in ((heads,), (batch, heads)),
               f"`alibi_slopes` must be a float32 tensor ({heads},) or ({batch}, {heads})")
        _check(_on_device_of(q, alibi_slopes), "`alibi_slopes` must be on q's device")
        _check(T.strides(alibi_slopes)[-1] == 1, "`alibi_slopes` must be contiguous in its last dimension")
        slopes = alibi_slopes
        slopes_stride = T.strides(alibi_slopes)[0] if len(alibi_slopes.shape) == 2 else 0
    # decode.py's flags for this call (plan() gives those of a call without
    # these options). A one-query causal call stays causal with ALiBi, as in
    # FlashAttention: its causal bias, slope * key, shifts the LSE.
    # A variant's decode (with_kernels, $FAKV_KERNELS) is told CAUSAL whenever the call is causal: the mask it
    # writes there need not be a no-op for one query row, as fakv's is.
    variant_decode, variant_combine = decode is not None or _replaced("decode"), \
        combine is not None or _replaced("combine")
    extras = dict(BATCH_IDX=has_batch_idx, SOFTCAP=cap > 0, ALIBI=slopes is not None,
                  WINDOW=(left, right) != (-1, -1) and not fa_causal,
                  CAUSAL=fa_causal and (seqlen_q > 1 or slopes is not None or variant_decode))
    _check(isinstance(num_splits, numbers.Integral) and not isinstance(num_splits, bool),
           f"`num_splits` must be an int, got {num_splits!r}")
    _check(softmax_scale is None or (isinstance(softmax_scale, numbers.Real) and not isinstance(softmax_scale, bool)),
           f"`softmax_scale` must be a number or None, got {softmax_scale!r}")
    scale = 1.0 / math.sqrt(head_dim) if softmax_scale is None else as_float32(softmax_scale)
    _check(math.isfinite(scale), f"`softmax_scale` must be finite in float32 (|scale| <= 3.4e38), got "
                                 f"{softmax_scale!r}")
    # decode.py scales the scores before the masks for a scale <= 0 (as the kernel gets it: a positive scale below
    # float32's least is 0), with ALiBi: its slopes need not be divided by the scale (slope / scale past
    # float32's range made the scores -inf or NaN), and for a scale whose product with log2(e), which the online
    # softmax folds in otherwise, float32 cannot hold (above 2.36e38: every row NaN).
    extras["PRESCALE"] = (scale <= 0 or slopes is not None
                          or not math.isfinite(as_float32(scale * 1.4426950408889634)))
    num_sms, l2, gbps = T.device_properties(q)
    # Planned on the cache's capacity, as FlashAttention does (no data needed):
    # each program stops at its sequence's length.
    # (A variant's combine runs: decode never merges its splits itself then.)
    cluster = _CLUSTER_SPLITS if (on_gpu or compile_only()) and k is None and not variant_combine else False
    p = plan(batch, seqlen_q, heads, kv_heads, head_dim, T.dtype(q), paged, page_size, capacity, causal,
             int(num_splits), num_sms, l2, appending=k is not None, cluster=cluster, memory_gbps=gbps)
    capturing = on_gpu and _capturing()
    # A plan that depends on whether the lengths are ragged (a tensor's): from the lengths hint.
    by_lengths = p["by_lengths"] and not seqlens_int
    if by_lengths and _ragged(seqlens, capacity, on_gpu, capturing):
        p = plan(batch, seqlen_q, heads, kv_heads, head_dim, T.dtype(q), paged, page_size, capacity, causal,
                 int(num_splits), num_sms, l2, ragged=True, cluster=cluster, memory_gbps=gbps)
    # A decode step that appends: combine appends and attends the new keys if the plain call has splits. Not
    # with a variant's decode or combine (with_kernels, $FAKV_KERNELS): combine_new.py scores the new keys
    # without its score_mod, and runs in place of its combine.
    combine_appends = (k is not None and seqlen_q == 1 and _COMBINE_APPENDS and not variant_decode
                       and not variant_combine
                       and cache_leftpad is None
                       and not any(extras[f] for f in ("WINDOW", "ALIBI", "SOFTCAP", "PRESCALE")))
    if combine_appends:
        plain = plan(batch, seqlen_q, heads, kv_heads, head_dim, T.dtype(q), paged, page_size, capacity, causal,
                     int(num_splits), num_sms, l2, memory_gbps=gbps)
        combine_appends = plain["num_splits"] > 1
        p = plain if combine_appends else p
    splits = p["num_splits"]

    if host_checks and not capturing:
        _check_contents(seqlens if not seqlens_int or seqlen_new or cache_leftpad is not None or paged else None,
                        block_table, cache_batch_idx, batch, capacity, page_size, num_pages,
                        k_cache.shape[0] if table_rows is None else table_rows,
                        seqlen_new, cache_leftpad, rotary_cos.shape[0] if rotary_dim else 0,
                        seqlen_q if q_rows else 1, picked=table_rows is not None,
                        window_left=left if extras["WINDOW"] else -1)

    if decode is None or combine is None:
        default_decode, default_combine = _lazy_kernels()
        decode, combine = decode or default_decode, combine or default_combine
    tile = p["decode"]["HEAD_DIM"]
    # Head dims up to 128, several short splits: decode appends and rotates itself (kernels/decode.py's APPEND;
    # its new keys rotated in registers, setmaxnreg giving the consumer more); else append.py's kernel first.
    fused = p["fused_append"] if _FUSED_APPEND is None else (k is not None and tile <= 128 and _FUSED_APPEND)
    fused = fused and not combine_appends
    # A kernel of one program per query head stays so (Lazy: packed); no row boxes where decode appends (ptxas
    # spilled 20 bytes with them, 16 without).
    dropped = [name for name, drop in (("pack_gqa", getattr(decode, "pack_gqa", 0) is None), ("row_boxes", fused))
               if drop]
    decode = decode.with_options(**{k: v for k, v in p["decode_options"].items() if k not in dropped})
    in_kernels = fused or combine_appends     # the new keys appended by decode or combine, not append.py first
    # The last split merges (through global memory); not when combine appends the new keys (it must run).
    merge = splits > 1 and prepare.MERGE_SPLITS and not p["cluster"] and not combine_appends and not variant_combine
    if fused or (merge and tile <= 128 and _MERGE_REGISTERS):  # (the merge's rounds of partials: registers)
        decode = decode.with_options(registers=_APPEND_REGISTERS)
    elif _DECODE_REGISTERS:
        decode = decode.with_options(registers=_DECODE_REGISTERS)
    errors = prepare.errors_for(q)
    # A call the fast path can repeat (not one whose block table is gathered or whose index tensors were copied:
    # the fast path would do neither).
    prepared = (k is None or (in_kernels and not copied_kv)) and table_rows is None and not copied_index
    if k is not None and not in_kernels:                  # append (and rotate) first: kernels/append.py
        _check(not on_gpu or batch <= 65535, f"a batch of {batch} sequences appending `k` / `v` on the GPU: at "
                                             f"most 65535 (the append kernel's grid axis z)")
        q_rot = T.empty(tuple(q.shape), T.dtype(q), q) if rotary_dim else q
        q_in = T.contiguous(q) if rotary_dim and _sequence_span(q) >= 2 ** 31 else q   # (append.py: int32 offsets)
        _append(q_in, k, v, k_cache, v_cache, q_rot, block_table, seqlens, batch_idx, rotary_cos, rotary_sin,
                errors, capacity, num_pages, page_size, paged, has_batch_idx, rotary_dim,
                bool(rotary_interleaved), q_rows, tile, on_gpu)
        q = q_rot
        rotary_dim = 0                                    # (q and the new keys are rotated: decode does not)
    copy_q = tuple(T.strides(q)) != (seqlen_q * heads * head_dim, heads * head_dim, head_dim, 1)
    q_c = T.contiguous(q) if copy_q else q                # out is written with q's strides
    qs, ks = T.strides(q_c), T.strides(k_cache)
    decode_args = [
        q_c, k_cache, v_cache, block_table if paged else seqlens, seqlens, None, None, None, None,
        qs[0], qs[1], qs[2], ks[0], ks[1], ks[2], T.strides(block_table)[0] if paged else 0,
        batch, seqlen_q, heads, kv_heads, head_dim, page_size, num_pages, scale,
        batch_idx, cap, left, right, slopes, slopes_stride, errors, capacity,
        seqlens if cache_leftpad is None else cache_leftpad, seqlen_new, seqlens]
    ns = T.strides(k) if fused else (0, 0, 0)
    decode_args += [k if fused else q_c, v if fused else q_c, *ns[:3], rotary_cos if rotary_dim else q_c,
                    rotary_sin if rotary_dim else q_c, T.strides(rotary_cos)[0] if rotary_dim else 0, rotary_dim,
                    rotary_cos.shape[0] if rotary_dim else 0, int(q_rows)]
    if merge:
        decode_args[34] = _counters(q, batch * heads * -(-seqlen_q // p["decode"]["SQ_BLOCK"]), on_gpu)
    if combine_appends:
        decode_args[33] = 0                               # decode reads the cache's old keys only
    merge_in = merge or p["cluster"] > 1                 # decode merges its own splits: no combine launch
    decode_consts = dict(p["decode"], **extras, LEFTPAD=cache_leftpad is not None, MERGE=p["cluster"] or merge,
                         APPEND=_APPEND_BLOCKS if fused else 0,
                         ROTARY=_rotary_kind(rotary_dim, tile), INTERLEAVED=rotary_dim > 0 and bool(rotary_interleaved))
    lse_shape = (batch, heads, seqlen_q)
    part_out = splits * batch * seqlen_q * heads * tile if splits > 1 and not p["cluster"] else 0
    part_lse = splits * batch * heads * seqlen_q if splits > 1 and not p["cluster"] else 0
    combine_args = [None, None, None, None, qs[0], qs[1], qs[2], splits, batch, seqlen_q, heads, head_dim]
    combine_consts, combine_grid, combine_slots = p["combine"], p["combine_grid"], None
    if combine_appends:
        combine, combine_args, combine_consts, combine_grid, combine_slots = _combine_appending(
            q_c, k, v, k_cache, v_cache, block_table if paged else seqlens, seqlens, batch_idx, rotary_cos,
            rotary_sin, errors, p, rotary_dim, bool(rotary_interleaved), paged, page_size, num_pages, capacity,
            has_batch_idx, scale)

    if not (on_gpu and T.is_torch(q)) or compile_only():
        # The CPU path (and compile-only runs): launched through the JIT.
        out = T.empty((batch, seqlen_q, heads, head_dim), T.dtype(q), q)
        lse = T.empty(lse_shape, "f32", q)
        out_part = T.empty((max(part_out, 1),), "f32", q)
        lse_part = T.empty((max(part_lse, 1),), "f32", q)
        decode_args[5:9] = [out, lse, out_part, lse_part]
        if slopes is None:
            decode_args[28] = lse
        combine_args[:4] = [out_part, lse_part, out, lse]
        if on_gpu or compile_only():                   # compile only: both kernels at once
            jobs = [(decode, decode_args, decode_consts)]
            jobs += [(combine, combine_args, combine_consts)] if splits > 1 and not merge_in else []
            prepare.specialise_all(jobs)
            return (out, lse) if return_softmax_lse else out
        decode[p["decode_grid"]](*decode_args, **decode_consts)
        if splits > 1 and not merge_in:
            combine[combine_grid](*combine_args, **combine_consts)
        _raise_reported(errors)                         # (the CPU path: on_gpu is False here)
        return (out, lse) if return_softmax_lse else out

    # The GPU: compile (decode and combine in parallel) and prepare the call.
    prepare.see_torch()
    combined = splits > 1 and not merge_in              # a combine launch after decode
    early = (k is None or in_kernels) and batch * capacity * kv_heads * head_dim * 4 <= _EARLY_DECODE_BYTES
    index = prepare.index_of(prepare.jobs_of(decode, decode_args, decode_consts, combine if combined else None,
                                             combine_args, combine_consts, q, copy_q))
    call = prepare.call(decode, decode_args, decode_consts, p["decode_grid"], combine if combined else None,
                        combine_args, combine_consts, combine_grid, q, lse_shape, part_out, part_lse,
                        return_softmax_lse, capacity, copy_q, seqlen_new, paged, early_decode=early,
                        combine_slots=combine_slots, index=index)
    found = prepare.key(kernels, q, k_cache, v_cache, given_seqlens, block_table, cache_batch_idx, alibi_slopes,
                        k, v, rotary_cos, rotary_sin, cache_leftpad, softmax_scale, causal, window_size, softcap,
                        rotary_interleaved, num_splits, return_softmax_lse)
    if found is None:                                    # an argument the key cannot hold: never reused
        found = (None, tuple(t.data_ptr() if T.is_torch(t) else 0 for t in (
            q, k_cache, v_cache, given_seqlens, block_table, cache_batch_idx, alibi_slopes, k, v, rotary_cos,
            rotary_sin, cache_leftpad)))
    # Kept for the fast path, unless FAKV_CHECK_DATA=1 (every call checked) or a merging call: it holds its
    # stream's counters, or a captured graph's, and the fast path's key does not tell a capture from an eager
    # call (a graph captured after an eager call took the eager counters: replayed beside eager calls, the two
    # raced on them).
    elif not host_checks and prepared and not merge:
        if by_lengths:                                   # the call of this hint, beside the other's
            switch = prepare.CALLS.get(found[0])
            if not isinstance(switch, _ByLengths):
                switch = _ByLengths(capacity)
                prepare.keep(found[0], switch, kernels)
            switch.calls[p["decode"]["ADAPTIVE"] > 0] = call
        else:
            prepare.keep(found[0], call, kernels)
            from . import recipes
            if recipes.ENABLED and kernels == (None, None) and k is None and not merge:
                recipes.store_call(
                    (q, k_cache, v_cache, given_seqlens, block_table, cache_batch_idx, alibi_slopes, k, v,
                     rotary_cos, rotary_sin, cache_leftpad),
                    (softmax_scale, causal, window_size, softcap, rotary_interleaved, num_splits, return_softmax_lse),
                    mode, decode, decode_args, decode_consts, p["decode_grid"], combine if combined else None,
                    combine_args, combine_consts, combine_grid, errors, index, lse_shape=list(lse_shape),
                    part_out=part_out, part_lse=part_lse, return_lse=bool(return_softmax_lse), capacity=capacity,
                    copy_q=bool(copy_q), paged=paged, early_decode=bool(early))
    if not prepared:                   # q: append.py's rotated copy; k and v: their copies (fused), when made
        addresses = list(found[1])
        addresses[0] = q.data_ptr()
        if in_kernels:
            addresses[7:9] = k.data_ptr(), v.data_ptr()
        if table_rows is not None:
            addresses[4] = block_table.data_ptr()         # (the rows cache_batch_idx picked)
        found = (None, tuple(addresses))
    out = call(found[1], q, given_seqlens)
    if by_lengths:
        lengths_hint.copy_after(seqlens, capturing)          # (behind the call's kernels)
    return out


# kernels/combine_new.py's pointer parameters in a PreparedCall's slot order (prepare.DECODE_SLOTS'): -1 for none.
_COMBINE_NEW_SLOTS = (4, 7, 8, 9, 10, 2, 3, 0, 1, 11, -1, 5, 6, 12, 13, -1)


def _combine_appending(q, k, v, k_cache, v_cache, table, seqlens, batch_idx, cos, sin, errors, p, rotary_dim,
                       interleaved, paged, page_size, num_pages, capacity, has_batch_idx, scale):
    """kernels/combine_new.py for a decode step that appends: (kernel, args
    (the first four, the partials and outputs, None), constexprs, grid,
    PreparedCall slots). Its programs take as many of a kv head's query heads
    as the plain combine's would, at most all of them (a divisor of the group)."""
    batch, _, heads, head_dim = q.shape
    group, tile = heads // k_cache.shape[2], p["combine"]["HEAD_DIM"]
    head_block = math.gcd(p["combine"]["HEAD_BLOCK"], group)
    qs, ns, ks = T.strides(q), T.strides(k), T.strides(k_cache)
    args = [None, None, None, None, q, k, v, k_cache, v_cache, table, seqlens, batch_idx,
            cos if rotary_dim else q, sin if rotary_dim else q, errors, qs[0], qs[2], ns[0], ns[1], ns[2],
            ks[0], ks[1], ks[2], T.strides(table)[0] if paged else 0, T.strides(cos)[0] if rotary_dim else 0,
            p["num_splits"], batch, heads, head_dim, k.shape[1], capacity, num_pages, rotary_dim,
            cos.shape[0] if rotary_dim else 0, scale]
    # New keys NEW_N at a time: a (heads, NEW_N, HEAD_DIM) f32 product of at most 8192 elements.
    new_n = max(1, min(16, _pow2(k.shape[1]), 8192 // (head_block * tile)))
    consts = dict(HEAD_DIM=tile, HEAD_BLOCK=head_block, MAX_SPLITS=p["combine"]["MAX_SPLITS"], GROUP=group,
                  NEW_N=new_n, PAGE_SIZE=page_size if paged else 0, BATCH_IDX=has_batch_idx,
                  ROTARY=_rotary_kind(rotary_dim, tile), INTERLEAVED=rotary_dim > 0 and interleaved)
    return (prepare.Lazy.get("combine_new", "combine_new"), args, consts, (heads // head_block, 1, batch),
            _COMBINE_NEW_SLOTS)


def _append(q, k, v, k_cache, v_cache, q_rot, block_table, seqlens, batch_idx, cos, sin, errors, capacity,
            num_pages, page_size, paged, has_batch_idx, rotary_dim, interleaved, q_rows, tile, on_gpu):
    """Launches kernels/append.py: k, v into the caches at cache_seqlens
    (rotated), q rotated into q_rot (when rotary_dim)."""
    batch, seqlen_q, heads, head_dim = q.shape
    seqlen_new = k.shape[1]
    qs, qrs, ns, cs = T.strides(q), T.strides(q_rot), T.strides(k), T.strides(k_cache)
    angles = cos if rotary_dim else seqlens              # any pointer when there is no rotary
    args = [q, k, v, k_cache, v_cache, q_rot, block_table if paged else seqlens, seqlens, batch_idx, angles,
            sin if rotary_dim else seqlens, errors, qs[0], qs[1], qs[2], qrs[0], qrs[1], qrs[2],
            ns[0], ns[1], ns[2], cs[0], cs[1], cs[2], T.strides(block_table)[0] if paged else 0,
            T.strides(cos)[0] if rotary_dim else 0, seqlen_q, seqlen_new, k.shape[2], head_dim, rotary_dim,
            page_size, num_pages, capacity, cos.shape[0] if rotary_dim else 0]
    grid = (max(seqlen_q if rotary_dim else 0, seqlen_new), heads, batch)
    _append_kernel()[grid](*args, HEAD_DIM=tile, PAGE_SIZE=page_size if paged else 0,
                           BATCH_IDX=has_batch_idx, APPEND=True, ROTARY=_rotary_kind(rotary_dim, tile),
                           INTERLEAVED=interleaved,
                           Q_ROWS=q_rows)
    if not on_gpu:
        _raise_reported(errors)


# What a plan reads besides a call's arguments, as this module was imported (from the environment): its
# constants and switches (the module's UPPER_CASE values) and every function and class it calls by name.
# Tests and benches patch them in process; recipes (recipes.py) are keyed by the environment's FAKV_*
# switches, so once any has differed from this in a process (patched(); _plan's cache may hold such plans
# after), that process writes and uses no recipe.
_AS_IMPORTED = {k: v for k, v in globals().items()
                if (k.lstrip("_")[:1].isupper() and isinstance(v, (bool, int, float, str, tuple, type(None))))
                or callable(v)}
ENV_AS_IMPORTED = cache.fakv_switches()


def patched():
    """Whether any of this module's constants, switches, functions or
    classes differs from (or is no longer) what it imported."""
    g, missing = globals(), object()
    for k, v in _AS_IMPORTED.items():
        now = g.get(k, missing)
        if now is not v and (type(now) is not type(v) or now != v):
            return True
    return False
