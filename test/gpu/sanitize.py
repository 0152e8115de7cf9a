"""A few small cases of fakv.flash_attn_with_kvcache to run under
compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on the GPU
machine:

    compute-sanitizer --tool memcheck python3 test/gpu/sanitize.py
    compute-sanitizer --tool initcheck python3 test/gpu/sanitize.py --no-reference

The cases cover every kernel variant the API launches: decode through TMA
(warp-specialized) and through the cp.async gather, contiguous and paged,
one split and several (then the combine), FlashAttention's options, and
calls that append (decode.py's APPEND: contiguous, paged, cache_batch_idx;
combine_new.py's decode steps) with rotary and cache_leftpad, head dims 32 and 59 (element-wise gathers)
to 256.

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
import test_kvcache as kv  # noqa: E402

CASES = [(("bf16", 128, (32, 8), 256, (1, False)), None),     # TMA, warp-specialized, one split
         (("f16", 64, (32, 1), 16, (3, True)), None),         # cp.async gather, causal
         (("bf16", 96, (32, 32), None, (1, False)), None),    # contiguous, head dim below the tile
         (("bf16", 128, (32, 8), 256, (1, False)), "all"),    # softcap, window, ALiBi
         (("f16", 64, (32, 1), 16, (3, True)), "all"),
         (("bf16", 128, (32, 8), None, (1, False)), "all")]   # and cache_batch_idx


def outputs_only(case, splits, option):
    import fakv
    import torch
    q, k, v, lens, table = t.make_inputs(case, torch)
    kw = t.option_kwargs(option, case, torch)[0] if option else {}
    out, lse = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table, causal=case[4][1],
                                           num_splits=splits, return_softmax_lse=True, **kw)
    out, lse = out.float().cpu(), lse.cpu()
    ok = bool(torch.isfinite(out).all()) and not bool(torch.isnan(lse).any())
    return ok, "outputs written and finite" if ok else "non-finite outputs"


# FlashAttention's kvcache cases (test_kvcache.py): the append kernel, rotary,
# cache_leftpad, head dims 32 and 59 (element-wise gathers), windows, ALiBi.
KV = dict(alibi=False, local=False, causal=False, seqlen_new_eq_seqlen_q=True, rotary_interleaved=False,
          rotary_fraction=0.0, page_size=None, has_leftpad=False, has_batch_idx=False, batch=2)
KV_CASES = [dict(KV, grid="fa2", dtype="f16", d=32, mha_type="gqa", seqlens=(1, 339), new_kv=True,
                 rotary_fraction=1.0, rotary_interleaved=True, page_size=256, has_leftpad=True, num_splits=0),
            dict(KV, grid="fa2", dtype="bf16", d=59, mha_type="mqa", seqlens=(3, 799), new_kv=True, causal=True,
                 local=True, rotary_fraction=0.5, has_batch_idx=True, num_splits=1),
            dict(KV, grid="fa3", dtype="bf16", d=128, mha_type="gqa", seqlens=(64, 800), new_kv=True, local=True,
                 rotary_fraction=1.0, page_size=4, has_leftpad=True, seqlen_new_eq_seqlen_q=False, num_splits=3),
            dict(KV, grid="fa2", dtype="f16", d=256, mha_type="mha", seqlens=(1, 128), new_kv=False, causal=True,
                 alibi=True, num_splits=0),
            # decode steps: combine_new.py appends and attends the new key while decode reads the cache
            dict(KV, grid="fa3", dtype="bf16", d=128, mha_type="gqa", seqlens=(1, 800), new_kv=True, causal=True,
                 rotary_fraction=1.0, page_size=16, num_splits=3),
            dict(KV, grid="fa2", dtype="f16", d=64, mha_type="mqa", seqlens=(1, 700), new_kv=True,
                 rotary_fraction=0.5, rotary_interleaved=True, has_batch_idx=True, num_splits=0)]


def kv_outputs_only(c):
    import fakv
    import torch
    a = kv.make_case(c)
    out, lse = fakv.flash_attn_with_kvcache(**a, return_softmax_lse=True)
    out, lse = out.float().cpu(), lse.cpu()
    caches = (a["k_cache"].float().cpu(), a["v_cache"].float().cpu())  # appended rows read back too
    ok = bool(torch.isfinite(out).all()) and not bool(torch.isnan(lse).any()) and \
        all(bool(torch.isfinite(x).all()) for x in caches)
    return ok, "outputs and caches written and finite" if ok else "non-finite outputs"


fails = 0
for case, option in CASES:
    for splits in (1, 3):
        ok, msg = outputs_only(case, splits, option) if "--no-reference" in sys.argv else \
            t.run_case(case, splits, option=option)
        fails += not ok
        print(("PASS " if ok else "FAIL ") + f"{t.case_id(case)}-{option} splits={splits}: {msg}", flush=True)
for c in KV_CASES:
    ok, msg = kv_outputs_only(c) if "--no-reference" in sys.argv else kv.run_case(c)
    fails += not ok
    print(("PASS " if ok else "FAIL ") + f"{kv.case_id(c)}: {msg}", flush=True)
# FAKV_MERGE_SPLITS: decode merging its own splits (fl.atomic_add, the last
# split reading the others' partials).
from fakv import prepare  # noqa: E402
prepare.MERGE_SPLITS = True
for case, option in CASES[:2] + CASES[3:4]:
    ok, msg = outputs_only(case, 3, option) if "--no-reference" in sys.argv else t.run_case(case, 3, option=option)
    fails += not ok
    print(("PASS " if ok else "FAIL ") + f"{t.case_id(case)}-{option} splits=3, merged: {msg}", flush=True)
prepare.MERGE_SPLITS = False
print(f"{2 * len(CASES) + len(KV_CASES) + 3 - fails} passed, {fails} failed")
sys.exit(1 if fails else 0)      # (compute-sanitizer returns the program's code when it finds nothing)
