"""The fakv-IR kernels of kernels/ that the GPU tests run, compiled on the
spot by the installed compiler (fakv._fakv to PTX, fakv.ptx to a cubin).

For bf16 and f16: kernels/decode.mlir as written (a runtime page size: the
cp.async gather), a variant with the page size fixed at 64 (TMA), and
kernels/combine.mlir.

    python test/gpu/ir_kernels.py [--emit ptx]   # compile them all (no GPU needed), print their sizes
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import source_tree  # noqa: E402,F401  (the source tree's fakv when it is built, else the installed one)


def with_dtype(text, dtype):
    return text.replace("!kv = bf16", f"!kv = {dtype}").replace("!out = bf16", f"!out = {dtype}")


def fixed_page_size(text, page_size):
    """The decode kernel with its paged loads using a constant page size."""
    fixed = text.replace("page_size %page_size num_pages", "page_size %fixed_page_size num_pages")
    fixed = fixed.replace("  %c4 = arith.constant 4 : i32\n",
                          f"  %c4 = arith.constant 4 : i32\n  %fixed_page_size = arith.constant {page_size} : i32\n", 1)
    # (both edits made: if decode.mlir's text drifts, the "TMA" variant was quietly the run-time page size's)
    assert "page_size %fixed_page_size" in fixed and "%fixed_page_size = arith.constant" in fixed
    return fixed


def variants():
    """name -> fakv IR text."""
    decode = open(os.path.join(ROOT, "kernels", "decode.mlir")).read()
    combine = open(os.path.join(ROOT, "kernels", "combine.mlir")).read()
    out = {}
    for dtype in ("bf16", "f16"):
        out[f"decode_{dtype}"] = with_dtype(decode, dtype)
        out[f"decode_{dtype}_page64"] = fixed_page_size(with_dtype(decode, dtype), 64)
        out[f"combine_{dtype}"] = with_dtype(combine, dtype)
    return out


def compile_kernel(name):
    """(cubin, launch facts) of one variant."""
    from fakv import _fakv, ptx
    text, facts = _fakv.compile(variants()[name], "ptx", 2, True, "sm_90a", 0, 0)
    return ptx.assemble(text, "sm_90a"), json.loads(facts)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.parse_args()
    for name in variants():
        cubin, facts = compile_kernel(name)
        print(f"{name}: {len(cubin)} bytes, {facts['kernels'][0]['smem_bytes']} bytes of shared memory")
