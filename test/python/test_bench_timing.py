"""bench/timing.py's event timing, without a GPU (a stand-in torch that logs what reaches the stream): a graph
replay's start event waits behind a sleep queued first, so that the replay's launch is not GPU time (session
37's review: on an idle stream a replay's 2-5 us of host work counted, up to 2 % of a 245 us call); runs timed
as launched (eager) are not; and bench_grid's bare read of a ragged batch takes whole tiles of its bytes."""
import contextlib
import os
import sys
import types

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def timing(monkeypatch):
    log = []

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            log.append("record")
            self.t = len(log)

        def synchronize(self):
            log.append("sync")

        def elapsed_time(self, other):
            return float(other.t - self.t)

    class Graph:
        def replay(self):
            log.append("replay")

    capture = {"fails": False}

    @contextlib.contextmanager
    def graph(g):
        if capture["fails"]:
            raise RuntimeError("not capturable")
        yield

    cuda = types.SimpleNamespace(Event=Event, CUDAGraph=Graph, graph=graph,
                                 _sleep=lambda cycles: log.append(f"sleep {cycles}"),
                                 synchronize=lambda: log.append("synchronize"))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))
    monkeypatch.delitem(sys.modules, "timing", raising=False)
    import timing
    return timing, log, capture


def test_each_start_event_waits_behind_a_sleep(timing):
    t, log, _ = timing
    times = t.event_ms(lambda: log.append("run"), 2)
    assert log == [f"sleep {t.BUSY_CYCLES}", "record", "run", "record", "sync"] * 2
    assert times == [2.0, 2.0]
    assert t.BUSY_CYCLES >= 50_000                 # (tens of us: more than a replay's launch)
    log.clear()
    t.event_ms(lambda: log.append("run"), 1, busy_cycles=0)
    assert log == ["record", "run", "record", "sync"]


def test_graph_replays_are_timed_behind_the_sleep_eager_runs_as_launched(timing):
    t, log, capture = timing
    ms, mode = t.graph_time_ms([lambda: log.append("call a"), lambda: log.append("call b")], replays=3, warmup=1)
    assert mode == "graph"
    timed = log[log.index("replay") + 1:]          # (after the warm-up, the capture and one replay)
    assert timed == [f"sleep {t.BUSY_CYCLES}", "record", "replay", "record", "sync"] * 3
    assert ms == 2.0 / 2                           # per call: the graph holds two
    log.clear()
    capture["fails"] = True
    ms, mode = t.graph_time_ms([lambda: log.append("call")], replays=2, warmup=0)
    assert mode == "eager" and not any(e.startswith("sleep") for e in log)


def test_the_bare_read_of_a_ragged_batch_takes_whole_tiles():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
    try:
        import bench_grid as g
    finally:
        del sys.path[:2]
    gib = 1 << 30
    assert g.bare_bytes(gib, g.bare_way(8, 8)) == gib                         # b8 s32K: whole already
    assert g.bare_bytes(gib, g.bare_way(128, 8, 128, 256)) == gib
    ragged = 1064 * 2 ** 20 + 12345
    way16 = g.bare_way(128, 8, 128, 16)
    assert g.bare_bytes(ragged, way16) == 1056 * 2 ** 20                      # 1024 blocks x 64 rows, K and V
    assert g.bare_bytes(ragged, g.bare_way(128, 8, 128, 256)) == gib          # pages of 256 rows
    assert g.bare_bytes(ragged, g.bare_way(128, 8, 80, 16)) == ragged         # tma2kv (head dim 80): any bytes
    assert g.bare_bytes(ragged, g.bare_way(128, 8, 64, 16)) == 1056 * 2 ** 20  # d64: 1024 blocks x 128 rows
    # what stream_balance.kv_maps asks of a cache: rows of whole 64-row tiles and pages
    for way, d in ((way16, 128), (g.bare_way(128, 8, 128, 256), 128), (g.bare_way(8, 32, 128, 64), 128),
                   (g.bare_way(128, 8, 64, 16), 64), (g.bare_way(8, 8, 256, 64), 256)):
        blocks, page = int(way.split()[2]), int(way.partition("page=")[2].split()[0])
        half = g.bare_bytes(ragged, way) // 2
        rows = half // (blocks * 2 * d)
        assert rows * blocks * 2 * d == half and rows % (8192 // d) == 0 and rows % page == 0, way


def test_a_copy_is_timed_behind_the_sleep_too(timing):
    """The copy bandwidth the fractions divide by: its launches behind the same sleep (before: an eager copy
    on an idle stream counted its launch, ~0.5 % of a 2 GiB copy)."""
    t, log, _ = timing

    class Buffer:
        def copy_(self, src):
            log.append("copy")
    ms = t.copy_ms(Buffer(), Buffer(), reps=2, iters=2)
    assert log == ["copy"] + [f"sleep {t.BUSY_CYCLES}", "record", "copy", "copy", "record", "sync"] * 2
    assert ms == 3.0 / 2


def test_every_graph_holds_two_calls_at_least():
    """Cell.calls, what every bench times: the cache copies in turn, twice the one copy of a cell of 512 MiB
    and more (as the bare read's two buffers: the same number of calls a graph for every implementation)."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    sys.path.insert(0, os.path.join(ROOT, "test", "gpu"))
    try:
        import bench_grid as g
    finally:
        del sys.path[:2]
    cell = object.__new__(g.Cell)
    for copies, want in ((1, [0, 0]), (2, [0, 1]), (5, [0, 1, 2, 3, 4])):
        cell.copies, seen = copies, []
        for call in cell.calls(seen.append):
            call()
        assert seen == want


def _grid_without_gpu(monkeypatch):
    """bench_grid over a stand-in torch that only synchronizes (measure's GPU pieces are stood in by each test)."""
    torch = types.SimpleNamespace(cuda=types.SimpleNamespace(synchronize=lambda: None))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.syspath_prepend(os.path.join(ROOT, "test", "gpu"))
    monkeypatch.syspath_prepend(os.path.join(ROOT, "bench"))
    import bench_grid
    return bench_grid


class _Output:
    """A stand-in output tensor (measure calls .float() before the check)."""
    def float(self):
        return self


def test_a_cell_times_each_implementation_through_its_own_calls(monkeypatch):
    """bench_grid.measure with every GPU piece stood in: each implementation's graph calls its own run, two
    calls for one cache copy (the bare read: its two buffers), rounds starting one implementation later; a
    cell where nothing passes its check times nothing (it crashed: ZeroDivisionError). (A rebound `calls`
    once made the bare read's lambda call another implementation's graph.)"""
    g = _grid_without_gpu(monkeypatch)
    seen = []

    class Out(_Output):
        def __init__(self, good):
            self.good = good

    class FakeCell:
        def __init__(self, shape, page):
            self.kv_bytes, self.copies, self.b, self.hk, self.d, self.page = 1 << 30, 1, 8, 8, 128, 0

        calls = g.Cell.calls

        def error(self, out, copy=0):
            return (0.0 if out.good else float("nan")), 0.02

    def impl(name, good=True):
        return lambda i: seen.append((name, i)) or Out(good)

    class Reader:
        def __init__(self, nbytes):
            pass

        def cell_calls(self, way, cell):
            return way, [lambda: seen.append(("bare", 0)), lambda: seen.append(("bare", 1))]
    monkeypatch.setitem(sys.modules, "stream_balance", types.SimpleNamespace(Reader=Reader))
    monkeypatch.setattr(g, "Cell", FakeCell)
    monkeypatch.setattr(g, "fakv_calls", lambda cell: impl("fakv"))
    monkeypatch.setattr(g, "triton_calls", lambda cell: impl("triton"))
    graphs = []

    def graph_time_ms(calls, warm_s=0.0, outputs=None):
        seen.clear()
        outputs[:] = [c() for c in calls]
        graphs.append(list(seen))
        return 0.1, "graph"
    monkeypatch.setattr(g, "graph_time_ms", graph_time_ms)
    shape = ("b8 s32K", 8, 32768, 32, 8, 128, False)
    result = g.measure(shape, 0, ["triton", "bare"], copy_bw=4.0, rounds=2)
    assert graphs == [[("fakv", 0), ("fakv", 0)], [("bare", 0), ("bare", 1)], [("triton", 0), ("triton", 0)],
                      [("bare", 0), ("bare", 1)], [("triton", 0), ("triton", 0)], [("fakv", 0), ("fakv", 0)]]
    assert all(result["impls"][n]["us"] == 100.0 for n in ("fakv", "bare", "triton"))
    graphs.clear()
    monkeypatch.setattr(g, "fakv_calls", lambda cell: impl("fakv", good=False))
    result = g.measure(shape, 0, [], copy_bw=4.0, rounds=2)
    assert graphs == [] and "failed" in result["impls"]["fakv"]


def test_a_replay_that_computed_something_else_fails(monkeypatch):
    """bench_grid.measure checks what the timed graph computed: every call's output against its copy's
    reference (a graph reading one copy throughout, or a stale pointer, passed when only the eager call was
    checked), up to the first that differs."""
    g = _grid_without_gpu(monkeypatch)
    checked = []

    class Out(_Output):
        def __init__(self, copy):
            self.copy = copy

    class FakeCell:
        def __init__(self, shape, page):
            self.kv_bytes, self.copies = 1 << 28, 3

        calls = g.Cell.calls

        def error(self, out, copy=0):
            checked.append((out.copy, copy))
            return (0.0 if out.copy == copy else 1.0), 0.02

    monkeypatch.setattr(g, "Cell", FakeCell)
    replay_copy = {"fakv": lambda i: i, "triton": lambda i: 0}      # triton's graph reads copy 0 throughout
    monkeypatch.setattr(g, "fakv_calls", lambda cell: lambda i: Out(i))
    monkeypatch.setattr(g, "triton_calls", lambda cell: lambda i: Out(i))

    def graph_time_ms(calls, warm_s=0.0, outputs=None):
        name = "triton" if len(checked) > 2 else "fakv"
        outputs[:] = [Out(replay_copy[name](i)) for i, _ in enumerate(calls)]
        return 0.1, "graph"
    monkeypatch.setattr(g, "graph_time_ms", graph_time_ms)
    result = g.measure(("b8 s8K", 8, 8192, 32, 8, 128, False), 0, ["triton"], copy_bw=4.0)
    assert result["impls"]["fakv"]["us"] == 100.0
    assert "a replay's output (call 1, copy 1) differs" in result["impls"]["triton"]["failed"]
    assert "us" not in result["impls"]["triton"]
    assert checked == [(0, 0), (0, 0), (0, 0), (1, 1), (2, 2), (0, 0), (0, 1)]   # eager checks, then the replays


def test_one_round_timed_as_launched_marks_the_cell_eager(monkeypatch):
    """An implementation whose capture failed in one round and not in another: its median mixes host time into
    GPU time, so it is marked "eager" (not compared as GPU time), whichever round came last (session 54's
    review: the last round's mode was recorded)."""
    g = _grid_without_gpu(monkeypatch)

    class FakeCell:
        def __init__(self, shape, page):
            self.kv_bytes, self.copies = 1 << 28, 1

        calls = g.Cell.calls

        def error(self, out, copy=0):
            return 0.0, 0.02

    monkeypatch.setattr(g, "Cell", FakeCell)
    monkeypatch.setattr(g, "fakv_calls", lambda cell: lambda i: _Output())
    monkeypatch.setattr(g, "triton_calls", lambda cell: lambda i: _Output())
    modes = {"fakv": iter(["graph", "graph", "graph"]), "triton": iter(["eager", "graph", "graph"])}
    order = iter(["fakv", "triton", "triton", "fakv", "fakv", "triton"])      # (rounds start one later)

    def graph_time_ms(calls, warm_s=0.0, outputs=None):
        outputs[:] = [c() for c in calls]
        return 0.1, next(modes[next(order)])
    monkeypatch.setattr(g, "graph_time_ms", graph_time_ms)
    result = g.measure(("b8 s8K", 8, 8192, 32, 8, 128, False), 0, ["triton"], copy_bw=4.0, rounds=3)
    assert result["impls"]["fakv"]["timing"] == "graph"
    assert result["impls"]["triton"]["timing"] == "eager"


def test_graph_outputs_are_what_the_last_replay_returned(timing):
    t, log, capture = timing
    outs = []
    t.graph_time_ms([lambda: "a", lambda: "b"], replays=2, warmup=0, outputs=outs)
    assert outs == ["a", "b"]
    capture["fails"] = True
    n = iter(range(100))
    t.graph_time_ms([lambda: next(n)], replays=2, warmup=0, outputs=outs)
    assert outs == [2]                               # (eager: the replay before timing, then 2 timed)
