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
    from fakv import prepare, runtime
    from bench_host import inputs
    raw_alloc, raw_delete = prepare.raw_allocator(torch, torch.cuda.current_device())
    stream = runtime.stream_getter()
    for paged in (True, False):
        q, k, v, lens, table = inputs(1, 1024, paged)
        whole = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
        whole()
        key_args = ((None, None), q, k, v, lens, table, None, None, None, None, None, None, None, None, False, (-1, -1),
                    0.0, True, 0, False)
        key, ptrs = prepare.key(*key_args)
        call = prepare.CALLS[key]
        s = stream()
        assert prepare.run(prepare.CALLS, key_args[0], prepare.extras(), *key_args[1:]) is not None   # (a call)
        shape, device = tuple(q.shape), q.device
        rows = [
            ("whole API call", per_call_us(whole)),
            ("prepared call alone (C: outputs, workspace, 2 launches)", per_call_us(lambda: call(ptrs, q, lens))),
            ("raise_pending", per_call_us(runtime.raise_pending)),
            ("the key (signature, in C)", per_call_us(lambda: prepare.key(*key_args))),
            ("CALLS lookup", per_call_us(lambda: prepare.CALLS.get(key))),
            ("FAKV_CHECK_DATA read", per_call_us(prepare.check_data)),
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
            ("the key, then the prepared call (by hand, in Python)", per_call_us(
                lambda: prepare.CALLS[prepare.key(*key_args)[0]](ptrs, q, lens))),
            ("the fast path in C (_runtime.run_prepared)", per_call_us(
                lambda: prepare.run(prepare.CALLS, key_args[0], prepare.extras(), *key_args[1:]))),
            ("whole API call, again (the host's drift since the first row)", per_call_us(whole)),
        ]
        print(f"\nb1 s1024 {'paged 256' if paged else 'contiguous'}")
        for name, us in rows:
            print(f"  {name:56} {us:7.2f} us")


WARM = """
import time, torch, sys, os, collections, json
sys.path[:0] = {paths!r}
from bench_host import inputs
q, k, v, lens, table = inputs(8, 8192, True)
torch.cuda.synchronize()
t0 = time.perf_counter()
import fakv
t1 = time.perf_counter()
api = fakv.flash_attn_with_kvcache          # (as a user's first call loads it: fakv.__getattr__, the GC paused)
t2 = time.perf_counter()
import fakv.api as A, fakv.prepare as P, fakv.recipes as RC, fakv.runtime as R, fakv.cache as C, fakv.tensors as T
if os.environ.get("FAKV_RECIPES") == "0":    # (the slow path's spans: fakv.interface imported before the call)
    import fakv.interface as I
spent = collections.defaultdict(float)
def timed(owner, name, label, static=False):
    f = getattr(owner, name)
    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return f(*a, **kw)
        finally:
            spent[label] += time.perf_counter() - t
    setattr(owner, name, staticmethod(wrapper) if static else wrapper)
for owner, name, label, *static in SPANS:
    if owner != "I" or "I" in globals():
        timed(eval(owner), name, label, *static)
out = api(q, k, v, cache_seqlens=lens, block_table=table)
t3 = time.perf_counter()
torch.cuda.synchronize()
t4 = time.perf_counter()
out = api(q, k, v, cache_seqlens=lens, block_table=table)
torch.cuda.synchronize()
t5 = time.perf_counter()
print(json.dumps(dict(spent, **{{"import fakv": t1 - t0, "the API (fakv.flash_attn_with_kvcache)": t2 - t1,
                                "first call, until it returns": t3 - t2, "first call, synchronized": t4 - t2,
                                "second call, synchronized": t5 - t4,
                                "modules": sorted(m[5:] for m in sys.modules if m.startswith("fakv."))}})))
"""

# The first call's spans (nested ones count inside their callers'; each the sum over its calls). A recipe's
# call (api._from_recipe), or with FAKV_RECIPES=0 the slow path's (interface._attention).
SPANS = [
    ("R", "raise_pending", "raise_pending"),
    ("A", "_from_recipe", "_from_recipe (a call from its recipe)"),
    ("RC", "key_of", "  recipes.key_of"),
    ("RC", "load", "  recipes.load (read, parse)"),
    ("I", "_attention", "_attention (the slow path)"),
    ("T", "device_properties", "  device_properties (SMs, L2, GB/s)"),
    ("C", "kernels_version", "    kernels_version (stat the sources)"),
    ("I", "plan", "  plan"),
    ("I", "_capturing", "  _capturing (torch)"),
    ("P", "errors_for", "  errors_for (the error word)"),
    ("P", "call", "  prepare.call"),
    ("P", "specialise_all", "    specialise_all"),
    ("P", "index_key", "      index_key (arg kinds, kernels_version)"),
    ("C", "load_index", "      load_index (read, sha256)"),
    ("R.GPUKernel", "__init__", "    GPUKernel (cuModuleLoad, Kernel)"),
    ("R", "stream_getter", "    stream_getter"),
    ("P", "raw_allocator", "    raw_allocator"),
    ("P", "key", "  key (signature)"),
    ("R", "error_word", "  error_word (the native thread joined)"),
]


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
import fakv, fakv.api, fakv.recipes
"""


def starts(reps=7):
    import json
    import statistics
    paths = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, FAKV_CACHE_DIR=cache)
        r = subprocess.run([sys.executable, "-c", COLD.format(paths=paths)], env=env, capture_output=True,
                           text=True, timeout=300)
        print(f"\n--- cold start ---\n{r.stdout}{r.stderr[-4000:]}")
        warm = WARM.format(paths=paths).replace("SPANS", repr(SPANS))
        runs = []
        for _ in range(reps):
            r = subprocess.run([sys.executable, "-c", warm], env=env, capture_output=True, text=True, timeout=300)
            if r.returncode:
                print(r.stderr[-4000:])
                return
            runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    print(f"\n--- warm start (ms; medians of {reps} fresh processes, the cache filled) ---")
    for label in runs[0]:
        if label != "modules":
            values = sorted(run.get(label, 0.0) * 1e3 for run in runs)
            print(f"  {label:52} {statistics.median(values):7.2f}   [{values[0]:.2f}-{values[-1]:.2f}]")
    print("fakv modules imported:", " ".join(runs[0]["modules"]))
    r = subprocess.run([sys.executable, "-X", "importtime", "-c", IMPORTS], capture_output=True, text=True,
                       timeout=120)
    lines = r.stderr.split("--- after torch ---")[-1].splitlines()
    print("--- a warm start's imports after torch (-X importtime: self us | cumulative us | module) ---")
    print("\n".join(x for x in lines if "|" in x and x.split("|")[1].strip().isdigit()
                    and int(x.split("|")[1]) >= 200))


if __name__ == "__main__":
    steps()
    starts()
