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


def event_ms(run, iters):
    """The GPU milliseconds of each of `iters` runs of `run()`, by CUDA events."""
    import torch
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return times


def graph_time_ms(calls, replays=10, warmup=2, fallback=True, warm_s=WARM_S):
    """(median GPU ms per call, "graph") of `calls`, each run once per
    replay of a CUDA graph that holds them all, after `warm_s` seconds of
    replays; timed as launched, (ms, "eager"), when they cannot be captured
    and `fallback`, else the capture's exception propagates."""
    import torch
    for _ in range(warmup):
        for c in calls:
            c()
    torch.cuda.synchronize()
    mode = "graph"
    try:
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for c in calls:
                c()
        replay = g.replay
    except Exception:  # noqa: BLE001
        if not fallback:
            raise
        torch.cuda.synchronize()
        mode = "eager"

        def replay():
            for c in calls:
                c()
    replay()
    start = time.perf_counter()
    while time.perf_counter() - start < warm_s:
        replay()
        torch.cuda.synchronize()
    return statistics.median(event_ms(replay, replays)) / len(calls), mode
