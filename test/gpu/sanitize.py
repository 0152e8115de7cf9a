"""A few small cases of fakv.flash_attn_with_kvcache to run under
compute-sanitizer (memcheck, racecheck) on the GPU machine:

    compute-sanitizer --tool memcheck python3 test/gpu/sanitize.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_flash_attn as t  # noqa: E402

CASES = [("bf16", 128, (32, 8), 256, (1, False)),      # TMA, warp-specialized, one split
         ("f16", 64, (32, 1), 16, (3, True)),          # cp.async gather, causal
         ("bf16", 96, (32, 32), None, (1, False))]     # contiguous, head dim below the tile
fails = 0
for case in CASES:
    for splits in (1, 3):
        ok, msg = t.run_case(case, splits)
        fails += not ok
        print(("PASS " if ok else "FAIL ") + f"{t.case_id(case)} splits={splits}: {msg}", flush=True)
print(f"{2 * len(CASES) - fails} passed, {fails} failed")
