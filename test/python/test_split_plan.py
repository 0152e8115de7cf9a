"""fakv.interface.plan's split counts (num_splits=0): FlashAttention's
heuristic, then even shares: the count whose longest split reads the fewest
key blocks, the fewest splits among those, while every program still runs
at once (combine's too: it is launched early and waits in free slots); an
appending call counts the new keys' work on its last split. Combine takes
as few heads per program as fit beside decode."""
import math
import os
import subprocess
import sys

import pytest

from fakv.interface import _APPEND_BLOCKS, plan

L2 = 50 * 1024 * 1024


def blocks(seqlen, splits, block_n=32):
    """Key blocks of each split, as decode.py shares them out."""
    n = math.ceil(seqlen / block_n)
    per = -(-n // splits)
    return [max(0, min(per, n - s * per)) for s in range(splits)]


@pytest.mark.parametrize("batch,seqlen", [(1, 1024), (1, 2048), (1, 8192), (1, 32768), (2, 8192), (4, 8192)])
def test_even_shares(batch, seqlen):
    p = plan(batch, 1, 32, 8, 128, "bf16", True, 256, seqlen, False, 0, 132, L2)
    splits, block_n = p["num_splits"], p["decode"]["BLOCK_N"]
    shares = blocks(seqlen, splits, block_n)
    combine = math.prod(p["combine_grid"])
    assert splits * batch * 8 <= 2 * 132                    # one wave of decode programs: two per SM
    # combine's programs beside them where they fit (batch 1), else of at most 4 heads each (measured faster)
    assert splits * batch * 8 + combine <= 2 * 132 or p["combine"]["HEAD_BLOCK"] == 4
    # no split count that keeps decode in one wave has a shorter longest split
    assert max(shares) == min(max(blocks(seqlen, n, block_n)) for n in range(1, 2 * 132 // (batch * 8) + 1))
    fewer = blocks(seqlen, splits - 1, block_n)
    assert max(fewer) > max(shares)                         # one split fewer: a longer critical path


def test_batch_1_8k_keys():
    """b1 s8192 d128 (8 kv heads): 32 splits (measured faster than the heuristic's 29 of uneven shares, in
    session 6's 64-row form: 8 blocks of 32 keys each against 28 of 9 and one of 4; swapped: 4 blocks of 64)."""
    p = plan(1, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2)
    assert (p["num_splits"], p["combine"]["HEAD_BLOCK"], p["combine_grid"]) == (32, 4, (8, 1, 1))
    # Appending: 33 splits (the last one only the new keys) leave no slot for combine; 29 leave 32, one head per
    # combine program (H200: 12.8 us, 33 splits 14.0).
    p = plan(1, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2, appending=True)
    assert (p["num_splits"], p["combine"]["HEAD_BLOCK"], p["combine_grid"]) == (29, 1, (32, 1, 1))


@pytest.mark.parametrize("batch,seqlen,heads", [(1, 1024, 32), (1, 8192, 32), (8, 8192, 32), (1, 32768, 8)])
def test_fewest_heads_per_combine_program_that_fit(batch, seqlen, heads):
    p = plan(batch, 1, heads, 8, 128, "bf16", True, 256, seqlen, False, 0, 132, L2)
    decode = p["num_splits"] * batch * 8
    hb = p["combine"]["HEAD_BLOCK"]
    assert hb * p["combine"]["MAX_SPLITS"] * 128 <= 16384              # the combine tile's registers
    assert p["combine_grid"] == (math.ceil(heads / hb), 1, batch)
    if hb > 1:   # half the heads per program would not fit beside decode
        assert decode + math.ceil(heads / (hb // 2)) * batch > 2 * 132


@pytest.mark.parametrize("seqlen", [1024, 8192])
def test_appending_call_leaves_the_last_split_room(seqlen):
    """When decode appends (b1 s32768 does not: test_who_appends), its last split has room for the new keys: the
    longest program's work is a full share of cache blocks or the new keys' (_APPEND_BLOCKS), never both (the
    splits before the last may then read no block: at s1024 14 splits, 8 reading 2 blocks each; at s8192 29, 26)."""
    import importlib
    import re
    import types
    p = plan(1, 1, 32, 8, 128, "bf16", True, 256, seqlen, False, 0, 132, L2, appending=True)
    assert p["fused_append"]
    n, splits = math.ceil(seqlen / p["decode"]["BLOCK_N"]), p["num_splits"]
    assert (splits, n) == {1024: (14, 16), 8192: (29, 128)}[seqlen]
    # The shares as decode.py computes them: its two lines evaluated (a copy of them here could not fail).
    with open(importlib.import_module("fakv.kernels.decode").__file__) as f:
        source = f.read()
    per_split = re.search(r"^ *per_split = (.+?) *#", source, re.M).group(1)
    first_last = re.search(r"^ *first, last = (.+)$", source, re.M).group(1)
    at = dict(hi=n, lo=0, APPEND=_APPEND_BLOCKS, splits=splits, fl=types.SimpleNamespace(minimum=min))
    per = eval(per_split, at)
    shares = [max(0, last - first) for first, last in (eval(first_last, dict(at, per_split=per, split=s))
                                                        for s in range(splits))]
    assert sum(shares) == n and sum(1 for x in shares if x) == {1024: 8, 8192: 26}[seqlen]
    assert max(max(shares[:-1]), shares[-1] + _APPEND_BLOCKS) == max(per, _APPEND_BLOCKS)


def test_enough_programs_keep_one_split(monkeypatch, request):
    """A batch of enough programs keeps one split (FlashAttention's
    heuristic); with FAKV_ADAPTIVE_SPLITS=4, where they are one wave and the
    caches long, it is launched with 4 splits and ADAPTIVE (kernels/splits.py:
    one each unless the lengths turn out ragged). Beyond a wave, with short
    caches or a num_splits given: one split, no ADAPTIVE."""
    from fakv import interface
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", 0)       # (FAKV_ADAPTIVE_SPLITS=0: never)
    interface._plan.cache_clear()
    request.addfinalizer(interface._plan.cache_clear)
    p = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2)
    assert p["num_splits"] == 1 and p["decode"]["ADAPTIVE"] == 0 and p["decode_grid"] == (32, 32, 1)
    p = plan(8, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2)
    assert p["num_splits"] == 4 and p["decode"]["ADAPTIVE"] == 0
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", 4)
    interface._plan.cache_clear()
    p = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2)
    assert p["num_splits"] == 4 and p["decode"]["ADAPTIVE"] == 32 and p["decode_grid"] == (32, 32, 4)
    for args in ((32, 1024), (128, 8192), (65, 8192)):             # short caches; more than one wave
        p = plan(args[0], 1, 32, 8, 128, "bf16", True, 256, args[1], False, 0, 132, L2)
        assert p["num_splits"] == 1 and p["decode"]["ADAPTIVE"] == 0
    assert plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 1, 132, L2)["decode"]["ADAPTIVE"] == 0   # given
    p = plan(8, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2)
    assert p["num_splits"] == 4 and p["decode"]["ADAPTIVE"] == 0


def test_ragged_plan_by_the_lengths_hint(monkeypatch, request):
    """FAKV_ADAPTIVE_SPLITS unset: where ADAPTIVE would apply (one wave, long caches, up to 64 sequences, no
    num_splits given) the plan from shapes says it depends on the lengths ("by_lengths": one split), and
    ragged=True (the lengths hint) gives 4 splits with ADAPTIVE; elsewhere ragged changes nothing.
    FAKV_ADAPTIVE_SPLITS=n: n splits whatever the hint, =0: never; neither is by_lengths."""
    from fakv import interface
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", None)
    interface._plan.cache_clear()
    request.addfinalizer(interface._plan.cache_clear)
    shapes = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2)
    assert shapes["by_lengths"] and shapes["num_splits"] == 1 and shapes["decode"]["ADAPTIVE"] == 0
    p = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2, ragged=True)
    assert p["num_splits"] == 4 and p["decode"]["ADAPTIVE"] == 32 and p["decode_grid"] == (32, 32, 4)
    assert p["combine_grid"][2] == 32 and p["by_lengths"]
    for args in ((8, 8192, 0), (32, 1024, 0), (128, 8192, 0), (65, 8192, 0), (32, 8192, 1)):
        p = plan(args[0], 1, 32, 8, 128, "bf16", True, 256, args[1], False, args[2], 132, L2, ragged=True)
        assert not p["by_lengths"] and p["decode"]["ADAPTIVE"] == 0
        assert p == plan(args[0], 1, 32, 8, 128, "bf16", True, 256, args[1], False, args[2], 132, L2)
    appending = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2, appending=True, ragged=True)
    assert not appending["by_lengths"] and appending["decode"]["ADAPTIVE"] == 0     # (no new keys either)
    for args in ((32, 2, 128), (16, 1, 256)):      # (by the hint: one query row, head dims up to 128)
        p = plan(args[0], args[1], 32, 8, args[2], "bf16", True, 256, 16384, False, 0, 132, L2, ragged=True)
        assert not p["by_lengths"] and p["decode"]["ADAPTIVE"] == 0
    for forced, splits in ((4, 4), (0, 1)):
        monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", forced)
        interface._plan.cache_clear()
        for ragged in (False, True):
            p = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2, ragged=ragged)
            assert not p["by_lengths"] and p["num_splits"] == splits


@pytest.mark.parametrize("shape,stages", [
    ((32, 8192, 0), 2), ((32, 8192, 256), 2), ((32, 4096, 64), 2),      # one wave of 64-128-block programs
    ((32, 8192, 16), 3),                            # (pages of 16: one more, as before)
    ((8, 32768, 0), 2), ((8, 32768, 256), 2), ((8, 16384, 64), 2), ((4, 32768, 256), 2),   # split: 64-128 each
    ((8, 32768, 16), 3),                            # (pages of 16: one more)
    ((32, 32768, 0), 2), ((32, 32768, 16), 2), ((32, 16384, 64), 2),    # one wave of 129-512-block programs
    ((32, 65536, 0), 3), ((32, 65536, 16), 3),      # (more than 512 blocks: not measured)
    ((32, 1024, 0), 3),                             # one wave of 16-block programs
    ((128, 8192, 16), 3), ((128, 1024, 16), 3),     # (pages of 16)
    ((128, 8192, 0), 2), ((128, 32768, 256), 2), ((64, 8192, 64), 2),   # several waves, 16 blocks or more: two an SM
    ((128, 1024, 0), 2), ((128, 4096, 256), 2), ((128, 1024, 64), 2),
    ((128, 512, 0), 3),                             # (8 blocks: not measured)
    ((8, 8192, 0), 3), ((1, 8192, 256), 3)])        # splits of fewer blocks
def test_two_stages_where_measured_faster(shape, stages, monkeypatch, request):
    """A two-stage ring for swapped d128 calls of one wave of programs whose splits read 64-512 key blocks (split
    or not), one query row, pages of 16 one more up to 128 blocks; three elsewhere (interface._TWO_STAGES_WAVE,
    _LONG_TWO_STAGES), and under ragged plans' adaptive splits. Several waves of splits of 16 blocks or more,
    copied by TMA, two stages too, at two programs an SM (ctas_per_sm; interface._WAVES_TWO_STAGES: 16)."""
    from fakv import interface
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", None)     # (FAKV_ADAPTIVE_SPLITS unset)
    interface._plan.cache_clear()
    request.addfinalizer(interface._plan.cache_clear)
    batch, seqlen, page = shape
    p = plan(batch, 1, 32, 8, 128, "bf16", bool(page), page or seqlen, seqlen, True, 0, 132, L2)
    assert p["decode_options"].get("swap_ab") and p["decode_options"]["stages"] == stages
    several_waves = batch >= 64 and seqlen >= 1024 and page != 16
    assert p["decode_options"].get("ctas_per_sm", 0) == (2 if several_waves else 0)
    if several_waves:        # not for new keys, several query rows, other head dims (not measured there)
        for other in (plan(batch, 1, 32, 8, 128, "bf16", bool(page), page or seqlen, seqlen, True, 0, 132, L2,
                           appending=True),
                      plan(batch, 2, 32, 8, 128, "bf16", bool(page), page or seqlen, seqlen, True, 0, 132, L2),
                      plan(batch, 1, 32, 8, 256, "bf16", bool(page), page or seqlen, seqlen, True, 0, 132, L2)):
            assert "ctas_per_sm" not in other["decode_options"]
    mha = plan(8, 1, 32, 32, 128, "bf16", False, 8192, 8192, True, 0, 132, L2)
    assert mha["num_splits"] == 1 and mha["decode_options"]["stages"] == 2
    appending = plan(32, 1, 32, 8, 128, "bf16", False, 8192, 8192, True, 0, 132, L2, appending=True)
    assert appending["decode_options"]["stages"] == 3
    assert plan(32, 2, 32, 8, 128, "bf16", False, 8192, 8192, True, 0, 132, L2)["decode_options"]["stages"] == 3
    mha = plan(8, 1, 32, 32, 128, "bf16", True, 256, 16384, True, 0, 132, L2)      # 256 blocks a program
    assert mha["num_splits"] == 1 and mha["decode_options"]["stages"] == 2
    mha = plan(1, 1, 32, 32, 128, "bf16", False, 32768, 32768, True, 0, 132, L2)     # 8 splits of 64 blocks
    assert mha["num_splits"] == 8 and mha["decode_options"]["stages"] == 2
    ragged = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, L2, ragged=True)
    assert ragged["decode"]["ADAPTIVE"] and ragged["decode_options"]["stages"] == 3


def test_heads_first_unless_the_grid_overflows():
    """decode's grid is (heads, batch x query blocks, splits), packed on axis 0 (decode.py's own pack_gqa=0), so that
    a sequence's heads start together; (batch x query blocks, heads, splits), packed on axis 1, only where batch x
    query blocks would pass CUDA's 65535 on axis y."""
    p = plan(8, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2)
    assert p["decode"]["HEADS_FIRST"] and p["decode_grid"] == (32, 8, p["num_splits"]) and p["num_splits"] > 1
    assert "pack_gqa" not in p["decode_options"]
    p = plan(4, 64, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, L2)       # query blocks
    assert p["decode"]["HEADS_FIRST"] and p["decode_grid"] == (32, 4 * p["m_blocks"], p["num_splits"])
    assert p["m_blocks"] > 1
    p = plan(70000, 1, 32, 8, 128, "bf16", True, 256, 1024, False, 0, 132, L2)
    assert not p["decode"]["HEADS_FIRST"] and p["decode_grid"] == (70000, 32, 1)
    assert p["decode_options"]["pack_gqa"] == 1


def test_sequences_first_for_one_wave_of_contiguous_mha(monkeypatch):
    """One wave of programs over a contiguous MHA cache runs its sequences first (interface._SEQ_FIRST_MHA, as
    measured, one query row); in pages, with GQA, over several waves, for one sequence or several query rows
    (one query block: the docs said one row), heads first."""
    from fakv import interface
    mha = plan(8, 1, 32, 32, 128, "bf16", False, 0, 8192, True, 0, 132, L2)       # 256 programs: one wave
    assert not mha["decode"]["HEADS_FIRST"] and mha["decode_grid"] == (8, 32, 1)
    assert mha["decode_options"]["pack_gqa"] == 1
    for args in [(8, 1, 32, 32, 128, "bf16", True, 256, 8192),       # pages
                 (32, 1, 32, 8, 128, "bf16", False, 0, 8192),        # GQA
                 (32, 1, 32, 32, 128, "bf16", False, 0, 2048),       # 1024 programs: several waves
                 (1, 1, 32, 32, 128, "bf16", False, 0, 32768),       # one sequence
                 (8, 2, 32, 32, 128, "bf16", False, 0, 8192),        # two query rows (measured with one)
                 (8, 16, 32, 32, 128, "bf16", False, 0, 8192)]:
        p = plan(*args, True, 0, 132, L2)
        assert p["decode"]["HEADS_FIRST"], args
    monkeypatch.setattr(interface, "_SEQ_FIRST_MHA", False)
    interface._plan.cache_clear()
    try:
        assert plan(8, 1, 32, 32, 128, "bf16", False, 0, 8192, True, 0, 132, L2)["decode"]["HEADS_FIRST"]
    finally:
        monkeypatch.undo()
        interface._plan.cache_clear()


def test_longest_first_where_planned(monkeypatch, request):
    """LONGEST_FIRST (the batch size; heads first) only for batches of several waves, unsplit, over long caches,
    of at most 128 sequences and head dims up to 128, one query block, without new keys; FAKV_LONGEST_FIRST=0: never."""
    from fakv import interface
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", 0)
    interface._plan.cache_clear()
    request.addfinalizer(interface._plan.cache_clear)
    p = plan(128, 1, 32, 8, 128, "bf16", True, 256, 4096, False, 0, 132, L2)
    assert p["decode"]["LONGEST_FIRST"] == 128 and p["decode_grid"] == (32, 128, 1) and p["num_splits"] == 1
    assert p["decode_options"] == {"stages": 2, "swap_ab": True, "row_boxes": True, "ctas_per_sm": 2}
    assert plan(128, 1, 32, 8, 64, "bf16", False, 4096, 4096, False, 0, 132, L2)["decode"]["LONGEST_FIRST"] == 128
    off = [plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2),      # one wave
           plan(128, 1, 32, 8, 128, "bf16", True, 256, 1024, False, 0, 132, L2),     # short caches (32 blocks)
           plan(129, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2),     # more than 128 sequences
           plan(128, 1, 32, 8, 256, "bf16", True, 256, 8192, False, 0, 132, L2),     # head dim 256
           plan(128, 32, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, L2),     # 2 query blocks of 16
           plan(128, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2, appending=True),
           plan(128, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 2, 132, L2)]     # splits given
    for q in off:
        assert q["decode"]["LONGEST_FIRST"] == 0 and q["decode"]["HEADS_FIRST"], q
    monkeypatch.setattr(interface, "_LONGEST_FIRST", False)      # FAKV_LONGEST_FIRST=0
    interface._plan.cache_clear()
    assert plan(128, 1, 32, 8, 128, "bf16", True, 256, 4096, False, 0, 132, L2)["decode"]["LONGEST_FIRST"] == 0


def test_swapped_dots_where_planned(monkeypatch, request):
    """swap_ab (decode's dots as wgmmas of their transposes, key blocks of 64) by default for calls with fewer
    than 64 query rows per program, small ones too (new keys then attended a block at a time); the 64-row form
    (key blocks of 32 at head dim 128) otherwise; FAKV_SWAP_AB=1 / 0 forces it where it can (the default) / never.
    A small swapped call's splits may read a single block (two above head dim 128).
    The ring takes a fourth stage at pages of 16 only while it fits two programs per SM (or at head dims > 128)."""
    from fakv import interface
    request.addfinalizer(interface._plan.cache_clear)

    def form(*args, **kw):
        p = plan(*args, **kw)
        return p["decode"]["BLOCK_N"], p["decode_options"].get("swap_ab", False), p["decode_options"]["stages"]
    for setting in (None, True, False):
        monkeypatch.setattr(interface, "_SWAP_AB", setting)
        interface._plan.cache_clear()
        auto = setting is None
        assert form(1, 1, 32, 8, 128, "bf16", True, 256, 1024, True, 0, 132, L2) == (
            (64, True, 3) if setting or auto else (32, False, 3))                          # 8K keys: small too
        # b1 s1K: 16 splits of one swapped block (the 64-row form: 11 of 3 blocks of 32); d256: 8 of two (6 of 3)
        assert plan(1, 1, 32, 8, 128, "bf16", True, 256, 1024, True, 0, 132, L2)["num_splits"] == (
            16 if setting or auto else 11)
        assert plan(1, 1, 32, 8, 256, "bf16", True, 256, 1024, True, 0, 132, L2)["num_splits"] == (
            8 if setting or auto else 6)
        assert form(1, 1, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, L2) == (
            (64, True, 3) if setting or auto else (32, False, 3))
        assert form(128, 1, 32, 8, 128, "bf16", True, 16, 32768, True, 0, 132, L2) == (
            (64, True, 3) if setting or auto else (32, False, 4))                          # ring 4 x 32 KB: 3
        assert form(8, 1, 32, 8, 256, "bf16", True, 16, 32768, True, 0, 132, L2) == (
            (64, True, 3) if setting or auto else (64, False, 3))                          # head dim 256: 2 + 1
        assert form(32, 1, 32, 8, 64, "bf16", True, 16, 32768, True, 0, 132, L2)[1:] == (
            (True, 3) if setting or auto else (False, 4))                                 # swapped d64: no fourth
        assert form(32, 16, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, L2)[:2] == (32, False)  # 64 rows
        p = plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, L2, appending=True)
        assert (p["decode"]["BLOCK_N"], p["decode"]["NEW_N"], "swap_ab" in p["decode_options"]) == (
            (64, 64, True) if setting or auto else (32, 16, False))                        # new keys: a block


def test_who_appends():
    """decode appends the new keys itself (fused_append) when the call has several splits of at most
    _FUSED_MAX_BLOCKS key blocks each, up to head dim 128; kernels/append.py's kernel first otherwise (H200,
    bench/append_cost.py: b1 s8192 fused +12 to +20 %, b8 +11 to +15 % against +6 %, b32 +4 to +15 % against +2 %;
    session 14, the last split _APPEND_BLOCKS short: b4 +9 % against +12 %)."""
    from fakv.interface import _APPEND_BLOCKS, _FUSED_MAX_BLOCKS

    def fused(batch, seqlen, head_dim=128, splits=0):
        p = plan(batch, 1, 32, 8, head_dim, "bf16", True, 256, seqlen, True, splits, 132, L2, appending=True)
        per = -(-(math.ceil(seqlen / p["decode"]["BLOCK_N"]) + _APPEND_BLOCKS) // p["num_splits"])
        assert p["fused_append"] == (p["num_splits"] > 1 and per <= _FUSED_MAX_BLOCKS and head_dim <= 128)
        return p["fused_append"]
    assert fused(1, 8192) and fused(1, 1024) and fused(2, 8192) and fused(4, 8192) and fused(1, 32768)
    assert not fused(8, 8192) and not fused(32, 8192) and not fused(1, 8192, 256) and not fused(1, 8192, splits=1)
    assert not plan(1, 1, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, L2)["fused_append"]   # no new keys
    # The append kernel's calls keep the plain call's splits (the last split's allowance for the new keys is for
    # decode appending): b8 s8192, 4 splits of 32 blocks; b32 one split.
    for batch, seqlen in ((8, 8192), (32, 8192), (8, 32768)):
        args = (batch, 1, 32, 8, 128, "bf16", True, 256, seqlen, True, 0, 132, L2)
        assert not fused(batch, seqlen)
        assert plan(*args, appending=True)["num_splits"] == plan(*args)["num_splits"]


@pytest.mark.parametrize("batch,seqlen,d,splits", [(1, 1024, 128, 8), (1, 512, 128, 8), (1, 8192, 128, 8),
                                                   (8, 8192, 128, 4), (1, 1024, 64, 8)])
def test_cluster_plan(batch, seqlen, d, splits):
    """cluster=True (FAKV_CLUSTER_SPLITS on the GPU): at most 8 splits, as even as the plan's shares, all of a
    row in one cluster; the same plan otherwise where it already had 2 to 8."""
    p = plan(batch, 1, 32, 8, d, "bf16", True, 256, seqlen, False, 0, 132, L2, cluster=True)
    assert (p["num_splits"], p["cluster"]) == (splits, splits)
    plain = plan(batch, 1, 32, 8, d, "bf16", True, 256, seqlen, False, 0, 132, L2)
    assert plain["cluster"] == 0
    if plain["num_splits"] <= 8:
        assert plain["num_splits"] == splits
    # Every split of the cluster reads key blocks, equal shares (the rows' lengths are whole blocks here).
    shares = blocks(seqlen, p["num_splits"], p["decode"]["BLOCK_N"])
    assert min(shares) > 0 and max(shares) == min(shares), shares


def test_no_cluster_where_it_does_not_apply():
    """No cluster for one split, head dims above 128, calls that append, ragged (ADAPTIVE) plans, or more splits
    than a cluster holds (num_splits given)."""
    kw = dict(cluster=True)
    assert plan(32, 1, 32, 8, 128, "bf16", True, 256, 8192, False, 0, 132, L2, **kw)["cluster"] == 0    # one split
    assert plan(1, 1, 32, 8, 256, "bf16", True, 256, 1024, False, 0, 132, L2, **kw)["cluster"] == 0
    assert plan(1, 1, 32, 8, 128, "bf16", True, 256, 1024, False, 0, 132, L2, appending=True, **kw)["cluster"] == 0
    assert plan(1, 1, 32, 8, 128, "bf16", True, 256, 1024, False, 16, 132, L2, **kw)["cluster"] == 0
    assert plan(1, 1, 32, 8, 128, "bf16", True, 256, 1024, False, 4, 132, L2, **kw)["cluster"] == 4
    ragged = plan(32, 1, 32, 8, 128, "bf16", True, 256, 16384, False, 0, 132, L2, ragged=True, **kw)
    assert ragged["decode"]["ADAPTIVE"] and ragged["cluster"] == 0


def test_small_pages_gathered_on_large_caches(monkeypatch, request):
    """Pages smaller than a key block (16 keys; blocks of 64) are gathered (gather_pages) for swapped head-dim-128
    calls of one wave of programs whose splits read at most 128 blocks, reading at least _GATHER_BYTES of cache
    (b32 s8K, b8 s32K in 4 splits, MHA b8 s8K: 1 GiB); copied by a TMA box per page elsewhere: smaller calls (b8
    s8K, b1 s1K), longer splits (b32 s32K), several waves (b128 s8K), ragged plans' adaptive splits, other head
    dims. Pages of a block or more always go by TMA. FAKV_GATHER_PAGES=1 / 0: wherever pages are small / never."""
    from fakv import interface
    request.addfinalizer(interface._plan.cache_clear)

    def gathered(batch, seqlen, page, d=128, kv_heads=8, **kw):
        return plan(batch, 1, 32, kv_heads, d, "bf16", True, page, seqlen, False, 0, 132, L2, **kw)[
            "decode_options"].get("gather_pages", False)
    for setting in ("auto", True, False):
        monkeypatch.setattr(interface, "_GATHER_PAGES", setting)
        interface._plan.cache_clear()
        for batch, seqlen, kv_heads in ((32, 8192, 8), (8, 32768, 8), (8, 8192, 32)):
            assert gathered(batch, seqlen, 16, kv_heads=kv_heads) is (setting is not False)
        for batch, seqlen, d in ((8, 8192, 128), (1, 1024, 128), (32, 32768, 128), (128, 8192, 128),
                                 (32, 32768, 64), (8, 32768, 256)):
            assert gathered(batch, seqlen, 16, d) is (setting is True), (batch, seqlen, d)
        assert gathered(32, 8192, 64) is False and gathered(32, 8192, 256) is False
    monkeypatch.setattr(interface, "_GATHER_PAGES", "auto")
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", None)
    interface._plan.cache_clear()
    assert gathered(32, 8192, 16) and not gathered(32, 8192, 16, ragged=True)     # ragged: 4 adaptive splits
    assert not gathered(32, 8192, 16, appending=True)                             # (not measured)
    assert not plan(32, 2, 32, 8, 128, "bf16", True, 16, 8192, True, 0, 132, L2)["decode_options"].get(
        "gather_pages")                                                            # two query rows: likewise


def test_row_boxes_by_default_and_not_where_gathered(monkeypatch, request):
    """interface._ROW_BOXES (on unless FAKV_ROW_BOXES=0): decode's TMA copies in boxes of 16 rows (row_boxes),
    contiguous or paged, so that boxes past a sequence's last key read nothing; pages that are gathered stay
    gathered; head dims above 128 never (measured slower). FAKV_ROW_BOXES=0: never."""
    from fakv import interface
    request.addfinalizer(interface._plan.cache_clear)

    def options(batch, seqlen, paged, page):
        return plan(batch, 1, 32, 8, 128, "bf16", paged, page, seqlen, False, 0, 132, L2)["decode_options"]
    cells = [(32, 8192, False, 0), (32, 8192, True, 256), (32, 32768, True, 16), (1, 1024, True, 64)]
    for setting, expected in ((None, "True"), ("0", "False"), ("1", "True")):   # (as a new process reads it)
        env = {k: v for k, v in os.environ.items() if k != "FAKV_ROW_BOXES"}
        env.update({} if setting is None else {"FAKV_ROW_BOXES": setting})
        out = subprocess.run([sys.executable, "-c", "import fakv.interface as i; print(i._ROW_BOXES)"], env=env,
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == expected, (setting, out)
    monkeypatch.setattr(interface, "_ROW_BOXES", True)
    interface._plan.cache_clear()
    assert all(options(*cell).get("row_boxes") is True for cell in cells)
    assert "row_boxes" not in plan(8, 1, 32, 8, 256, "bf16", True, 256, 32768, False, 0, 132, L2)["decode_options"]
    monkeypatch.setattr(interface, "_ROW_BOXES", False)
    interface._plan.cache_clear()
    assert not any("row_boxes" in options(*cell) for cell in cells)
    monkeypatch.setattr(interface, "_ROW_BOXES", True)
    interface._plan.cache_clear()
    gathered = options(32, 8192, True, 16)                  # (one wave, 1 GiB: pages of 16 gathered)
    assert gathered.get("gather_pages") is True and "row_boxes" not in gathered


@pytest.mark.parametrize("shape,stages,ctas", [
    ((8, 8192, 0), 2, 0), ((8, 8192, 64), 2, 0), ((8, 8192, 256), 2, 0),      # one wave (4 splits)
    ((32, 32768, 0), 2, 0), ((32, 32768, 256), 2, 0), ((1, 32768, 0), 2, 0), ((32, 8192, 0), 2, 0),
    ((128, 8192, 0), 2, 2), ((128, 8192, 256), 2, 2), ((128, 1024, 0), 2, 2),  # several waves: two an SM
    ((8, 8192, 16), 3, 0), ((32, 32768, 16), 3, 0), ((128, 8192, 16), 3, 0)])  # pages of 16: three, no fourth
def test_head_dim_64_two_stages(shape, stages, ctas, monkeypatch, request):
    """Swapped head-dim-64 calls of one query row ring two stages, at two programs an SM in several waves;
    pages smaller than a key block three (not the extra fourth of head dim 128); not for new keys, several
    query rows, adaptive splits or a cluster merge (H100, session 39: docs/gpu-results.md)."""
    from fakv import interface
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", None)
    interface._plan.cache_clear()
    request.addfinalizer(interface._plan.cache_clear)
    batch, seqlen, page = shape
    args = (batch, 1, 32, 8, 64, "bf16", bool(page), page or seqlen, seqlen, True, 0, 132, L2)
    p = plan(*args)
    assert p["decode_options"].get("swap_ab") and p["decode_options"]["stages"] == stages
    assert p["decode_options"].get("ctas_per_sm", 0) == ctas
    # On memory as fast as the H200's (4.8 TB/s), three stages (session 43) at three programs an SM in one wave,
    # four in several (session 50); the H100 SXM's 3.35 TB/s, or unknown (0): two stages, the programs an SM as above.
    several = batch == 128
    for gbps, want in ((4800, 3), (3352, stages), (0, stages)):
        fast = plan(*args, memory_gbps=gbps)["decode_options"]
        assert fast["stages"] == (want if stages == 2 else stages), (gbps, fast)
        assert fast.get("ctas_per_sm", 0) == ((4 if several else 3) if gbps == 4800 else ctas), (gbps, fast)
    if page != 16:
        for other in (plan(*args, appending=True), plan(batch, 2, *args[2:])):
            assert other["decode_options"]["stages"] == 3 and "ctas_per_sm" not in other["decode_options"]
    fourth = page == 16 and batch >= 32         # (unsplit: 128 or 512 blocks a program; b8 s8K: 4 splits of 32)
    if page == 16:      # (the fourth stage of smaller pages stays where the rule does not reach: new keys, 2 rows)
        for other in (plan(*args, appending=True), plan(batch, 2, *args[2:])):
            assert other["decode_options"]["stages"] == (4 if fourth else 3), other["decode_options"]
    for d in (32, 48):  # (head dims below 64 share its tiles, not its measurements)
        other = plan(batch, 1, 32, 8, d, *args[5:])["decode_options"]
        assert other["stages"] == (4 if fourth else 3) and "ctas_per_sm" not in other
    short = plan(128, 1, 32, 8, 64, "bf16", False, 512, 512, True, 0, 132, L2)     # several waves of 8 blocks
    assert short["decode_options"]["stages"] == 2 and "ctas_per_sm" not in short["decode_options"]
    small = plan(1, 1, 32, 8, 64, "bf16", False, 1024, 1024, True, 0, 132, L2, cluster=True)
    assert small["cluster"] and small["decode_options"]["stages"] == 3         # (merged in a cluster)
    monkeypatch.setattr(interface, "_ADAPTIVE_SPLITS", 4)
    interface._plan.cache_clear()
    adaptive = plan(32, 1, 32, 8, 64, "bf16", False, 32768, 32768, True, 0, 132, L2)
    assert adaptive["decode"]["ADAPTIVE"] and adaptive["decode_options"]["stages"] == 3
