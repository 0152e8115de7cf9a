"""fakv-pack-gqa from the DSL: kernels/decode.py is written per query head
and packed by the compiler (@fakv.jit(pack_gqa=0): the heads on grid axis 0). On the CPU path the
packed kernel gives what the same kernel gives unpacked, one program per
query head; grids and kernels the pass cannot pack are clear errors."""
import math

import numpy as np
import pytest

import fakv
import fakv.language as fl
from attention_ref import attention, gather
from test_kernels_cpu import make

from fakv.kernels.decode import decode


def run_decode(kernel, q, k, v, seqlens, table, causal, splits, group_tile=None, sequences_first=False, used=None):
    """kernels/decode.py's launch, as fakv.interface plans it, by `kernel`;
    `sequences_first`: as planned when batch x query blocks pass 65535;
    `used`: a list the specialisation launched (fakv.compiled.Compiled) is added to."""
    from fakv.interface import plain_extras, plan
    batch, sq, heads, d = q.shape
    kv_heads = k.shape[2]
    p = plan(batch, sq, heads, kv_heads, d, "bf16", table is not None, k.shape[1],
             k.shape[1] * (table.shape[1] if table is not None else 1), causal, splits)
    out = np.zeros(q.shape, q.dtype)
    lse = np.zeros((batch, heads, sq), np.float32)
    tile, n = p["decode"]["HEAD_DIM"], p["num_splits"]
    out_part = np.zeros((n, batch, sq, heads, tile), np.float32)
    lse_part = np.zeros((n, batch, heads, sq), np.float32)
    bt = table if table is not None else seqlens
    if sequences_first:
        g = p["decode_grid"]
        p = dict(p, decode=dict(p["decode"], HEADS_FIRST=False), decode_grid=(g[1], g[0], g[2]),
                 decode_options=dict(p["decode_options"], pack_gqa=1))
    kernel = kernel.with_options(**p["decode_options"]) if kernel.pack_gqa is not None else kernel
    if used is not None:            # (the specialisation the launch takes, recorded: not from the launch cache)
        kernel._fast.clear()
        specialize = kernel.specialize
        kernel.specialize = lambda *a, **k: used.append(specialize(*a, **k)) or used[-1]
    try:
        kernel[p["decode_grid"]](
            q, k, v, bt, seqlens, out, lse, out_part, lse_part,
            sq * heads * d, heads * d, d, k.shape[1] * kv_heads * d, kv_heads * d, d,
            bt.shape[1] if table is not None else 0,
            batch, sq, heads, kv_heads, d, k.shape[1], k.shape[0], 1 / math.sqrt(d),
            *plain_extras(seqlens, lse, k.shape[1] * (bt.shape[1] if table is not None else 1)),
            **p["decode"])
    finally:
        if used is not None:
            del kernel.specialize
    return (out, lse) if n == 1 else (out_part, lse_part)


def packing(compiled):
    """How fakv-pack-gqa packed a CPU specialisation of decode (its grid
    folding: (1, 1, 1) unpacked)."""
    from fakv.compiler import cpu_symbol
    return tuple(compiled.cpu.grid_packing.get(cpu_symbol("decode"), (1, 1, 1)))


@pytest.mark.parametrize("heads,page,query,splits", [
    ((8, 2), 16, (1, False), 1),       # GQA 4: rows of 4 heads
    ((6, 2), None, (3, True), 1),      # 3 heads padded to 4, 3 query positions (2 per program)
    ((4, 1), 16, (2, True), 3),        # MQA, partials
])
def test_packed_equals_unpacked(heads, page, query, splits):
    q, k, v, seqlens, table, causal = make("bf16", heads, page, query, seed=11)
    unpacked = decode.with_options(pack_gqa=None)   # the same kernel, one program per query head
    assert unpacked.pack_gqa is None and decode.pack_gqa == 0     # (the heads on grid axis 0)
    used = []
    got = run_decode(decode, q, k, v, seqlens, table, causal, splits, used=used)
    want = run_decode(unpacked, q, k, v, seqlens, table, causal, splits, used=used)
    # (packed: the group's heads folded into grid axis 0; a kernel left unpacked gave the same bits)
    assert [packing(c) for c in used] == [(heads[0] // heads[1], 1, 1), (1, 1, 1)]
    for g, w in zip(got, want):
        assert np.array_equal(g.astype(np.float32), w.astype(np.float32), equal_nan=True)
    if splits == 1:                                  # and both are attention
        keys, values = gather(k, table, seqlens, page), gather(v, table, seqlens, page)
        ref, _ = attention(q, keys, values, seqlens, causal, 1 / math.sqrt(q.shape[-1]))
        assert np.abs(got[0].astype(np.float64) - ref).max() < 2e-2


def test_sequences_first_is_the_same_attention():
    """The grid with the sequences on axis 0 (HEADS_FIRST off, packed on axis 1), which the plan takes for grids
    of more than 65535 sequence x query blocks, gives the same bits, split or not."""
    for heads, page, query, splits in (((8, 2), 16, (1, False), 1), ((6, 2), None, (3, True), 2)):
        q, k, v, seqlens, table, causal = make("bf16", heads, page, query, seed=5)
        used = []
        got = run_decode(decode, q, k, v, seqlens, table, causal, splits, sequences_first=True, used=used)
        want = run_decode(decode, q, k, v, seqlens, table, causal, splits, used=used)
        group = heads[0] // heads[1]
        assert [packing(c) for c in used] == [(1, group, 1), (group, 1, 1)]      # (sequences first: on axis 1)
        for g, w in zip(got, want):
            assert np.array_equal(g.astype(np.float32), w.astype(np.float32), equal_nan=True)


def test_packed_ir_has_the_group_in_its_rows():
    """The IR decode.py writes is per head; the pass (run by the pipelines)
    is asked for with the kernel attribute."""
    q, k, v, seqlens, table, causal = make("bf16", (8, 2), 16, (1, False))
    from fakv.interface import plain_extras
    ir = decode.ir(q, k, v, table, seqlens, q, q, q, q, 1, 1, 1, 1, 1, 1, 1, 3, 1, 8, 2, 64, 16, 10, 0.1,
                   *plain_extras(seqlens, q, 16 * table.shape[1]), HEAD_DIM=64, BLOCK_N=32, NEW_N=16, GROUP=4, SQ_BLOCK=1,
                   PAGE_SIZE=16, CAUSAL=False, BATCH_IDX=False, SOFTCAP=False, WINDOW=False, ALIBI=False, LEFTPAD=False,
                   PRESCALE=False, MERGE=False, APPEND=False, ROTARY=False, INTERLEAVED=False, ADAPTIVE=0,
                   LONGEST_FIRST=0, HEADS_FIRST=True)
    assert "fakv.pack_gqa = 0 : i32" in ir
    assert "tensor<1x64xbf16>" in ir and "tensor<4x64xbf16>" not in ir


@fakv.jit(pack_gqa=1)
def copy_heads(X, Y, GROUP: fl.constexpr):
    h = fl.program_id(1)
    kvh = h // GROUP
    x = fl.load(X + h * 8, (8,), (0,), (1,))
    fl.store(Y + h * 8, x + kvh, (0,), (1,))


def test_grid_not_a_multiple_of_the_group():
    x = np.arange(6 * 8, dtype=np.float32)
    y = np.zeros_like(x)
    copy_heads[(1, 6, 1)](x, y, GROUP=3)            # 2 programs of 3 heads
    assert np.array_equal(y, x + np.repeat(np.arange(6) // 3, 8))
    with pytest.raises(ValueError, match="grid axis 1 is 4, not a multiple of the 3 query heads"):
        copy_heads[(1, 4, 1)](x, y, GROUP=3)


def test_unpackable_kernel_names_its_line():
    @fakv.jit(pack_gqa=1)
    def per_head_scale(X, GROUP: fl.constexpr):
        h = fl.program_id(1)
        kvh = h // GROUP
        x = fl.load(X + h * 8, (8,), (0,), (1,))
        fl.store(X + kvh * 8, x, (0,), (1,))        # every head of the group writes one place
    with pytest.raises(fakv.CompilationError, match=r"test_pack_gqa.py:\d+:\d+: error: fakv-pack-gqa: "
                                                    r"every query head would store to the same address"):
        per_head_scale[(1, 4, 1)](np.zeros(32, np.float32), GROUP=2)


def test_pack_gqa_is_a_grid_axis():
    with pytest.raises(ValueError, match="pack_gqa is a grid axis"):
        fakv.jit(pack_gqa=3)(copy_heads.fn)


def test_with_options():
    """One object per set of options; unchanged options give the kernel back."""
    assert copy_heads.with_options(pack_gqa=1) is copy_heads
    v = copy_heads.with_options(stages=3)
    assert v is copy_heads.with_options(stages=3) and v.fn is copy_heads.fn and v.pack_gqa == 1
    assert v.options["stages"] == 3 and copy_heads.options["stages"] == 2
    with pytest.raises(TypeError, match=r"unknown option\(s\) \['num_warps'\]"):
        copy_heads.with_options(num_warps=8)
