#!/usr/bin/env python3
"""Compile the fakv-IR kernels of kernels/ for the GPU tests (run here,
where MLIR is; the outputs travel to the GPU machine).

    python test/gpu/build_ir_kernels.py [--out build/gpu-kernels]

For bf16 and f16: kernels/decode.mlir as written (a runtime page size: the
cp.async gather), a variant with the page size fixed at 64 (TMA), and
kernels/combine.mlir.
"""
import argparse
import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def with_dtype(text, dtype):
    return text.replace("!kv = bf16", f"!kv = {dtype}").replace("!out = bf16", f"!out = {dtype}")


def fixed_page_size(text, page_size):
    """The decode kernel with its paged loads using a constant page size."""
    text = text.replace("page_size %page_size num_pages", "page_size %fixed_page_size num_pages")
    return text.replace("  %c4 = arith.constant 4 : i32\n",
                        f"  %c4 = arith.constant 4 : i32\n  %fixed_page_size = arith.constant {page_size} : i32\n", 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "gpu-kernels"))
    ap.add_argument("--compiler", default=os.path.join(ROOT, "build", "bin", "fakv-compile"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    decode = open(os.path.join(ROOT, "kernels", "decode.mlir")).read()
    combine = open(os.path.join(ROOT, "kernels", "combine.mlir")).read()
    variants = {}
    for dtype in ("bf16", "f16"):
        variants[f"decode_{dtype}"] = with_dtype(decode, dtype)
        variants[f"decode_{dtype}_page64"] = fixed_page_size(with_dtype(decode, dtype), 64)
        variants[f"combine_{dtype}"] = with_dtype(combine, dtype)
    env = dict(os.environ, PATH="/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    for name, text in variants.items():
        src = os.path.join(args.out, name + ".mlir")
        open(src, "w").write(text)
        subprocess.run([args.compiler, src, "-o", os.path.join(args.out, name)], check=True, env=env)
        print("compiled", name)


if __name__ == "__main__":
    main()
