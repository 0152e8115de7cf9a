#!/usr/bin/env python3
"""The main job: compile the decode kernel from its DSL description
(kernels/decode.py, with kernels/combine.py) and run it through
fakv.flash_attn_with_kvcache: on the GPU when torch sees one, else on the
CPU path. Prints what was compiled and the result next to a float64 numpy
reference (FlashAttention's tolerance rule).

Configuration: bf16, batch 2, 2 query positions (causal), 8 query heads on
2 kv heads, head dim 128, a paged cache of 16-row pages holding 300 and
517 keys; 1 split, then 3 splits + the combine kernel.
"""
import math
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "test", "python"), os.path.join(ROOT, "test", "gpu")]
import source_tree  # noqa: E402,F401  (the source tree's fakv when it is built, else the installed one)
import fakv  # noqa: E402
from attention_ref import NP_DTYPES, attention, check, gather  # noqa: E402
from fakv import prepare  # noqa: E402
from fakv.interface import _kernels  # noqa: E402


def inputs(rng):
    b, sq, h, hk, d, page = 2, 2, 8, 2, 128, 16
    lens = np.array([300, 517], np.int32)
    pages = math.ceil(lens.max() / page)
    num_pages = b * pages + 3
    table = rng.permutation(num_pages)[: b * pages].astype(np.int32).reshape(b, pages)
    bf16 = NP_DTYPES["bf16"]
    q = rng.standard_normal((b, sq, h, d)).astype(bf16)
    k = rng.standard_normal((num_pages, page, hk, d)).astype(bf16)
    v = rng.standard_normal((num_pages, page, hk, d)).astype(bf16)
    return q, k, v, lens, table, page


def main():
    q, k, v, lens, table, page = inputs(np.random.default_rng(0))
    try:
        import torch
        gpu = torch.cuda.is_available()
    except ImportError:
        gpu = False
    if gpu:
        name = torch.cuda.get_device_name()
        to = lambda x: torch.from_numpy(x.view(np.int16)).cuda().view(torch.bfloat16) \
            if x.dtype == NP_DTYPES["bf16"] else torch.from_numpy(x).cuda()  # noqa: E731
        args = [to(x) for x in (q, k, v)]
        lens_t, table_t = to(lens), to(table)
        print(f"[demo] device: {name} (torch CUDA tensors: the GPU path)")
    else:
        args, lens_t, table_t = [q, k, v], lens, table
        print("[demo] device: no GPU here: the CPU path (the kernels' reference lowering, "
              "run by MLIR's ExecutionEngine)")
    print(f"[demo] bf16, batch 2, seqlen_q 2 (causal), heads 8/2, head dim 128, pages of {page}, "
          f"cache_seqlens {lens.tolist()}")

    keys, values = gather(k, table, lens, page), gather(v, table, lens, page)
    scale = 1 / math.sqrt(q.shape[-1])
    ref, lse_ref = attention(q, keys, values, lens, True, scale)
    pt, _ = attention(q, keys, values, lens, True, scale, NP_DTYPES["bf16"])
    decode, combine = _kernels()
    ok_all = True
    for splits in (1, 3):
        out, lse = fakv.flash_attn_with_kvcache(*args, cache_seqlens=lens_t, block_table=table_t, causal=True,
                                               num_splits=splits, return_softmax_lse=True)
        if os.environ.get("FAKV_COMPILE_ONLY"):
            print(f"[demo] num_splits={splits}: compiled only (FAKV_COMPILE_ONLY): nothing ran")
            continue
        if gpu:
            out = out.float().cpu().numpy()
            lse = lse.cpu().numpy()
        ok, msg = check(np.asarray(out, np.float64), ref, pt)
        lse_err = np.abs(lse - lse_ref).max()
        ok_all &= ok and lse_err < 2e-3
        print(f"[demo] num_splits={splits}: {'PASS' if ok and lse_err < 2e-3 else 'FAIL'}  out vs float64 "
              f"reference: {msg}; lse max err {lse_err:.1e}")
        print(f"       out[0, 1, 0, :4] = {np.round(np.asarray(out[0, 1, 0, :4], np.float64), 4).tolist()}  "
              f"reference {np.round(ref[0, 1, 0, :4], 4).tolist()}")
    for fn in (decode, *decode._variants.values(), combine):    # (the API runs decode with its plan's options)
        for c in fn._compiled.values():
            where = f"cubin {c.path}" if getattr(c, "path", None) else "CPU module"
            print(f"[demo] compiled {fn.__name__}: {len(c.ir.splitlines())} lines of fakv IR -> {where} "
                  f"(cache: {c.cache})")
    indexed = {c.path: c.name for found in prepare.INDEXED.values() for c in found if c.cache == "index"}
    for path, name in indexed.items():             # a warm start: the binaries named by the cache's index
        print(f"[demo] {name}: cubin {path} (found through the cache's index: no IR generated)")
    print("[demo] see the IR: python -m fakv.compile kernels/decode.py --emit fakv "
          "--attention batch=2,seqlen_q=2,heads=8,kv_heads=2,head_dim=128,page_size=16,seqlen_k=517,causal=True")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
