"""GPU tests of the fakv-IR kernels (kernels/decode.mlir, kernels/combine.mlir)
against FlashAttention's tolerance rule. Skipped without a GPU.

The kernels are compiled here by the installed compiler (test/gpu/ir_kernels.py).
The IR kernels have head dim 64 and pack up to 4 query positions x 4 heads
per kv head.

    python -m pytest test/gpu/test_ir_kernels.py        # on the GPU machine
"""
import itertools
import math
import os
import sys
import zlib

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from launcher import Kernel  # noqa: E402
from reference import attention_ref, check, gather_cache  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}
_kernels = {}


def kernel(name):
    if name not in _kernels:
        _kernels[name] = Kernel(name)
    return _kernels[name]


def make_cache(kind, batch, kv_heads, seqlens, dtype, gen):
    """Returns (k_cache, v_cache, table, page_size, kernel suffix) with the
    caches seen as pages; `kind` is paged16, paged64 or contiguous."""
    d = 64
    s_max = int(max(seqlens))
    if kind == "contiguous":
        s_cache = s_max
        shape = (batch, s_cache, kv_heads, d)
        table = torch.arange(batch, dtype=torch.int32).reshape(batch, 1)
        page_size, suffix = s_cache, ""
    else:
        page_size = 16 if kind == "paged16" else 64
        max_pages = math.ceil(s_max / page_size)
        num_pages = batch * max_pages + 3
        perm = torch.randperm(num_pages, generator=gen)[: batch * max_pages].to(torch.int32)
        table = perm.reshape(batch, max_pages).clone()
        for i, n in enumerate(seqlens):
            table[i, math.ceil(n / page_size):] = -1           # never read
        shape = (num_pages, page_size, kv_heads, d)
        suffix = "" if kind == "paged16" else "_page64"
    k = torch.randn(shape, generator=gen).to(dtype).cuda()
    v = torch.randn(shape, generator=gen).to(dtype).cuda()
    return k, v, table.cuda(), page_size, suffix


CASES = list(itertools.product(["bf16", "f16"], [(8, 2), (4, 1), (4, 4)], [(1, False), (2, True), (4, True)],
                               ["paged16", "paged64", "contiguous"]))


@pytest.mark.parametrize("dtype,heads,query,cache", CASES,
                         ids=[f"{d}-h{h[0]}kv{h[1]}-sq{q[0]}{'c' if q[1] else ''}-{c}" for d, h, q, c in CASES])
def test_decode_and_combine(dtype, heads, query, cache):
    run_case(dtype, heads, query, cache)


def run_case(dtype, heads, query, cache, verbose=False):
    gen = torch.Generator().manual_seed(zlib.crc32(repr((dtype, heads, query, cache)).encode()))
    h, hk = heads
    sq, causal = query
    tdtype = DTYPES[dtype]
    batch, d = 3, 64
    s_full = 128 if cache != "paged64" else 192
    seqlens = [1, s_full, int(torch.randint(2, s_full, (1,), generator=gen))]
    k_cache, v_cache, table, page_size, suffix = make_cache(cache, batch, hk, seqlens, tdtype, gen)
    q = torch.randn(batch, sq, h, d, generator=gen).to(tdtype).cuda()
    lens = torch.tensor(seqlens, dtype=torch.int32, device="cuda")
    scale = 1 / math.sqrt(d)
    k_seq = gather_cache(k_cache, table, lens, page_size)
    v_seq = gather_cache(v_cache, table, lens, page_size)
    ref, lse_ref = attention_ref(q, k_seq, v_seq, lens, causal, scale, upcast=True)
    pt, _ = attention_ref(q, k_seq, v_seq, lens, causal, scale, upcast=False)

    decode = kernel(f"decode_{dtype}{suffix}")
    combine = kernel(f"combine_{dtype}")
    results = []
    for splits in (1, 3):
        out = torch.full_like(q, float("nan"))
        lse = torch.full((batch, h, sq), float("nan"), device="cuda")
        out_part = torch.full((splits, batch, sq, h, d), float("nan"), device="cuda")
        lse_part = torch.full((splits, batch, h, sq), float("nan"), device="cuda")
        decode((splits, hk, batch), q, k_cache, v_cache, table, lens, out, lse, out_part, lse_part,
               batch, sq, h, hk, page_size, k_cache.shape[0], table.shape[1], scale, causal)
        if splits > 1:
            combine((math.ceil(h / 4), sq, batch), out_part, lse_part, out, lse, splits, batch, sq, h)
        torch.cuda.synchronize()
        ok, msg = check(out, ref, pt, f"out ({splits} split{'s' if splits > 1 else ''})")
        finite = torch.isfinite(lse_ref)
        lse_err = (lse[finite] - lse_ref[finite]).abs().max().item()
        lse_ok = lse_err <= 1e-3 and torch.equal(torch.isneginf(lse), ~finite)  # the IR kernels: -inf
        results.append((ok and lse_ok, f"{msg}; lse max err {lse_err:.2e}"))
    if verbose:
        return results
    for ok, msg in results:
        assert ok, msg


if __name__ == "__main__":
    fails = 0
    for case in CASES:
        for ok, msg in run_case(*case, verbose=True):
            fails += not ok
            print(("PASS " if ok else "FAIL ") + f"{case}: {msg}")
    print(f"{len(CASES) * 2 - fails} passed, {fails} failed")
    sys.exit(1 if fails else 0)
