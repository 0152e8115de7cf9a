#!/usr/bin/env python3
"""Where the host time of fakv.flash_attn_with_kvcache goes, on the GPU
machine: the microseconds of each step of a prepared call (the signature
key, the allocations, the stream, each launch) at batch 1 / 1024 keys, paged
and contiguous; the start-up of a new process with a filled cache
(cProfile of its first call); and the cold start's parts (loading the
compiler, compiling decode and combine, each stage). Diagnostics for
bench/bench_host.py's numbers, not a benchmark of its own.

    python bench/profile_host.py
"""
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import source_tree  # noqa: E402,F401


def per_call_us(fn, n=2000):
    import torch
    for _ in range(50):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    us = (time.perf_counter() - t) / n * 1e6
    torch.cuda.synchronize()
    return us


def steps():
    import torch
    import fakv
    from fakv import interface, runtime
    from bench_host import inputs
    for paged in (True, False):
        q, k, v, lens, table = inputs(1, 1024, paged)
        api = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
        api()
        tensors = (q, k, v, lens, table, None, None)
        scalars = (None, False, (-1, -1), 0.0, 0, False, interface._check_data())
        key, ptrs = interface._signature(tensors, scalars, (None, None))
        call = interface._CALLS[key]
        stream = call.stream()
        a = list(call.decode_args)
        a[0], a[1], a[2], a[3], a[4] = (ptrs[0], (ptrs[1], call.cache_layout), (ptrs[2], call.cache_layout),
                                        ptrs[4] or ptrs[3], ptrs[3])
        out = torch.empty(call.out_shape, dtype=q.dtype, device=q.device)
        ws = torch.empty(call.ws_bytes // 4, dtype=torch.float32, device=q.device)
        a[5], a[6], a[7], a[8] = out.data_ptr(), ws.data_ptr(), ws.data_ptr(), ws.data_ptr()
        a[24], a[28] = ptrs[3], ws.data_ptr()
        gx, gy, gz = call.decode_grid
        rows = [
            ("whole API call", per_call_us(api)),
            ("raise_pending", per_call_us(runtime.raise_pending)),
            ("signature (C)", per_call_us(lambda: interface._signature(tensors, scalars, (None, None)))),
            ("_CALLS lookup", per_call_us(lambda: interface._CALLS.get(key))),
            ("torch.empty_like(q) (out)", per_call_us(lambda: torch.empty_like(q))),
            ("torch.empty (lse)", per_call_us(lambda: torch.empty(call.lse_shape, dtype=torch.float32,
                                                                  device=q.device))),
            ("workspace: raw alloc + delete", per_call_us(
                lambda: call.raw_delete(call.raw_alloc(call.ws_bytes, call.device, stream)))),
            ("q.device", per_call_us(lambda: q.device)),
            ("stream()", per_call_us(call.stream)),
            ("decode launch", per_call_us(lambda: call.decode(gx, gy, gz, stream, *a))),
        ]
        if call.combine is not None:
            c = list(call.combine_args)
            c[0], c[1], c[2], c[3] = ws.data_ptr(), ws.data_ptr(), out.data_ptr(), ws.data_ptr()
            cx, cy, cz = call.combine_grid
            rows.append(("combine launch", per_call_us(lambda: call.combine(cx, cy, cz, stream, *c))))
        print(f"\nb1 s1024 {'paged 256' if paged else 'contiguous'}: splits {call.combine is not None and 'yes'}, "
              f"decode grid {call.decode_grid}")
        for name, us in rows:
            print(f"  {name:42} {us:7.2f} us")


WARM = """
import time, torch, sys
sys.path[:0] = {paths!r}
from bench_host import inputs
q, k, v, lens, table = inputs(8, 8192, True)
torch.cuda.synchronize()
import cProfile, pstats, io
pr = cProfile.Profile()
t = time.perf_counter()
pr.enable()
import fakv
out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
torch.cuda.synchronize()
pr.disable()
print(f"first call with import: {{(time.perf_counter() - t) * 1e3:.2f}} ms (under cProfile)")
s = io.StringIO()
pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
print(s.getvalue())
"""

COLD = """
import time, torch, sys, json
sys.path[:0] = {paths!r}
from bench_host import inputs
q, k, v, lens, table = inputs(8, 8192, True)
torch.cuda.synchronize()
t0 = time.perf_counter()
import fakv
from fakv import _fakv, ptx
t1 = time.perf_counter()
ir = {{}}
from fakv.interface import _kernels
out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
torch.cuda.synchronize()
t2 = time.perf_counter()
print(f"import fakv + its compiler: {{(t1 - t0) * 1e3:.1f}} ms; first call: {{(t2 - t1) * 1e3:.1f}} ms")
decode, combine = _kernels()
for fn in (decode, *decode._variants.values(), combine):
    for c in fn._compiled.values():
        for stage in ("fakvgpu", "llvm", "ptx"):
            t = time.perf_counter()
            text, _ = _fakv.compile(c.ir, stage, fn.options["stages"], True, "sm_90a", 0, 0)
            print(f"  {{fn.__name__}} up to {{stage}}: {{(time.perf_counter() - t) * 1e3:.1f}} ms")
        t = time.perf_counter()
        ptx.assemble(text)
        print(f"  {{fn.__name__}} assemble ({{ptx.assembler()[0]}}): {{(time.perf_counter() - t) * 1e3:.1f}} ms")
"""


def starts():
    paths = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, FAKV_CACHE_DIR=cache)
        for name, script in (("cold", COLD), ("warm", WARM)):
            r = subprocess.run([sys.executable, "-c", script.format(paths=paths)], env=env, capture_output=True,
                               text=True, timeout=300)
            print(f"\n--- {name} start ---\n{r.stdout}{r.stderr[-2000:]}")


if __name__ == "__main__":
    steps()
    starts()
