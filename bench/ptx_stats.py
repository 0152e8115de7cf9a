#!/usr/bin/env python3
"""Static facts of the decode kernel one flash_attn_with_kvcache call
compiles, without a GPU: registers (ptxas -v), PTX lines, bar.syncs,
global loads and shared stores by width. A proxy for what a change does to
the kernel before it is timed on the H200 (docs/gpu-results.md).

    python bench/ptx_stats.py                      # b1 s8192 paged 256, 32/8 heads, d128: every mode below
    python bench/ptx_stats.py plain append rotary neox merge

Modes: plain; append (a one-token k/v); rotary (append with interleaved
rotary); neox (append with NeoX rotary); seed (the seed's decode step: NeoX,
float32 cos/sin, causal); merge (FAKV_MERGE_SPLITS). Needs
ptxas (CUDA_HOME or PATH) and a build of fakv (its compiler).
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401

MODES = ("plain", "append", "rotary", "neox", "seed", "merge")


def decode_ptx(mode):
    """The PTX of the decode kernel of `mode`'s call (a fresh process: the
    IR dump and FAKV_MERGE_SPLITS are read at import)."""
    script = f"""
import os, tempfile, numpy as np, ml_dtypes
os.environ["FAKV_CACHE_DIR"] = tempfile.mkdtemp(); os.environ["FAKV_COMPILE_ONLY"] = "1"
import fakv
bf = ml_dtypes.bfloat16
q = np.zeros((1, 1, 32, 128), bf); k = np.zeros((32, 256, 8, 128), bf)
table = np.arange(32, dtype=np.int32)[None]; kn = np.zeros((1, 1, 8, 128), bf); cs = np.zeros((8192, 64), bf)
mode = {mode!r}
kw = {{}} if mode in ("plain", "merge") else dict(k=kn, v=kn)
if mode in ("rotary", "neox", "seed"):
    angles = cs.astype(np.float32) if mode == "seed" else cs
    kw.update(rotary_cos=angles, rotary_sin=angles, rotary_interleaved=mode == "rotary", causal=mode == "seed")
fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=np.array([8191], np.int32), block_table=table, **kw)
"""
    env = dict(os.environ, FAKV_DUMP_IR="1", FAKV_MERGE_SPLITS="1" if mode == "merge" else "0")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(ROOT, "frontend"), env.get("PYTHONPATH")]))
    err = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True).stderr
    text = err.split("// ptx of decode", 1)[1]
    return re.split(r"\n// (?:fakv IR|fakvgpu|llvm|ptx) of ", text, maxsplit=1)[0]


def ptxas():
    for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if d and os.path.exists(os.path.join(d, "bin", "ptxas")):
            return os.path.join(d, "bin", "ptxas")
    return shutil.which("ptxas")


def stats(ptx):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        out = subprocess.run([ptxas(), "-arch=sm_90a", "-v", src, "-o", os.path.join(d, "k.cubin")],
                             capture_output=True, text=True, check=True).stderr
    regs = re.search(r"Used (\d+) registers", out).group(1)
    spills = re.search(r"(\d+) bytes spill stores", out).group(1)
    moves = collections.Counter(re.findall(r"\b(ld\.global[.\w]*|st\.shared[.\w]*)", ptx))
    return (f"{regs} registers, {spills} bytes spilled, {ptx.count(chr(10))} PTX lines, "
            f"{ptx.count('bar.sync')} bar.sync; " + ", ".join(f"{n} {m}" for m, n in sorted(moves.items())))


def main():
    modes = sys.argv[1:] or MODES
    for mode in modes:
        if mode not in MODES:
            raise SystemExit(f"unknown mode {mode!r}: {', '.join(MODES)}")
        print(f"{mode:7} {stats(decode_ptx(mode))}", flush=True)


if __name__ == "__main__":
    main()
