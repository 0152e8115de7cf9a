"""Checks an installed fakv (scripts/wheel.sh runs it on each wheel, in a
fresh venv, with /usr/lib/llvm-22 hidden): the CPU path against a float64
reference, and a compile for sm_90a (decode and combine) into an empty
kernel cache. Prints what it found; exits non-zero on a failure (explicit
checks, not asserts: python -O would drop those)."""
import os, sys, tempfile, numpy as np, ml_dtypes


def check(ok, what):
    if not ok:
        sys.exit(f"check_wheel: FAILED: {what}")


os.environ["FAKV_CACHE_DIR"] = tempfile.mkdtemp()
import fakv, fakv.ptx
print("fakv from", os.path.dirname(fakv.__file__), "python", sys.version.split()[0])
rng = np.random.default_rng(0)
q = rng.standard_normal((2, 1, 8, 64)).astype(ml_dtypes.bfloat16)
k = rng.standard_normal((2, 64, 2, 64)).astype(ml_dtypes.bfloat16)
v = rng.standard_normal((2, 64, 2, 64)).astype(ml_dtypes.bfloat16)
lens = np.array([10, 64], np.int32)
out, lse = fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, return_softmax_lse=True)
# float64 reference
qf, kf, vf = (x.astype(np.float64) for x in (q, k, v))
ref = np.zeros(q.shape)
for b in range(2):
    for h in range(8):
        s = qf[b, 0, h] @ kf[b, :lens[b], h // 4].T / 8.0
        p = np.exp(s - s.max()); ref[b, 0, h] = p @ vf[b, :lens[b], h // 4] / p.sum()
err = np.abs(out.astype(np.float64) - ref).max()
print("CPU path max |out - float64 ref| =", err)
check(err < 2e-2, f"CPU path error {err} >= 2e-2")
kc, vc = k.copy(), v.copy()                       # append one token (kernels/append.py)
kn, vn = (rng.standard_normal((2, 1, 2, 64)).astype(ml_dtypes.bfloat16) for _ in range(2))
fakv.flash_attn_with_kvcache(q, kc, vc, kn, vn, cache_seqlens=np.array([10, 63], np.int32))
check((kc[0, 10] == kn[0, 0]).all() and (vc[1, 63] == vn[1, 0]).all() and (kc[0, 11:] == k[0, 11:]).all(),
      "CPU path append: the new rows are not where they belong")
print("CPU path append: the new rows are in the caches")
os.environ["FAKV_COMPILE_ONLY"] = "1"
k = v = np.zeros((2, 512, 2, 64), ml_dtypes.bfloat16)     # enough key blocks for two splits
fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, num_splits=2)
files = os.listdir(os.environ["FAKV_CACHE_DIR"])
print("sm_90a compile: assembler", fakv.ptx.assembler(), "cache entries", len(files))
check(len([f for f in files if f.endswith(".cubin")]) == 2, f"two cubins expected: {sorted(files)}")
fakv.flash_attn_with_kvcache(q, k, v, kn, vn, cache_seqlens=np.array([10, 63], np.int32), num_splits=2)
files = os.listdir(os.environ["FAKV_CACHE_DIR"])
print("sm_90a compile with append: cache entries", len(files))
import json
names = {json.load(open(os.path.join(os.environ["FAKV_CACHE_DIR"], f)))["facts"]["kernels"][0]["name"]
         for f in files if f.endswith(".json")}
print("sm_90a kernels compiled:", sorted(names))
# A decode step: combine_new.py appends and attends the new keys; decode (no rotary) is the plain call's.
check(names == {"decode", "combine", "combine_new"}, f"kernels {sorted(names)}")
check(len([f for f in files if f.endswith(".cubin")]) == 3, f"three cubins expected: {sorted(files)}")
