#!/usr/bin/env python3
"""Launch one variant of bench/sweep_decode.py a few times, for a profiler:

    ncu --kernel-name decode --launch-skip 2 --launch-count 1 \\
        python3 bench/one_variant.py BLOCK_N STAGES WS PAGED

(BLOCK_N, STAGES: ints; WS, PAGED: 0 or 1); with --time, also times it
(graph replays) next to a device copy. Compile first with
`python bench/one_variant.py ... --compile-only` (or the sweep's).

    python3 bench/one_variant.py flashinfer

runs FlashInfer's tensor-core decode on the bench's paged cache instead
(when it imports; bench/README.md says how to carry it)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_decode  # noqa: E402


def flashinfer():
    import flashinfer as fi
    import torch
    from bench_decode import flashinfer_decode, inputs
    q, k, v, _, table = inputs(torch, True)
    run = flashinfer_decode(fi, q, k, v, table, tensor_cores=True)
    for _ in range(4):
        run()
    torch.cuda.synchronize()
    print("launched flashinfer")


def main():
    if sys.argv[1:2] == ["flashinfer"]:
        return flashinfer()
    try:
        block_n, stages, ws, paged = (int(a) for a in sys.argv[1:5])
    except ValueError:                                    # (too few, --help: a traceback)
        raise SystemExit(__doc__) from None
    if "--compile-only" in sys.argv:
        import numpy as np
        os.environ["FAKV_COMPILE_ONLY"] = "1"
        lib = np
    else:
        from timing import need_cuda
        lib = need_cuda("bench/one_variant.py")
    sweep_decode.VARIANTS[:] = [(block_n, stages, bool(ws))]
    for _, launch, _ in sweep_decode.launches(lib, bool(paged)):
        for _ in range(4):
            launch()
        if "--time" in sys.argv:          # graph-timed, next to the copy, as the sweep does
            from bench_decode import B, D, HK, S, time_ms
            from timing import copy_ms
            src = lib.empty(2**30, dtype=lib.bfloat16, device="cuda")
            dst = lib.empty_like(src)
            t = copy_ms(dst, src)
            copy_bw = 2 * src.numel() * 2 / (t * 1e-3) / 1e12
            t, _ = time_ms(launch)
            bw = 2 * B * S * HK * D * 2 / (t * 1e-3) / 1e12
            print(f"BLOCK_N {block_n} stages {stages} ws {ws} paged {paged}: {t:.4f} ms {bw:.2f} TB/s {bw / copy_bw:.1%} of copy ({copy_bw:.2f} TB/s)")
    if lib.__name__ == "torch":
        lib.cuda.synchronize()
    if "--time" not in sys.argv:
        print("compiled" if "--compile-only" in sys.argv else "launched", block_n, stages, ws, paged)


if __name__ == "__main__":
    main()
