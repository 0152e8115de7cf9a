#!/usr/bin/env python3
"""Power and clocks per implementation under sustained load (the GPU machine,
FlashInfer on the path as bench/README.md says): each implementation's CUDA
graph (bench_grid.py's calls over rotating caches) replayed 0.5 s, then ~0.3 s
of replays queued while NVML is read every 2 ms: GPU time per call, the SM
clock (median and range), the power draw and the clock-event reasons seen
(0x4: the software power cap). Two rounds, the implementations interleaved.

    python bench/power_probe.py [--cells "MHA b8 s16K@0,b32 s16K@0"] [--peers flashinfer,flashinfer-tc,sdpa]

Cells are bench_grid.py's SHAPES and MORE_SHAPES (@0: contiguous, @N: pages
of N). Peer `bare`: stream_balance.py's bare TMA ring reading the cell's
bytes in batch x kv heads equal blocks (timeline.py's --bare "tma2kv
static"). docs/gpu-results.md, sessions 11 and 12 (the SM clock
read after the replays, the earlier form of this probe) and 26 (fakv holds
1980 MHz, no reason; FlashInfer's CUDA-core decode 1485-1515 MHz at the cap).
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_grid as G  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", default="MHA b8 s16K@0,b32 s16K@0")
    ap.add_argument("--peers", default="flashinfer,flashinfer-tc,sdpa")
    args = ap.parse_args()
    import torch
    import pynvml
    pynvml.nvmlInit()
    nvml = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    shapes = G.shapes_by_name()
    for spec in args.cells.split(","):
        name, _, page = spec.strip().partition("@")
        cell = G.Cell(shapes[name], int(page or 0))
        runs = {"fakv": G.fakv_calls(cell)}
        for p in filter(None, args.peers.split(",")):
            if p == "bare":
                from stream_balance import Reader
                _, calls = Reader(cell.kv_bytes).cell_calls("tma2kv static", cell)
                runs[p] = lambda i, calls=calls: calls[i % 2]()
            else:
                runs[p] = G.peer_calls(cell, p, shapes[name][6])
        for rnd in range(2):
            for label, run in runs.items():
                if run is None:
                    continue
                for _ in range(3):
                    run(0)
                torch.cuda.synchronize()
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for i in range(cell.copies):
                        run(i)
                start = time.perf_counter()
                while time.perf_counter() - start < 0.5:
                    graph.replay()
                    torch.cuda.synchronize()
                n = max(1, int(0.3 / (cell.kv_bytes / 4.4e12) / cell.copies))
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                for _ in range(n):
                    graph.replay()
                b.record()
                clocks, reasons, power = [], set(), []
                while not b.query():
                    clocks.append(pynvml.nvmlDeviceGetClockInfo(nvml, pynvml.NVML_CLOCK_SM))
                    reasons.add(pynvml.nvmlDeviceGetCurrentClocksEventReasons(nvml))
                    power.append(pynvml.nvmlDeviceGetPowerUsage(nvml) / 1000)
                    time.sleep(0.002)
                b.synchronize()
                us = a.elapsed_time(b) * 1e3 / (n * cell.copies)
                print(f"{spec} r{rnd} {label:14} {us:8.1f} us  SM {statistics.median(clocks):.0f} MHz "
                      f"[{min(clocks)}-{max(clocks)}] ({len(clocks)} reads)  {statistics.median(power):.0f} W  "
                      f"reasons {sorted(hex(r) for r in reasons)}", flush=True)
                del graph
        del cell, runs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
