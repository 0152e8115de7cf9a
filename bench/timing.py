"""GPU timing shared by the benches: CUDA events around a callable, and the
GPU time per call of calls replayed from a CUDA graph (so that no host work
shows in the time)."""
import statistics
import time

# Seconds of replays before a graph is timed (bench_grid.py --sustain). 0: the GPU at the clocks its last work left
# it at. Under sustained load the H200 reaches its 700 W cap and lowers the SM clock of whatever draws the most
# (docs/gpu-results.md, session 11: fakv 1545-1605 MHz against FlashInfer's and cuDNN's 1905-1920 at 1.5 s; session 12's
# swapped dots: fakv 1980 MHz).
WARM_S = 0.0
# GPU clock cycles of torch.cuda._sleep queued before each timed run's start event (~50 us at the H200's 1.98 GHz,
# ~100 at 1 GHz): the stream busy while the host launches the run, so that the start event is stamped when the
# run's first kernel can begin, not a launch's host time earlier. On an idle stream a graph replay's 2-5 us of
# host work counted as GPU time: up to 2 % of a 245 us call timed alone, half that for two calls a graph, and
# ~0.5 % of the 2 GiB copy (session 37's review of bench/; what Triton's do_bench gets from its L2 flush). Runs
# before session 37 were timed without it.
BUSY_CYCLES = 100_000


def need_cuda(script):
    """torch, with a CUDA device to run on, or a one-line exit naming `script` (a bench run where torch or the
    GPU is missing ended in a traceback)."""
    try:
        import torch
    except ImportError:
        raise SystemExit(f"{script} runs on a CUDA GPU with torch; this Python has no torch (its --compile-only "
                         f"mode, where it has one, needs neither)") from None
    if not torch.cuda.is_available():
        raise SystemExit(f"{script} runs on a CUDA GPU; torch finds none here")
    return torch


def event_ms(run, iters, busy_cycles=BUSY_CYCLES):
    """The GPU milliseconds of each of `iters` runs of `run()`, by CUDA events: each run's start event
    queued behind `busy_cycles` of torch.cuda._sleep (0: on the stream as it is, idle after the last run,
    so that the host's launch work counts too)."""
    import torch
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if busy_cycles:
            torch.cuda._sleep(busy_cycles)
        a.record()
        run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return times


def copy_ms(dst, src, reps=5, iters=10):
    """The GPU milliseconds of one dst.copy_(src): median of `iters` runs of `reps` copies, each run's launch
    behind the sleep as a graph replay's is (not captured: a captured copy becomes a DMA memcpy node, slower)."""
    dst.copy_(src)
    return statistics.median(event_ms(lambda: [dst.copy_(src) for _ in range(reps)], iters)) / reps


def graph_time_ms(calls, replays=10, warmup=2, fallback=True, warm_s=WARM_S, outputs=None):
    """(median GPU ms per call, "graph") of `calls`, each run once per
    replay of a CUDA graph that holds them all, after `warm_s` seconds of
    replays, each replay's start event behind BUSY_CYCLES of sleep (the
    replay's launch not counted); timed as launched, (ms, "eager"), the
    host's work included, when they cannot be captured and `fallback`,
    else the capture's exception propagates. A list as `outputs` receives
    what each call returned in the last replay timed (the graph's own
    tensors), for the caller to check."""
    import torch
    for _ in range(warmup):
        for c in calls:
            c()
    torch.cuda.synchronize()
    mode = "graph"
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            returned = [c() for c in calls]
        replay = g.replay
    except Exception:  # noqa: BLE001
        if not fallback:
            raise
        torch.cuda.synchronize()
        mode = "eager"

        def replay():
            returned[:] = [c() for c in calls]
        returned = []
    replay()
    start = time.perf_counter()
    while time.perf_counter() - start < warm_s:
        replay()
        torch.cuda.synchronize()
    busy = BUSY_CYCLES if mode == "graph" else 0
    ms = statistics.median(event_ms(replay, replays, busy)) / len(calls)
    if outputs is not None:
        outputs[:] = returned
    return ms, mode
