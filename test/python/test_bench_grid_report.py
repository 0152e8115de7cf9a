"""bench/bench_grid.py's report (grid.md) from a run's cells, without a GPU: the best peer of a cell is one of
the peers (never fakv's own variants nor the bare read), a win is fakv within 1 % of it, and the footer counts
the caches of 1 GiB or more at 105 % of copy, each one below with the bare read's fraction where it was timed."""
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench_grid():
    paths = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "test", "gpu")]
    sys.path[:0] = paths
    try:
        import bench_grid
    finally:
        for p in paths:
            sys.path.remove(p)
    return bench_grid


def _impl(us, fraction):
    return {"us": us, "copy_fraction": fraction}


def test_report_best_peer_wins_and_the_bare_read():
    g = _bench_grid()
    gib = 1 << 30
    run = {"device": "H200", "date": "2026-12-04", "copy_tbps": 4.2, "layouts": [0, 16],
           "shapes": ["b32 s8K", "b1 s1K"], "cells": [
               {"shape": "b32 s8K", "layout": 0, "kv_bytes": gib, "impls": {
                   "fakv": _impl(242.0, 1.056), "bare": _impl(200.0, 1.20), "fakv-merge": _impl(100.0, 2.0),
                   "sdpa": _impl(241.0, 1.06), "triton": _impl(300.0, 0.85)}},
               {"shape": "b32 s8K", "layout": 16, "kv_bytes": gib, "impls": {
                   "fakv": _impl(250.0, 1.021), "bare": _impl(244.0, 1.046),
                   "flashinfer-tc": _impl(255.0, 1.0)}},
               {"shape": "b1 s1K", "layout": 0, "kv_bytes": 4 << 20, "impls": {
                   "fakv": _impl(5.3, 0.2), "triton": _impl(5.0, 0.21), "bare": {"failed": "not timed"}}}]}
    assert g.best_peer(run["cells"][0]) == (241.0, "sdpa")          # not the bare read, not fakv-merge
    assert g.best_peer(run["cells"][1]) == (255.0, "flashinfer-tc")
    md = g.markdown(run)
    assert "vs sdpa 241.0 µs (106.0%) **win**" in md                # 242.0 <= 1.01 x 241.0
    assert "vs triton 5.0 µs (21.0%) |" in md and "5.0 µs (21.0%) **win**" not in md     # 5.3 > 1.01 x 5.0
    assert "[merged splits: 100.0 µs]" in md
    assert "fakv at or ahead of the best peer (within 1 %): 2 of 3 cells (1 more than 1 % ahead, 1 within 1 % " \
           "either way, 1 behind)." in md                               # 250 vs 255 ahead; 242 vs 241 within
    assert "Caches of 1 GiB or more at 105 % of copy or more: 1 of 2; below: b32 s8K @16 (102.10%, the bare " \
           "read 104.60%)" in md
    assert "The bare read of the same bytes (no attention; stream_balance.py's tma2kvmap, in the cell's pages, " \
           "at head dims 64, 128 and 256, else tma2kv; of a ragged batch, about its bytes in equal sequences, " \
           "without its imbalance) in this run: 104.60% to 120.00% of copy over those 2 cells, " \
           "1 of them at 105 % or more." in md
    for cell in run["cells"]:                                        # no bare read timed: no bare line
        cell["impls"].pop("bare")
    md = g.markdown(run)
    assert "below: b32 s8K @16 (102.10%)" in md and "bare read" not in md
    run["cells"][1]["impls"]["fakv"]["copy_fraction"] = 1.04951     # (one decimal showed 105.0 % below 105)
    assert "below: b32 s8K @16 (104.95%)" in g.markdown(run)


def test_outputs_are_checked_against_their_size():
    """A long sequence's outputs average to ~0.03: an all-zero output must fail the check, a bf16 rounding
    (2 ulps) pass; large outputs keep the absolute TOLERANCE."""
    g = _bench_grid()
    assert not 0.03 <= g.tolerance(0.03)
    assert 2.4e-4 <= g.tolerance(0.03)
    assert g.tolerance(4.0) == g.TOLERANCE


def test_a_long_sequence_that_drops_its_last_keys_fails():
    """The grid's data (randn q, K, V in bf16, scale 1/sqrt(d)): a sequence of 32K keys read without its last
    64 keys (a page, or a tile) is past tolerance() of its output's size (the earlier 1e-3 + 5e-2 x size let it
    pass); its output rounded to bf16 (what every implementation returns) is well inside it."""
    import ml_dtypes
    g = _bench_grid()
    rng = np.random.default_rng(0)
    h, d, n = 8, 128, 32768
    bf = lambda a: a.astype(ml_dtypes.bfloat16).astype(np.float64)  # noqa: E731
    q, k, v = bf(rng.standard_normal((h, d))), bf(rng.standard_normal((n, d))), bf(rng.standard_normal((n, d)))

    def attend(keys):
        s = q @ k[:keys].T / np.sqrt(d)
        p = np.exp(s - s.max(1, keepdims=True))
        return (p / p.sum(1, keepdims=True)) @ v[:keys]
    ref = attend(n)
    size = np.abs(ref).max()
    assert np.abs(attend(n - 64) - ref).max() > g.tolerance(size)
    assert np.abs(bf(ref) - ref).max() < g.tolerance(size) / 4


def test_the_bare_read_has_blocks_for_every_sm():
    g = _bench_grid()
    assert g.bare_way(8, 8) == "tma2kvmap static 256 heads=8"            # b8 s32K: not 64 blocks
    assert g.bare_way(128, 8, 128, 16) == "tma2kvmap static 1024 heads=8 page=16"
    assert g.bare_way(8, 32, 128, 256) == "tma2kvmap static 256 heads=32 page=256"
    assert g.bare_way(32, 8, 64, 16) == "tma2kvmap static 256 heads=8 page=16 d=64"     # (head dims 64 and 256
    assert g.bare_way(8, 8, 256) == "tma2kvmap static 256 heads=8 d=256"                  # through maps too)
    assert g.bare_way(8, 8, 80) == "tma2kv static 256"


def test_the_bare_read_counts_whole_tiles_and_pages():
    """bare_bytes: tma2kvmap reads whole tiles (8192 / d rows: 64 at d128, 128 at d64, 32 at d256) and pages of
    each block's share of K and V; a 1-D read takes every byte."""
    g = _bench_grid()
    assert g.bare_bytes(1 << 30, "tma2kv static 256") == 1 << 30
    unit = 2 * 256 * 256 * 64                                        # K and V, 256 blocks, 64 rows of 256 bytes
    assert g.bare_bytes(1 << 30, "tma2kvmap static 256 heads=8") == (1 << 30) // unit * unit
    assert g.bare_bytes(1000 * unit + 5, "tma2kvmap static 256 heads=8 page=256") == 1000 * unit // (4 * unit) * 4 * unit
    unit64 = 2 * 256 * 128 * 128                                     # d64: 128-row tiles of 128 bytes
    assert g.bare_bytes(3 * unit64 + 7, "tma2kvmap static 256 heads=8 d=64") == 3 * unit64
    unit256 = 2 * 256 * 512 * 32                                     # d256: 32-row tiles of 512 bytes
    assert g.bare_bytes(3 * unit256 + 7, "tma2kvmap static 256 heads=8 page=16 d=256") == 3 * unit256


def test_cells_with_no_peer_timed_are_named():
    """A cell where every peer failed (a wrong output, say) is not a win, and the footer says which; a cell where
    fakv failed and a peer ran is lost (it was left out of the count)."""
    g = _bench_grid()
    run = {"device": "H200", "date": "2026-12-05", "copy_tbps": 4.2, "layouts": [0, 16], "shapes": ["b8 s8K"],
           "cells": [{"shape": "b8 s8K", "layout": 0, "kv_bytes": 1 << 28, "impls": {
                          "fakv": _impl(68.0, 0.9), "sdpa": _impl(67.0, 0.92)}},
                     {"shape": "b8 s8K", "layout": 16, "kv_bytes": 1 << 28, "impls": {
                          "fakv": _impl(69.0, 0.9), "triton": {"failed": "output differs"}}}]}
    md = g.markdown(run)
    assert "within 1 %): 0 of 1 cells (0 more than 1 % ahead, 0 within 1 % either way, 1 behind); 1 with no " \
           "peer timed: b8 s8K @16." in md
    run["layouts"].append(64)
    run["cells"].append({"shape": "b8 s8K", "layout": 64, "kv_bytes": 1 << 28, "impls": {
        "fakv": {"failed": "does not compile"}, "triton": _impl(90.0, 0.7)}})
    md = g.markdown(run)
    assert "0 of 2 cells (0 more than 1 % ahead, 0 within 1 % either way, 2 behind); 1 where fakv failed (lost): " \
           "b8 s8K @64; 1 with no peer timed: b8 s8K @16." in md
    assert "- b8 s8K, layout 16: triton: output differs" in md


def test_a_peer_timed_as_launched_is_not_counted():
    """A peer that could not be captured in a graph is timed with its host work: it is not the best peer (a
    win against its launches would be no win), and the footer names it; fakv timed so is marked."""
    g = _bench_grid()
    peer = dict(_impl(80.0, 0.8), timing="eager")
    run = {"device": "H200", "date": "2026-12-05", "copy_tbps": 4.2, "layouts": [0], "shapes": ["b8 s8K"],
           "peers": ["sdpa", "triton"],
           "cells": [{"shape": "b8 s8K", "layout": 0, "kv_bytes": 1 << 28, "impls": {
               "fakv": dict(_impl(68.0, 0.9), timing="graph"), "triton": peer, "sdpa": _impl(70.0, 0.85)}}]}
    assert g.best_peer(run["cells"][0]) == (70.0, "sdpa")
    md = g.markdown(run)
    assert "vs sdpa 70.0 µs (85.0%) **win**" in md and "vs triton" not in md
    assert "Peers timed as launched (host work included; not counted): b8 s8K @0 triton. Peers asked for: sdpa, " \
           "triton." in md
    run["cells"][0]["impls"].pop("sdpa")
    assert "0 of 0 cells" in g.markdown(run) and "1 with no peer timed: b8 s8K @0" in g.markdown(run)
    peer["timing"] = "graph"
    assert "vs triton 80.0 µs" in g.markdown(run) and "not counted" not in g.markdown(run)
    run["cells"][0]["impls"]["fakv"]["timing"] = "eager"
    assert "68.0 µs (90.0%) (eager: host work included) vs triton" in g.markdown(run)


def test_a_cell_where_fakv_failed_and_no_peer_ran_is_named():
    g = _bench_grid()
    run = {"device": "H200", "date": "2026-12-06", "copy_tbps": 4.2, "layouts": [0], "shapes": ["b8 s8K"],
           "cells": [{"shape": "b8 s8K", "layout": 0, "kv_bytes": 1 << 28, "impls": {
               "fakv": {"failed": "does not compile"}, "triton": {"failed": "output differs"}}}]}
    assert "0 of 0 cells (0 more than 1 % ahead, 0 within 1 % either way, 0 behind); 1 where fakv failed and no " \
           "peer was timed: b8 s8K @0." in g.markdown(run)


def test_each_sequence_is_held_to_its_own_tolerance():
    """A ragged batch's short sequences have the largest outputs: held to one tolerance (the largest output's),
    a long sequence that dropped 2 % of its keys passed (session 46's review of the bench)."""
    g = _bench_grid()
    short, long = 0.5, 0.03                          # largest reference value of each sequence
    assert g.worst_error([0.001, 0.0146], [short, long]) == (0.0146, g.tolerance(long))
    assert not 0.0146 <= g.tolerance(long) and 0.0146 <= g.tolerance(short)
    assert g.worst_error([0.003, 0.0001], [short, long]) == (0.003, g.tolerance(short))
    err, tol = g.worst_error([0.0, float("nan")], [short, long])
    assert err != err                                # NaN is past any tolerance


def test_peers_and_shapes_are_named_exactly():
    """--peers "sdpa, triton" kept " triton" (never matched: the best peer came from fewer); --only "b1" took
    b128's shapes, "b8 s8K" took MHA b8 s8K and d64 b8 s8K."""
    g = _bench_grid()
    known = g.PEERS + ("bare",)
    assert g.names_of("sdpa, triton,,", known, "--peers") == ["sdpa", "triton"]
    with pytest.raises(SystemExit, match="--peers: unknown cudnn, flashinfer_tc"):
        g.names_of("cudnn,flashinfer_tc,sdpa", known, "--peers")
    names = lambda only: [s[0] for s in g.selected(g.SHAPES, only)]  # noqa: E731
    assert names("b1") == ["b1 s1K", "b1 s8K", "b1 s32K", "MHA b1 s32K", "d256 b1 s8K"]
    assert names("b8 s8K") == ["b8 s8K"]
    assert names(" b1 s1K, d64") == ["b1 s1K", "d64 b8 s8K", "d64 b32 s32K"]
    assert names("") == names(",") == [s[0] for s in g.SHAPES]
    with pytest.raises(SystemExit, match="--only: 'b2' names no shape"):
        names("b2")


def test_layouts_are_page_sizes_the_grid_divides():
    """--layouts 48 (or "16,x") failed every implementation of every cell, after a run's worth of setup (session
    54's review of bench/): refused first."""
    g = _bench_grid()
    assert g.layouts_of("0,16,64,256") == [0, 16, 64, 256] and g.layouts_of("1") == [1]
    for bad, message in (("48", r"got \[48\]"), ("16,x", "comma-separated"), ("512", r"\[512\]"),
                         ("-16", r"\[-16\]")):
        with pytest.raises(SystemExit, match=message):
            g.layouts_of(bad)


def test_a_large_cache_where_fakv_failed_counts_below_105():
    """A cache of 1 GiB or more where fakv failed is one of those below 105 % of copy, named so (it left the
    count: 2 of 36 became 2 of 32 with four failures; session 44's review of the bench)."""
    g = _bench_grid()
    run = {"device": "H200", "date": "2026-12-06", "copy_tbps": 4.2, "layouts": [0, 16], "shapes": ["b8 s32K"],
           "cells": [{"shape": "b8 s32K", "layout": 0, "kv_bytes": 1 << 30, "impls": {
                          "fakv": _impl(400.0, 1.06), "sdpa": _impl(401.0, 1.05)}},
                     {"shape": "b8 s32K", "layout": 16, "kv_bytes": 1 << 30, "impls": {
                          "fakv": {"failed": "does not compile"}, "sdpa": _impl(401.0, 1.05)}}]}
    md = g.markdown(run)
    assert "Caches of 1 GiB or more at 105 % of copy or more: 1 of 2; below: b8 s32K @16 (fakv failed)" in md


def test_recorded_tables_are_their_runs_and_scripts_say_what_they_need():
    """bench_grid.py --markdown renders a saved run's table again: session 52's rows as docs/perf/grid-s52.md
    recorded them (session 57's audit re-counted every cell), with no GPU. Where torch is missing, the measuring
    scripts say so in a line (each was a traceback), and --help prints bench_decode's usage (it ran the bench)."""
    import subprocess
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"), PYTHONDONTWRITEBYTECODE="1")
    bench = os.path.join(ROOT, "bench")
    out = subprocess.run([sys.executable, os.path.join(bench, "bench_grid.py"), "--markdown",
                          os.path.join(ROOT, "docs", "perf", "grid-s52.json")], env=env, capture_output=True,
                         text=True, check=True).stdout
    with open(os.path.join(ROOT, "docs", "perf", "grid-s52.md")) as f:
        recorded = f.read()
    rows = lambda text: [line for line in text.splitlines() if line.startswith("|")]  # noqa: E731
    assert len(rows(recorded)) > 20 and rows(out) == rows(recorded)
    assert "Caches of 1 GiB or more at 105 % of copy or more: 27 of 36" in out
    helped = subprocess.run([sys.executable, os.path.join(bench, "bench_decode.py"), "--help"], env=env,
                            capture_output=True, text=True)
    assert helped.returncode == 1 and "python bench/bench_decode.py [--compile-only]" in helped.stderr
    try:
        import torch  # noqa: F401
        return                                           # (the GPU machine: no message to see)
    except ImportError:
        pass
    for script, args in (("bench_grid.py", []), ("bench_decode.py", []), ("sweep_decode.py", []),
                         ("one_variant.py", ["64", "2", "1", "1"]), ("bench_host.py", []),
                         ("plan_variants.py", ["--cells", "b1 s1K@0"])):
        bad = subprocess.run([sys.executable, os.path.join(bench, script), *args], env=env, capture_output=True,
                             text=True)
        assert bad.returncode == 1 and bad.stderr == f"bench/{script} runs on a CUDA GPU with torch; this Python " \
            "has no torch (its --compile-only mode, where it has one, needs neither)\n", (script, bad.stderr)
