#!/usr/bin/env python3
"""Launch one variant of bench/sweep_decode.py a few times, for a profiler:

    ncu --kernel-name decode --launch-skip 2 --launch-count 1 \\
        python3 bench/one_variant.py BLOCK_N STAGES WS PAGED

(BLOCK_N, STAGES: ints; WS, PAGED: 0 or 1). Compile first with
`python bench/one_variant.py ... --compile-only` (or the sweep's)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_decode  # noqa: E402


def main():
    block_n, stages, ws, paged = (int(a) for a in sys.argv[1:5])
    if "--compile-only" in sys.argv:
        import numpy as np
        os.environ["FAKV_COMPILE_ONLY"] = "1"
        lib = np
    else:
        import torch
        lib = torch
    sweep_decode.VARIANTS[:] = [(block_n, stages, bool(ws))]
    for _, launch, _ in sweep_decode.launches(lib, bool(paged)):
        for _ in range(4):
            launch()
    if lib.__name__ == "torch":
        lib.cuda.synchronize()
    print("launched", block_n, stages, ws, paged)


if __name__ == "__main__":
    main()
