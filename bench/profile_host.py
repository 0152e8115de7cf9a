#!/usr/bin/env python3
"""Where the host time of fakv.flash_attn_with_kvcache goes, on the GPU
machine: the microseconds of each step of a prepared call (the signature
key, the allocations, the stream, each launch) at batch 1 / 1024 keys, paged
and contiguous; the start-up of a new process with a filled cache
(the milliseconds of each stage of its first call: importing the kernels,
reading the cache, loading the cubins, the error word, preparing the call);
and the cold start's parts (loading the
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
    raw_alloc, raw_delete = interface._raw_allocator(torch)
    stream = runtime.stream_getter()
    for paged in (True, False):
        q, k, v, lens, table = inputs(1, 1024, paged)
        api = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
        api()
        key_args = ((None, None), q, k, v, lens, table, None, None, None, None, None, None, None, None, False, (-1, -1),
                    0.0, True, 0, False)
        key, ptrs = interface._key(*key_args)
        call = interface._CALLS[key]
        s = stream()
        shape, device = tuple(q.shape), q.device
        rows = [
            ("whole API call", per_call_us(api)),
            ("prepared call alone (C: outputs, workspace, 2 launches)", per_call_us(lambda: call(ptrs, q, lens))),
            ("raise_pending", per_call_us(runtime.raise_pending)),
            ("the key (signature, in C)", per_call_us(lambda: interface._key(*key_args))),
            ("_CALLS lookup", per_call_us(lambda: interface._CALLS.get(key))),
            ("FAKV_CHECK_DATA read", per_call_us(interface._check_data)),
            ("torch.empty_like(q) (out)", per_call_us(lambda: torch.empty_like(q))),
            ("workspace: raw alloc + delete", per_call_us(lambda: raw_delete(raw_alloc(4096, s)))),
            ("stream()", per_call_us(stream)),
            ("whole API call, num_splits=1 (one launch)", per_call_us(lambda: fakv.flash_attn_with_kvcache(
                q, k, v, cache_seqlens=lens, block_table=table, num_splits=1))),
            ("q.shape", per_call_us(lambda: q.shape)),
            ("q.stride()", per_call_us(lambda: q.stride())),
            ("q.dtype", per_call_us(lambda: q.dtype)),
            ("q.get_device()", per_call_us(lambda: q.get_device())),
            ("q.data_ptr()", per_call_us(lambda: q.data_ptr())),
            ("torch.empty(shape, dtype=, device=)", per_call_us(
                lambda: torch.empty(shape, dtype=torch.bfloat16, device=device))),
            ("q.new_empty(shape)", per_call_us(lambda: q.new_empty(shape))),
        ]
        print(f"\nb1 s1024 {'paged 256' if paged else 'contiguous'}")
        for name, us in rows:
            print(f"  {name:56} {us:7.2f} us")


WARM = """
import time, torch, sys, collections
sys.path[:0] = {paths!r}
from bench_host import inputs
q, k, v, lens, table = inputs(8, 8192, True)
torch.cuda.synchronize()
t0 = time.perf_counter()
import fakv
t1 = time.perf_counter()
import fakv.interface as I, fakv.runtime as R, fakv.cache as C
t2 = time.perf_counter()
spent = collections.defaultdict(float)
def timed(owner, name, label):
    f = getattr(owner, name)
    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return f(*a, **kw)
        finally:
            spent[label] += time.perf_counter() - t
    setattr(owner, name, wrapper)
timed(I._Lazy, "resolve", "import the kernels (kernels/*.py; not when indexed)")
timed(C, "load", "read the disk cache (cubin + facts)")
timed(C, "kernels_version", "hash the kernels' and frontend's files")
timed(I, "_indexed", "the cache's index (its entry and binaries)")
timed(R.GPUKernel, "__init__", "GPUKernel (the cubin into a _runtime.Kernel)")
timed(I, "errors_for", "the error word (host-mapped memory)")
timed(I, "_prepare", "_prepare (specialise, kernels, PreparedCall)")
timed(I, "_attention", "_attention (the whole first call's Python path)")
out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
t3 = time.perf_counter()
torch.cuda.synchronize()
t4 = time.perf_counter()
out = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
torch.cuda.synchronize()
t5 = time.perf_counter()
print(f"import fakv {{(t1 - t0) * 1e3:.2f}} ms; import fakv.interface (and jit, runtime) {{(t2 - t1) * 1e3:.2f}} ms")
print(f"first call {{(t3 - t2) * 1e3:.2f}} ms until it returns, {{(t4 - t2) * 1e3:.2f}} ms with the synchronize; "
      f"second call with the synchronize {{(t5 - t4) * 1e3:.2f}} ms")
for label, sec in spent.items():
    print(f"  {{label:58}} {{sec * 1e3:7.2f}} ms")
print("fakv modules imported:", " ".join(sorted(m[5:] for m in sys.modules if m.startswith("fakv."))))
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


# What a warm start imports after torch (python -X importtime, microseconds): the modules whose import
# took 200 us or more, with what they imported.
IMPORTS = """
import sys, torch
print("--- after torch ---", file=sys.stderr, flush=True)
import fakv, fakv.interface, fakv.kernels.decode, fakv.kernels.combine
"""


# The warm start under cProfile (the import of the API and the first call): the functions that take its time.
PROFILED = WARM.replace("t1 = time.perf_counter()", "import cProfile, pstats; pr = cProfile.Profile(); "
                        "t1 = time.perf_counter(); pr.enable()", 1).replace(
    "t3 = time.perf_counter()", "t3 = time.perf_counter(); pr.disable()", 1) + """
pstats.Stats(pr).sort_stats("tottime").print_stats(25)
pstats.Stats(pr).sort_stats("cumulative").print_stats(30)
"""


def starts():
    paths = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, FAKV_CACHE_DIR=cache)
        for name, script in (("cold", COLD), ("warm", WARM), ("warm, under cProfile", PROFILED)):
            r = subprocess.run([sys.executable, "-c", script.format(paths=paths)], env=env, capture_output=True,
                               text=True, timeout=300)
            print(f"\n--- {name} start ---\n{r.stdout}{r.stderr[-4000:]}")
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", IMPORTS], capture_output=True, text=True,
                       timeout=120)
    lines = r.stderr.split("--- after torch ---")[-1].splitlines()
    print("--- a warm start's imports after torch (-X importtime: self us | cumulative us | module) ---")
    print("\n".join(x for x in lines if "|" in x and x.split("|")[1].strip().isdigit()
                    and int(x.split("|")[1]) >= 200))


if __name__ == "__main__":
    steps()
    starts()
