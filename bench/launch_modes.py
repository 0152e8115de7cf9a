#!/usr/bin/env python3
"""How the launch modes change an API call's GPU time: programmatic
dependent launch (FAKV_DEPENDENT_LAUNCH; lowering/DependentLaunch.cpp, the
runtime's cuLaunchKernelEx) and decode merging its own splits
(FAKV_MERGE_SPLITS=1: one launch instead of decode + combine), and the
new keys appended by a kernel of their own before decode
(FAKV_FUSED_APPEND=0) instead of by decode itself. GPU time per
call from CUDA graphs of 20 calls, each mode in a process of its own (the
variables are read when a kernel is loaded, or at import):

    python bench/launch_modes.py            # every mode, a table
    python bench/launch_modes.py --modes "default,append kernel"   # some of them
    python bench/launch_modes.py --child [CALL...]   # one mode (the environment's), some calls

Calls: bf16, 32/8 heads, d128, paged 256 (and contiguous), batch 1 and 32,
with and without a one-token append (with and without rotary) (bench_decode.py's
append_rows), and b1 s8192 with 2 to 16 splits (the merge's cost against the
split count). A call that cannot be captured is reported, not timed as
launched.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
import source_tree  # noqa: E402,F401
from timing import graph_time_ms  # noqa: E402

MODES = {"default": {}, "no PDL": {"FAKV_DEPENDENT_LAUNCH": "0"}, "all PDL": {"FAKV_DEPENDENT_LAUNCH": "1"},
         "merge": {"FAKV_MERGE_SPLITS": "1"}, "merge, all PDL": {"FAKV_MERGE_SPLITS": "1", "FAKV_DEPENDENT_LAUNCH": "1"},
         "append kernel": {"FAKV_FUSED_APPEND": "0"}}
# (batch, seqlen_k, paged, appended: "" / "append" / "append, rotary", num_splits)
CASES = [(1, 1024, True, ""), (1, 1024, False, ""), (1, 8192, True, ""), (1, 8192, True, "append"),
         (1, 8192, True, "append, rotary"), (1, 8192, False, ""), (8, 8192, True, ""), (32, 8192, True, ""),
         (32, 8192, True, "append"), (32, 8192, True, "append, rotary")]
CASES = [c + (0,) for c in CASES] + [(1, 8192, True, "", n) for n in (2, 4, 8, 16)]


def child():
    import torch
    import fakv
    from bench_decode import D, HK, inputs
    only = sys.argv[2:]
    for b, s, paged, append, splits in CASES:
        name = f"b{b} s{s} {'paged 256' if paged else 'contiguous'}{' + ' + append if append else ''}" + \
            (f" {splits} splits" if splits else "")
        if only and name not in only:
            continue
        q, k, v, lens, table = inputs(torch, paged, B=b, S=s)
        kw = {}
        if append:
            lens -= 1
            g = torch.Generator(device="cuda").manual_seed(1)
            kn, vn = (torch.randn((b, 1, HK, D), device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(2))
            angle = torch.rand((s, D // 2), device="cuda", generator=g)
            kw = dict(k=kn, v=vn)
            if "rotary" in append:
                kw.update(rotary_cos=angle.cos().to(torch.bfloat16), rotary_sin=angle.sin().to(torch.bfloat16))
        call = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,  # noqa: E731
                                                    num_splits=splits, **kw)
        try:
            t, _ = graph_time_ms([call] * 20, replays=15, warmup=3, fallback=False)
            print(f"{name}\t{t * 1e3:.2f}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"{name}\tcapture failed: {type(e).__name__}: {e}", flush=True)


def main():
    if "--child" in sys.argv:
        child()
        return
    modes = MODES
    if "--modes" in sys.argv:
        names = sys.argv[sys.argv.index("--modes") + 1].split(",")
        modes = {m: MODES[m] for m in names}
    results = {}
    for mode, settings in modes.items():
        env = {k: v for k, v in os.environ.items()
               if k not in ("FAKV_DEPENDENT_LAUNCH", "FAKV_MERGE_SPLITS", "FAKV_FUSED_APPEND")}
        env.update(settings)
        out = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True)
        if out.returncode:
            print(f"mode {mode}: rc {out.returncode}\n{out.stderr[-2000:]}")
        for line in out.stdout.splitlines():
            name, _, value = line.partition("\t")
            results.setdefault(name, {})[mode] = value
    print("GPU time per call (us), CUDA graphs of 20 calls; columns: " +
          "; ".join(f"{m}: {' '.join(f'{k}={v}' for k, v in s.items()) or 'neither set'}" for m, s in modes.items()))
    print(f"{'call':<42}" + "".join(f"{m:>16}" for m in modes))
    for name, row in results.items():
        print(f"{name:<42}" + "".join(f"{row.get(m, ''):>16}" for m in modes))


if __name__ == "__main__":
    main()
