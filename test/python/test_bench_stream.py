"""bench/stream_balance.py's CUDA kernels (the bare reads fakv's decode is measured against) compile for sm_90a
with the toolkit's nvcc, and the TMA producers that read through tensor maps keep their per-tile state in
registers: a producer whose page lookups went through local memory (a stack frame) waited on every lookup
and read at 41-73 % of copy on the H200 where the straight one read at 105-108 % (session 32)."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NVCC = shutil.which("nvcc") or next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), None)


@pytest.mark.skipif(NVCC is None, reason="needs nvcc (the CUDA toolkit)")
def test_stream_kernels_compile_without_stack_frames(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import stream_balance
    finally:
        sys.path.pop(0)
    src = tmp_path / "stream.cu"
    src.write_text("#include <cuda_runtime.h>\n" + stream_balance.SOURCE)
    run = subprocess.run([NVCC, "-std=c++17", "-arch=sm_90a", "-cubin", "-Xptxas", "-v", "-o",
                          str(tmp_path / "stream.cubin"), str(src)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    frames = dict(re.findall(r"Function properties for (\w+)\n\s+(\d+) bytes stack frame", run.stderr))
    assert set(stream_balance.KERNELS) <= set(frames), sorted(frames)
    maps = {name: int(frames[name]) for name in stream_balance.KERNELS if name.startswith("tma2kvmap")}
    assert len(maps) == 17 and not any(maps.values()), maps      # (d64 and d256 ones among them)


def test_xor_all_matches_numpy():
    """Reader.check's expected value: the XOR of every 32-bit word, by halving (on the GPU there, numpy here)."""
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import stream_balance
    finally:
        sys.path.pop(0)
    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 3, 7, 1000, 12345, 1 << 20):
        words = rng.integers(-2 ** 31, 2 ** 31 - 1, n, dtype=np.int32)
        assert stream_balance.xor_all(words) == int(np.bitwise_xor.reduce(words, initial=0)) & 0xFFFFFFFF, n
