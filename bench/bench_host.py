#!/usr/bin/env python3
"""Host costs of fakv.flash_attn_with_kvcache next to a Triton split-KV
decode (bench/peers/triton_decode.py), measured in one run on the GPU
machine:

- cold first call: a fresh process and an empty kernel cache; the time of
  `import fakv` (`import triton` and the peer module) and of the first call
  (decode and combine compiled, loaded and run, synchronised), after torch
  and the inputs are ready. Five rounds of a fresh process per library and
  kind (fakv and Triton in turn), medians.
- warm start: the same in a fresh process with the cache filled.
- eager overhead per call: the time per call of 500 calls in a row
  (synchronised at the end) minus the GPU time per call of the same call
  replayed from a CUDA graph (10 calls), at batch 1 / 1024 keys and batch 8
  / 8192 keys, paged (256) and contiguous, and at b1 s1024 paged over 32
  layers' caches in turn (a model's decode step: each call's caches its
  own, as in no other case); also the host time per call
  alone (before the synchronise). Nine rounds, each timing every case and
  library in turn (none always first), medians; beside them the best
  round's overhead and the host's speed during each case's rounds (a Python
  loop's time: a lent host also slows 1.5-1.9 times within a run, for
  seconds, fakv and Triton alike).
- no sync: a call queued behind ~50 ms of GPU work (torch.cuda._sleep):
  its host time, and whether the GPU was still busy when it returned.
- the host cost of a CUDA-graph replay of one API call.
- the host's speed: torch.empty_like of a small tensor, a tensor's
  stride(), an empty Python loop (the lent machines' hosts differ by up to
  60 % between leases, and every host figure above with them).

Shapes: bf16, 32 query / 8 kv heads, head dim 128, seqlen_q 1, num_splits
0 (each library's own choice). fakv runs with its default checks.

    python bench/bench_host.py [--reps 5] [--json OUT] [--no-recipes]
"""
import argparse
import functools
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H, HK, D, PAGE = 32, 8, 128, 256


LAYERS = 32        # the eager case of a model's decode step: layers called in turn, each with its own caches


def inputs(batch, seqlen, paged):
    import torch
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn((batch, 1, H, D), device="cuda", dtype=torch.bfloat16, generator=g)
    shape = (batch * seqlen // PAGE, PAGE, HK, D) if paged else (batch, seqlen, HK, D)
    k = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(shape, device="cuda", dtype=torch.bfloat16, generator=g)
    table = (torch.randperm(batch * seqlen // PAGE, device="cuda", generator=g).to(torch.int32)
             .reshape(batch, seqlen // PAGE)) if paged else None
    lens = torch.full((batch,), seqlen, dtype=torch.int32, device="cuda")
    return q, k, v, lens, table


def library(name):
    """(call(q, k, v, lens, table), import seconds) of fakv or the Triton peer."""
    t = time.perf_counter()
    if name.startswith("fakv"):
        import fakv
        call = lambda q, k, v, lens, table: fakv.flash_attn_with_kvcache(  # noqa: E731
            q, k, v, cache_seqlens=lens, block_table=table)
    else:
        sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
        import triton_decode
        call = triton_decode.decode
    return call, time.perf_counter() - t


def child(kind, name):
    """One start-up measurement in this (fresh) process: JSON on stdout."""
    import torch
    torch.cuda.init()
    q, k, v, lens, table = inputs(8, 8192, True)
    torch.cuda.synchronize()
    call, import_s = library(name)
    t = time.perf_counter()
    out = call(q, k, v, lens, table)
    torch.cuda.synchronize()
    first_s = time.perf_counter() - t
    ok = bool(torch.isfinite(out.float()).all())
    print(json.dumps({"import_ms": import_s * 1e3, "first_call_ms": first_s * 1e3,
                      "total_ms": (import_s + first_s) * 1e3, "finite": ok}))


def start_times(names, reps):
    """Cold and warm start-up of each library of `names`, each in fresh processes: `reps` rounds, each timing
    every library in turn (a fresh cache each), medians."""
    sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
    import source_tree  # noqa: F401
    rows = {name: {"cold": [], "warm": []} for name in names}
    for _ in range(reps):
        for name in names:
            with tempfile.TemporaryDirectory(prefix="bench-host-cache-") as cache:
                env = dict(os.environ, FAKV_CACHE_DIR=cache, TRITON_CACHE_DIR=cache,
                           **({"FAKV_RECIPES": "0"} if name == "fakv-no-recipes" else {}),
                           PYTHONPATH=os.pathsep.join(filter(None, [
                               os.path.dirname(os.path.dirname(sys.modules["fakv"].__file__))
                               if "fakv" in sys.modules else None, os.environ.get("PYTHONPATH")])))
                for kind in ("cold", "warm"):
                    r = subprocess.run([sys.executable, __file__, "--child", kind, name], env=env,
                                       capture_output=True, text=True, timeout=600)
                    if r.returncode:
                        raise RuntimeError(f"{name} {kind} start failed:\n{r.stderr[-3000:]}")
                    rows[name][kind].append(json.loads(r.stdout.strip().splitlines()[-1]))
    return {name: {kind: {key: statistics.median(r[key] for r in runs) for key in ("import_ms", "first_call_ms",
                                                                                   "total_ms")}
                   for kind, runs in by_kind.items()} for name, by_kind in rows.items()}


def gpu_us(fn, reps=10, iters=20):
    """GPU microseconds per call, replayed from a CUDA graph of `reps` calls."""
    from timing import graph_time_ms
    return graph_time_ms([fn] * reps, replays=iters, warmup=0, fallback=False)[0] * 1e3


def warmed(fn, calls=20):
    """fn's first output, after `calls` more calls (compiled, planned, its
    lengths hint copied), synchronised."""
    import torch
    out = fn()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return out


def eager_round(fn, n=500):
    """(time per call of n calls in a row, synchronised; host time per call
    before the synchronise), microseconds."""
    import torch
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    h = time.perf_counter()
    torch.cuda.synchronize()
    e = time.perf_counter()
    return (e - t) / n * 1e6, (h - t) / n * 1e6


def eager_us(fn, n=500, rounds=9):
    """eager_round's two figures, medians over `rounds`."""
    times = [eager_round(fn, n) for _ in range(rounds)]
    return statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)


def steady(calls, rounds=9):
    """Every case's GPU time, then its eager and host time per call: rounds
    that interleave the cases (b1 and b8, paged and contiguous, each library:
    no case always measured first), medians."""
    cases = []
    for batch, seqlen in ((1, 1024), (8, 8192)):
        for paged in (True, False):
            q, k, v, lens, table = inputs(batch, seqlen, paged)
            ref = None
            for name, call in calls:
                fn = functools.partial(call, q, k, v, lens, table)
                out = warmed(fn)
                ref = out if ref is None else ref
                err = (out.float() - ref.float()).abs().max().item()
                cases.append([f"b{batch} s{seqlen} {'paged 256' if paged else 'contiguous'}", name, fn, gpu_us(fn),
                              err, []])
    # A model's decode step: one call per layer, each layer's caches its own (the same shapes).
    layers = [inputs(1, 1024, True) for _ in range(LAYERS)]
    ref = None
    for name, call in calls:
        turn = itertools.cycle(layers)
        fn = lambda call=call, turn=turn: call(*next(turn))  # noqa: E731
        out = warmed(fn, calls=2 * LAYERS - 1)                # (ends on the last layer: the next call is layer 0's)
        ref = out if ref is None else ref
        cases.append([f"b1 s1024 paged 256 L{LAYERS}", name, fn, gpu_us(fn), (out.float() - ref.float()).abs().max().item(),
                      []])
    for _ in range(rounds):
        for case in cases:
            case[5].append(eager_round(case[2]) + (python_loop_us(),))
    rows = []
    for label, name, _, gpu, err, times in cases:
        eager, host = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
        rows.append((label, name, gpu, eager, eager - gpu, host, err, min(t[0] for t in times) - gpu,
                     statistics.median(t[2] for t in times)))
    return rows


def python_loop_us(n=20):
    """The host's speed right now: microseconds of a Python loop of 1000
    empty iterations (median of n)."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        for _ in range(1000):
            pass
        times.append((time.perf_counter() - t) * 1e6)
    return statistics.median(times)


def fakv_variants():
    """The same measures for fakv calls beside the plain one, at b1 s1024:
    with a one-token append and rotary (k, v, rotary_cos/sin: a prepared
    call, as the plain one), and with FAKV_MERGE_SPLITS (decode merges its
    splits: one launch)."""
    import torch
    import fakv
    from fakv import prepare
    rows = []
    for paged in (True, False):
        q, k, v, lens, table = inputs(1, 1024, paged)
        g = torch.Generator(device="cuda").manual_seed(1)
        kn, vn = (torch.randn((1, 1) + tuple(k.shape[2:]), device="cuda", dtype=q.dtype, generator=g)
                  for _ in range(2))
        angle = torch.rand((1024, q.shape[-1] // 2), device="cuda", generator=g)
        cos, sin = angle.cos().to(q.dtype), angle.sin().to(q.dtype)
        lens1 = lens - 1
        append = lambda: fakv.flash_attn_with_kvcache(q, k, v, kn, vn, cos, sin, cache_seqlens=lens1,  # noqa: E731
                                                      block_table=table)
        plain = lambda: fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)  # noqa: E731
        for name, fn, merge in (("+append", append, False), ("merged", plain, True)):
            prepare.MERGE_SPLITS = merge
            warmed(fn)
            gpu = gpu_us(fn)
            times = [eager_round(fn) + (python_loop_us(),) for _ in range(9)]
            eager, host = statistics.median(t[0] for t in times), statistics.median(t[1] for t in times)
            rows.append((f"b1 s1024 {'paged 256' if paged else 'contiguous'}", f"fakv {name}", gpu, eager,
                         eager - gpu, host, float("nan"), min(t[0] for t in times) - gpu,
                         statistics.median(t[2] for t in times)))
        prepare.MERGE_SPLITS = False
    return rows


def no_sync(calls):
    import torch
    rows = []
    q, k, v, lens, table = inputs(8, 8192, True)
    for name, call in calls:
        call(q, k, v, lens, table)
        torch.cuda.synchronize()
        torch.cuda._sleep(100_000_000)                    # ~50 ms of GPU work queued first
        t = time.perf_counter()
        call(q, k, v, lens, table)
        host = time.perf_counter() - t
        busy = not torch.cuda.current_stream().query()
        torch.cuda.synchronize()
        rows.append((name, host * 1e3, busy))
    return rows


def graph_replay_us():
    import torch
    import fakv
    q, k, v, lens, table = inputs(1, 1024, True)
    fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fakv.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table)
    return eager_us(g.replay, n=200)[1]


def host_speed():
    """The lease's host speed, beside the figures it moves (medians of 9 rounds, microseconds per operation):
    torch.empty_like of a b1 query (the allocation every API call makes), a CUDA tensor's stride() (one of the
    accessors the call's key reads), and 1000 turns of an empty Python loop."""
    import torch
    q = inputs(1, 1024, True)[0]

    def per_op(fn, n=2000):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t) / n * 1e6

    def loop():
        for _ in range(1000):
            pass
    ops = {"torch.empty_like(q)": lambda: torch.empty_like(q), "q.stride()": q.stride, "python loop x1000": loop}
    rounds = {name: [] for name in ops}
    for _ in range(9):
        for name, fn in ops.items():
            rounds[name].append(per_op(fn, 200 if name.startswith("python") else 2000))
    return {name: statistics.median(v) for name, v in rounds.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--no-recipes", action="store_true",
                    help="start-up also as fakv-no-recipes: FAKV_RECIPES=0 (no recipes: the slow path's checks and "
                         "plan at a new process's first call), in the same rounds")
    args = ap.parse_args()
    if args.child:
        return child(*args.child)
    sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
    import source_tree  # noqa: F401
    from timing import need_cuda
    torch = need_cuda("bench/bench_host.py")
    import fakv
    import triton
    print(f"fakv from {os.path.dirname(fakv.__file__)}; triton {triton.__version__}; torch {torch.__version__}; "
          f"{torch.cuda.get_device_name()}")
    starts = start_times(("fakv", "fakv-no-recipes", "triton") if args.no_recipes else ("fakv", "triton"), args.reps)
    calls = [(name, library(name)[0]) for name in ("fakv", "triton")]
    rows = steady(calls) + fakv_variants()
    syncs = no_sync(calls)
    replay = graph_replay_us()
    speed = host_speed()

    print("\nstart-up (bf16 b8 s8192 32/8 d128 paged 256; ms, median of "
          f"{args.reps} fresh processes; import = import fakv, or import triton + the peer)")
    width = max(8, *map(len, starts))
    print(f"{'':{width}} {'':6} {'import':>8} {'1st call':>9} {'total':>8}")
    for name, s in starts.items():
        for kind in ("cold", "warm"):
            r = s[kind]
            print(f"{name:{width}} {kind:6} {r['import_ms']:8.1f} {r['first_call_ms']:9.1f} {r['total_ms']:8.1f}")
    print("\neager overhead per call (us, medians of 9 rounds interleaving the cases): eager = 500 calls in a row / 500; "
          "gpu = CUDA-graph replay; overhead = eager - gpu; best = the best round's overhead; host = host time per call "
          "before the sync; loop = the host's speed in those rounds (us for a Python loop of 1000, median)")
    print(f"{'case':22} {'':13} {'gpu':>7} {'eager':>7} {'overhead':>9} {'best':>6} {'host':>7} {'loop':>6}  "
          "max|out - fakv|")
    for case, name, gpu, eager, over, host, err, best, loop in rows:
        print(f"{case:22} {name:13} {gpu:7.1f} {eager:7.1f} {over:9.1f} {best:6.1f} {host:7.1f} {loop:6.1f}  "
              f"{err:.2e}")
    print("\nno sync: a call queued behind ~50 ms of GPU work (b8 s8192 paged)")
    for name, ms, busy in syncs:
        print(f"{name:8} returned after {ms:7.3f} ms, GPU still busy: {busy}")
    print(f"\nCUDA graph replay of one fakv API call (b1 s1024 paged): {replay:.1f} us of host time")
    print("\nthis host's speed (us an operation, medians of 9 rounds; the figures above move with it between leases): "
          + ", ".join(f"{name} {us:.2f}" for name, us in speed.items()))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"start": starts, "steady": rows, "no_sync": syncs, "graph_replay_us": replay,
                       "host_speed_us": speed}, f, indent=1)


if __name__ == "__main__":
    main()
