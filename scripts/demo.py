#!/usr/bin/env python3
"""Compile kernels/decode.mlir (+ combine) and run it on the CPU path, then
print its output next to a float64 reference computed with numpy.

The configuration is test/cpu/decode_gqa_paged_causal.mlir's: batch 2, 2
query positions (causal), 8 query heads on 2 kv heads, head dim 64, a paged
cache of 16-row pages, 37 and 50 keys; run with 1 split and with 3 splits +
the combine kernel.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "cpu"))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
import reference  # noqa: E402
from compare_memrefs import printed_blocks  # noqa: E402

LLVM_BIN = "/usr/lib/llvm-22/bin"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dtype", default="bf16", choices=["f32", "f16", "bf16"])
    args = ap.parse_args()

    test = os.path.join(ROOT, "test", "cpu")
    files = [os.path.join(ROOT, "kernels", "decode.mlir"), os.path.join(ROOT, "kernels", "combine.mlir"),
             os.path.join(test, "decode_gqa_paged_causal.mlir"),
             os.path.join(test, "Inputs", "decode_harness.mlir"), os.path.join(test, "Inputs", "harness.mlir")]
    source = subprocess.run(["sh", os.path.join(ROOT, "test", "tools", "kernels_as.sh"), args.dtype, *files],
                            check=True, capture_output=True, text=True).stdout
    fakv_opt = os.path.join(args.build, "bin", "fakv-opt")
    print(f"[demo] no GPU here: compiling kernels/decode.mlir and kernels/combine.mlir ({args.dtype}) "
          f"with `fakv-opt --fakv-to-llvm-cpu` and running them with mlir-runner")
    llvm_ir = subprocess.run([fakv_opt, "--fakv-to-llvm-cpu"], input=source, check=True,
                             capture_output=True, text=True).stdout
    libs = ",".join(os.path.join("/usr/lib/llvm-22/lib", lib)
                    for lib in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
    printed = subprocess.run([os.path.join(LLVM_BIN, "mlir-runner"), "-e", "main", "-entry-point-result=void",
                              f"-shared-libs={libs}"], input=llvm_ir, check=True, capture_output=True,
                             text=True).stdout
    out1, lse1, out3, lse3 = printed_blocks(printed)

    expected = {label: arr for label, arr, _ in reference.TESTS[f"decode_gqa_paged_causal_{args.dtype}"]()}
    ref_out, ref_lse = expected["out_1split"].reshape(-1), expected["lse_1split"].reshape(-1)
    print("[demo] batch 2, seqlen_q 2 (causal), 8 q heads / 2 kv heads, head dim 64, "
          "paged cache (page 16), seqlens 37 and 50")
    print(f"{'':>22} {'fakv (1 split)':>15} {'fakv (3 splits)':>16} {'reference':>12}")
    for i in range(0, len(ref_out), 509)[:6]:
        b, rest = divmod(i, 2 * 8 * 64)
        t, rest = divmod(rest, 8 * 64)
        h, d = divmod(rest, 64)
        print(f"  out[{b},{t},{h},{d:2d}]{'':>8} {out1[i]:15.6f} {out3[i]:16.6f} {ref_out[i]:12.6f}")
    for i in range(0, len(ref_lse), 7)[:4]:
        b, rest = divmod(i, 8 * 2)
        h, t = divmod(rest, 2)
        print(f"  lse[{b},{h},{t}]{'':>11} {lse1[i]:15.6f} {lse3[i]:16.6f} {ref_lse[i]:12.6f}")
    err = {name: float(np.max(np.abs(np.array(got) - ref)))
           for name, got, ref in (("out, 1 split", out1, ref_out), ("out, 3 splits", out3, ref_out),
                                  ("lse, 1 split", lse1, ref_lse), ("lse, 3 splits", lse3, ref_lse))}
    for name, e in err.items():
        print(f"[demo] max |fakv - reference| {name}: {e:.3g}")
    atol = reference.OUT_ATOL[args.dtype]
    ok = max(err["out, 1 split"], err["out, 3 splits"]) <= atol and max(err["lse, 1 split"], err["lse, 3 splits"]) <= 1e-5
    print(f"[demo] {'PASS' if ok else 'FAIL'} (tolerance {atol:g} for out in {args.dtype}, 1e-05 for lse)")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
