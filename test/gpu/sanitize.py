"""A few small cases of fakv.flash_attn_with_kvcache to run under
compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on the GPU
machine:

    compute-sanitizer --tool memcheck python3 test/gpu/sanitize.py
    compute-sanitizer --tool initcheck python3 test/gpu/sanitize.py --no-reference

--no-reference checks fakv's outputs on the host (copied back: every byte
must have been written, and finite) instead of against torch's reference,
whose cuBLAS kernels write through the tensor-memory engine, which
initcheck does not see (it then reports the reference's own tensors as
uninitialised).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_flash_attn as t  # noqa: E402

CASES = [("bf16", 128, (32, 8), 256, (1, False)),      # TMA, warp-specialized, one split
         ("f16", 64, (32, 1), 16, (3, True)),          # cp.async gather, causal
         ("bf16", 96, (32, 32), None, (1, False))]     # contiguous, head dim below the tile


def outputs_only(case, splits):
    import fakv
    import torch
    q, k, v, lens, table = t.make_inputs(case, torch)
    out, lse = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=case[4][1],
                                           num_splits=splits, return_softmax_lse=True)
    out, lse = out.float().cpu(), lse.cpu()
    ok = bool(torch.isfinite(out).all()) and not bool(torch.isnan(lse).any())
    return ok, "outputs written and finite" if ok else "non-finite outputs"


fails = 0
for case in CASES:
    for splits in (1, 3):
        ok, msg = outputs_only(case, splits) if "--no-reference" in sys.argv else t.run_case(case, splits)
        fails += not ok
        print(("PASS " if ok else "FAIL ") + f"{t.case_id(case)} splits={splits}: {msg}", flush=True)
print(f"{2 * len(CASES) - fails} passed, {fails} failed")
