#!/usr/bin/env python3
"""bench/bench_decode.py's output check fed wrong outputs, on the GPU (from the repository root):

    python3 test/gpu/bench_decode_checks.py

At batch 4, seqlen 2048, paged (pages of 256) and contiguous: fakv's own output must pass check(); an all-zero
output, the output of 64 fewer keys and an output with one sequence zeroed must each be caught. Also: rotated()
by angle 0 is the identity. Prints what it found; exits 1 when any expectation fails.
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))


def main():
    import torch
    import bench_decode as bd
    import fakv
    bad = []
    for paged in (True, False):
        q, k, v, lens, table = bd.inputs(torch, paged, B=4, S=2048)
        out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
        ref = bd.reference(q, k, v, table, n=2048)
        wrong = [("all zeros", torch.zeros_like(out)),
                 ("64 keys short", fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens - 64, block_table=table)),
                 ("one sequence zeroed", torch.cat([out[:3], torch.zeros_like(out[3:])]))]
        for name, o, want in [("fakv's output", out, False)] + [(n, o, True) for n, o in wrong]:
            n0 = len(bd.FAILED)
            bd.check(name, o, ref)
            caught = len(bd.FAILED) > n0
            print(f"{'paged' if paged else 'contiguous'}: {name}: {'caught' if caught else 'passed'}"
                  f"{'' if caught == want else '  <- WRONG'}")
            if caught != want:
                bad.append(name)
    ones, zeros = torch.ones(2048, 64, device="cuda"), torch.zeros(2048, 64, device="cuda")
    if not torch.equal(bd.rotated(q, ones, zeros, 5), q):
        bad.append("rotated() by angle 0 is not the identity")
    print("\n".join(bd.FAILED))
    print("FAILED: " + ", ".join(bad) if bad else "all as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
