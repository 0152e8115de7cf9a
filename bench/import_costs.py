#!/usr/bin/env python3
"""What each module of a warm start costs to import on the GPU machine:
fresh processes that import torch and make a CUDA tensor, then import
fakv's warm-path modules one at a time in dependency order (fakv.api's
import also starts the error word's thread), then the slow path's (medians of 7);
also unmarshalling fakv.interface's .pyc and executing it again, a Python
thread started and joined, and dlopen of libcuda.so.1 (RTLD_NOW against
RTLD_LAZY) after torch. Diagnostics for bench_host.py's warm start, beside
profile_host.py (docs/decisions.md, "Where a warm start's time goes").

    python bench/import_costs.py
"""
import subprocess, sys, json, statistics
CHILD = r'''
import time, sys, importlib, gc, json
import torch
torch.empty(1, device="cuda")
print("meta_path:", [type(f).__name__ if not isinstance(f, type) else f.__name__ for f in sys.meta_path], file=sys.stderr)
print("path_hooks:", len(sys.path_hooks), "sys.path:", len(sys.path), file=sys.stderr)
out = {}
for m in ["fakv", "fakv._build_id", "fakv.errors", "fakv.compiled", "fakv.tensors", "fakv.runtime", "fakv.cache",
          "fakv._runtime", "fakv.prepare", "fakv.recipes", "fakv.api",        # (a warm start's, in order)
          "fakv.signature", "fakv.heuristics", "fakv.lengths_hint", "fakv.interface"]:      # (the slow path's)
    t = time.perf_counter(); importlib.import_module(m); out[m] = time.perf_counter() - t
from fakv import _runtime
t = time.perf_counter(); _runtime.current_context(); out["_runtime.current_context() (the driver loaded: RTLD_NOW)"] = time.perf_counter() - t
import fakv.runtime as R
t = time.perf_counter(); R.start_error_word(); out["start_error_word (again: no-op)"] = time.perf_counter() - t
import marshal, importlib.util, os
p = importlib.util.cache_from_source(sys.modules["fakv.interface"].__file__)
data = open(p, "rb").read()
t = time.perf_counter(); code = marshal.loads(data[16:]); out["unmarshal interface.pyc"] = time.perf_counter() - t
t = time.perf_counter(); exec(code, {"__name__": "fakv.interface_copy", "__package__": "fakv"}); out["exec interface (again)"] = time.perf_counter() - t
t = time.perf_counter()
for i in range(1000): pass
out["loop 1000"] = time.perf_counter() - t
print(json.dumps(out))
'''
DLOPEN = r'''
import time, sys, os, ctypes, json
import torch
torch.empty(1, device="cuda")
mode = {"now": os.RTLD_NOW, "lazy": os.RTLD_LAZY}[sys.argv[1]] | os.RTLD_LOCAL
t = time.perf_counter(); ctypes.CDLL("libcuda.so.1", mode=mode); dt = time.perf_counter() - t
t = time.perf_counter(); th = __import__("threading").Thread(target=lambda: None); th.start(); th.join(); dt2 = time.perf_counter() - t
print(json.dumps([dt, dt2]))
'''
for mode in ("now", "lazy", "now", "lazy", "now", "lazy"):
    r = subprocess.run([sys.executable, "-c", DLOPEN, mode], capture_output=True, text=True)
    print(f"dlopen libcuda.so.1 after torch, {mode}:", r.stdout.strip() or r.stderr[-500:])
runs = []
for i in range(7):
    r = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
    if r.returncode:
        print(r.stderr[-3000:]); sys.exit(1)
    if i == 0:
        print(r.stderr.strip()[-600:])
    runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
print("import costs after torch (us, median of 7 fresh processes; each module alone, in dependency order):")
for k in runs[0]:
    v = sorted(r[k] * 1e6 for r in runs)
    print(f"  {k:36} {statistics.median(v):8.0f}  [{v[0]:.0f}-{v[-1]:.0f}]")
