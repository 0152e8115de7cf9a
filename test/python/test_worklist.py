"""kernels/worklist.py's persistent decode: each program runs the key blocks of its work list (fakv.worklist), the
batch's blocks cut into equal runs, a sequence cut between programs run in parts and merged by the last to finish.
Through the CPU path against the float64 reference (FlashAttention's tolerance rule): ragged lengths with empty
and one-key sequences, sequences in up to eight parts, pages of 16 and 256 and a contiguous cache; and on the GPU
pipeline (compile-only, sm_90a): its loop pipelined and warp-specialised, K and V copied by TMA, the producer's
reads of its work list before it waits for a slot."""
import glob
import json
import math
import os

import ml_dtypes
import numpy as np
import pytest

import attention_ref as ref
from needs import needs_assembler

BF = ml_dtypes.bfloat16


def launch(kernel, q, k, v, table, lens, programs, page, cap, group, counters=None, cut=True):
    from fakv.worklist import MAX_PARTS, work_list
    b, _, h, d = q.shape
    work, flags, count = work_list(lens, programs, 64, cut, capacity=cap)
    out, lse, errors = np.zeros_like(q), np.zeros((b, h), np.float32), np.zeros(1, np.int32)
    parts = np.zeros((MAX_PARTS * b, 1, h, d), np.float32), np.zeros((MAX_PARTS * b, h), np.float32)
    counters = np.zeros(b * h, np.int32) if counters is None else counters
    kernel[(h, programs, 1)](
        q, k, v, table if page else lens, out, lse, *parts, counters, work, flags, count, work.shape[1], b,
        q.strides[0] // 2, q.strides[2] // 2, k.strides[0] // 2, k.strides[1] // 2, k.strides[2] // 2,
        table.strides[0] // 4 if page else 0, h, d, page or cap, k.shape[0], 1 / math.sqrt(d), errors,
        HEAD_DIM=d, BLOCK_N=64, GROUP=group, PAGE_SIZE=page, MAX_PARTS=MAX_PARTS)
    return out, lse, errors, counters


def run(page, lens, programs, hk=2, group=4, d=128, cap=None, seed=0, cut=True):
    from fakv.kernels.worklist import decode_worklist
    rng = np.random.default_rng(seed)
    b, h = len(lens), hk * group
    cap = cap or max(256, max(lens))
    q = rng.standard_normal((b, 1, h, d)).astype(BF)
    if page:
        pages = b * cap // page
        k, v = (rng.standard_normal((pages, page, hk, d)).astype(BF) for _ in range(2))
        table = rng.permutation(pages).astype(np.int32).reshape(b, -1)
    else:
        k, v = (rng.standard_normal((b, cap, hk, d)).astype(BF) for _ in range(2))
        table = None
    lens = np.asarray(lens, np.int32)
    out, lse, errors, counters = launch(decode_worklist, q, k, v, table, lens, programs, page, cap, group, cut=cut)
    keys, values = ref.gather(k, table, lens, page), ref.gather(v, table, lens, page)
    want, want_lse = ref.attention(q, keys, values, lens, False, 1 / math.sqrt(d))
    pt, _ = ref.attention(q, keys, values, lens, False, 1 / math.sqrt(d), dtype=BF)
    return out, lse, errors, counters, want, want_lse[:, :, 0], pt


@pytest.mark.parametrize("page,lens,programs", [(16, [256, 1, 0, 130, 64], 2), (256, [200, 256, 3, 65, 0, 128], 4),
                                                (0, [100, 0, 256, 17, 255], 3), (16, [64, 64, 64, 64], 1),
                                                (0, [256, 256, 10], 7), (0, [256, 10], 5), (16, [256, 200, 1], 9),
                                                (0, [512, 3], 9)])
@pytest.mark.parametrize("cut", [True, False])
def test_worklist_decode_on_the_cpu_path(page, lens, programs, cut):
    """Every sequence's output and LSE as FlashAttention's (an empty sequence: 0 and +inf), whichever programs
    run it or its parts; the merge counters back at 0; no bad data reported."""
    out, lse, errors, counters, want, want_lse, pt = run(page, lens, programs, cut=cut)
    ok, msg = ref.check(out, want, pt)
    assert ok, msg
    empty = np.isneginf(want_lse)
    assert np.all(np.isposinf(lse[empty])) and np.allclose(lse[~empty], want_lse[~empty], atol=2e-3)
    assert errors[0] == 0 and not counters.any()


def test_work_list_cuts_the_blocks_evenly():
    """Every sequence's blocks once, each part's first flagged FRESH and last LAST, its index and the number of
    parts in the flags; every program at most the even share of blocks, cut parts before whole sequences."""
    from fakv.worklist import FRESH, LAST, work_list
    lens = [4096, 1, 0, 130, 64, 2000, 3000, 65]
    work, flags, count = work_list(lens, 3, 64)
    total = 64 + 1 + 1 + 3 + 1 + 32 + 47 + 2
    assert count.sum() == total and count.max() == -(-total // 3) and count.min() >= total // 3 - 2
    seen = {}
    for p in range(3):
        whole = False
        for w, g in zip(work[p, :count[p]].tolist(), flags[p, :count[p]].tolist()):
            seen.setdefault(w >> 16, []).append((w % 65536, g))
            whole = whole or (g >> 5) % 16 == 1
            assert (g >> 5) % 16 == 1 or not whole, "a cut part after a whole sequence"
            assert g >> 9 == max(min(lens[w >> 16] - (w % 65536) * 64, 64), 0)
    for b, n in enumerate(lens):
        entries = seen[b]
        assert [i for i, _ in entries] == list(range(max(-(-n // 64), 1)))
        parts = (entries[0][1] >> 5) % 16
        firsts = [i for i, (_, g) in enumerate(entries) if g & FRESH]
        lasts = [i for i, (_, g) in enumerate(entries) if g & LAST]
        assert len(firsts) == len(lasts) == parts and firsts[0] == 0 and lasts[-1] == len(entries) - 1
        index = [(g >> 2) % 8 for _, g in entries]      # the part's: up by one at each FRESH, a LAST before it
        assert index[0] == 0 and all(index[i] == index[i - 1] + bool(entries[i][1] & FRESH)
                                     for i in range(1, len(entries)))
        assert all(bool(entries[i][1] & LAST) == bool(entries[i + 1][1] & FRESH) for i in range(len(entries) - 1))
    assert (seen[0][0][1] >> 5) % 16 == 2 and (seen[1][0][1] >> 5) % 16 == 1      # 4096 keys cut once; one key: whole


def test_cut_parts_run_before_whole_sequences():
    """Blocks 10, 2, 10 on two programs (11 each): program 0 holds sequence 0 whole and the first block of
    sequence 2, cut; it runs that part first (its merge then waits on program 1's part, not on the end of the
    call), then sequence 0. Program 1: sequence 2's other nine blocks (a cut part), then sequence 1."""
    from fakv.worklist import FRESH, LAST, work_list
    work, flags, count = work_list([640, 128, 640], 2, 64)
    assert count.tolist() == [11, 11]
    assert [w >> 16 for w in work[0, :11].tolist()] == [2] + [0] * 10
    assert [w >> 16 for w in work[1, :11].tolist()] == [2] * 9 + [1] * 2
    assert flags[0, 0] & (FRESH | LAST) == FRESH | LAST and (flags[0, 0] >> 5) % 16 == 2
    assert (flags[0, 1] >> 5) % 16 == 1 and (flags[1, 0] >> 2) % 8 == 1


def test_whole_lists_balance_whole_sequences():
    """cut=False: every sequence whole (one part) in one program, its blocks in order; the heaviest program no more
    than two blocks above the lower bound (the longest sequence or the even share) here."""
    from fakv.worklist import work_list
    rng = np.random.default_rng(3)
    for lens, programs in (([4096, 1, 0, 130, 64, 2000, 3000, 65], 3), (rng.integers(1, 4097, 128).tolist(), 33)):
        blocks = [max(-(-n // 64), 1) for n in lens]
        work, flags, count = work_list(lens, programs, 64, cut=False)
        owner = {}
        for p in range(programs):
            entries = work[p, :count[p]].tolist()
            assert all((g >> 5) % 16 == 1 for g in flags[p, :count[p]].tolist())
            for w in entries:
                assert owner.setdefault(w >> 16, p) == p
        assert sorted(owner) == list(range(len(lens))) and count.sum() == sum(blocks)
        assert count.max() <= max(max(blocks), -(-sum(blocks) // programs) + 2)


def test_moves_and_swaps_improve_on_lpt():
    """Lengths where longest-first alone leaves 7 blocks on one program (3 + 2 + 2 against 3 + 2): moves and
    swaps make it 6 and 6."""
    from fakv.worklist import _balanced
    blocks = [3, 3, 2, 2, 2]
    bins = _balanced(blocks, 2)
    assert sorted(sum(blocks[b] for b in seqs) for seqs in bins) == [6, 6]
    assert sorted(b for seqs in bins for b in seqs) == [0, 1, 2, 3, 4]


def test_eight_parts():
    """A sequence cut in MAX_PARTS (8) parts: indices 0-7 and the count 8 in the flags' fields."""
    from fakv.worklist import MAX_PARTS, work_list
    work, flags, count = work_list([8 * 64], MAX_PARTS, 64)
    assert count.tolist() == [1] * 8
    assert [((g >> 2) % 8, (g >> 5) % 16, g & 3) for g in flags[:, 0].tolist()] == [(k, 8, 3) for k in range(8)]


def test_work_list_refuses_what_it_cannot_encode_or_check():
    from fakv.worklist import work_list
    with pytest.raises(ValueError, match="parts"):
        work_list([64 * 100], 20, 64)
    with pytest.raises(ValueError, match="length 300 is outside"):
        work_list([10, 300], 2, 64, capacity=256)
    with pytest.raises(ValueError, match="length -1 is outside"):
        work_list([-1], 2, 64)
    with pytest.raises(ValueError, match="at least one sequence"):
        work_list([], 2, 64)
    with pytest.raises(ValueError, match="at most 32767 sequences, got 32768"):
        work_list([1] * (1 << 15), 2, 64)         # (a sequence's index: 15 bits of the work entry)


@needs_assembler
def test_worklist_decode_compiles_for_sm90a(tmp_path, monkeypatch, capfd):
    """Swapped, in pages of 256: a cubin whose K and V go by TMA (two tensor maps, boxes of 16 rows) in a ring of two stages of a
    64-key block each (shared memory), 256 threads (a producer and a consumer warpgroup) of at most 128 registers
    at launch; in the producer's loop the
    work list's entry and flags are read before the wait for a free slot."""
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FAKV_DUMP_IR", "1")
    from fakv.kernels.worklist import decode_worklist
    b, hk, group, d, page, cap = 5, 2, 4, 128, 256, 512
    q, k = np.zeros((b, 1, hk * group, d), BF), np.zeros((b * cap // page, page, hk, d), BF)
    table, lens = np.arange(b * cap // page, dtype=np.int32).reshape(b, -1), np.full(b, cap, np.int32)
    launch(decode_worklist.with_options(swap_ab=True), q, k, k, table, lens, 2, page, cap, group)
    kernels = [kern for f in glob.glob(os.path.join(tmp_path, "*.json"))
               for kern in json.load(open(f))["facts"]["kernels"]]
    assert [kern["name"] for kern in kernels] == ["decode_worklist"]
    kern = kernels[0]
    assert [(m["rows"], m["cols"]) for m in kern["tensormaps"]] == [(16, 64), (16, 64)]      # (row boxes)
    assert kern["threads"] == 256 and 2 * 2 * 64 * 128 * 2 <= kern["smem_bytes"] < 3 * 2 * 64 * 128 * 2
    dump = capfd.readouterr().err
    assert ".maxnreg 128" in dump[dump.index("// ptx of decode_worklist"):]     # two programs an SM by registers
    ir = dump[dump.index("// fakvgpu of decode_worklist"):dump.index("// llvm of decode_worklist")]
    producer = ir[ir.index("fakvgpu.warp_specialize"):]
    producer = producer[producer.index("scf.for"):producer.index("fakvgpu.async_paged_load")]
    wait = producer.index("fakvgpu.wait")          # (the entry and its flags: two reads, both before the wait)
    assert producer[:wait].count("fakv.load_scalar") >= 2, producer
