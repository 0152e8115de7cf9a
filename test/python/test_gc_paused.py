"""fakv/__init__.py's _gc_paused: Python's cyclic garbage collector paused
while fakv imports its API, prepares a call (the slow path of
flash_attn_with_kvcache) or compiles a kernel, and left as it was found
after, whatever happens inside (an error, nesting, several threads)."""
import gc
import threading

import numpy as np
import pytest

import fakv
from fakv import _gc_paused, interface
from fresh_process import run_fresh


@pytest.fixture
def gc_state():
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_call_prepares_with_the_collector_paused_and_restores_it(monkeypatch, gc_state, enabled):
    (gc.enable if enabled else gc.disable)()
    seen = []

    def attention(*args):
        seen.append(gc.isenabled())
        if len(seen) == 2:
            raise ValueError("bad input")
        return "out"
    monkeypatch.setattr(interface, "_attention", attention)
    q = np.zeros((1, 1, 4, 64), np.float16)
    assert fakv.flash_attn_with_kvcache(q, q, q) == "out"
    with pytest.raises(ValueError, match="bad input"):
        fakv.flash_attn_with_kvcache(q, q, q)
    assert seen == [False, False] and gc.isenabled() is enabled


def test_nested_and_concurrent_pauses_resume_once_after_the_last(gc_state):
    gc.enable()
    inside, go = threading.Barrier(4), threading.Event()

    def hold():
        with _gc_paused:
            with _gc_paused:
                inside.wait()
                go.wait()
    threads = [threading.Thread(target=hold) for _ in range(3)]
    for t in threads:
        t.start()
    inside.wait()                       # three threads inside, two pauses deep each
    assert not gc.isenabled()
    go.set()
    for t in threads:
        t.join()
    assert gc.isenabled()


def test_the_api_import_runs_paused_and_leaves_the_collector_on():
    # A fresh process: fakv.api imported through fakv's __getattr__ with the collector off, on after, and
    # not the slow path's fakv.interface (a warm start's call needs only fakv.api); the API's names then
    # kept in fakv's globals (later lookups, one per call, no longer come to __getattr__).
    script = ("import gc, importlib, sys, fakv\n"
              "paused, real = [], importlib.import_module\n"
              "importlib.import_module = lambda name: (paused.append(gc.isenabled()), real(name))[1]\n"
              "fn = fakv.flash_attn_with_kvcache\n"
              "again = (fakv.flash_attn_with_kvcache, fakv.with_kernels)\n"
              "without_interface = 'fakv.interface' not in sys.modules\n"
              "from fakv import api\n"
              "kept = again == (fn, api.with_kernels) and fn is api.flash_attn_with_kvcache\n"
              "print(paused, gc.isenabled(), without_interface,\n"
              "      kept and {'flash_attn_with_kvcache', 'with_kernels'} <= set(vars(fakv)))\n")
    assert run_fresh(script) == ["[False]", "True", "True", "True"]


def test_a_kernel_compiles_paused(monkeypatch, gc_state):
    from fakv import jitfunction
    from tile_stats import reference, tile_stats
    tile_stats.clear()                       # (compiled again here, whatever ran before)
    seen, real = [], jitfunction.JITFunction._compile_cpu

    def compile_cpu(self, c, types):
        seen.append(gc.isenabled())
        return real(self, c, types)
    monkeypatch.setattr(jitfunction.JITFunction, "_compile_cpu", compile_cpu)
    gc.enable()
    x, f = np.arange(-5, 15, dtype=np.int32), np.ones((2, 32), np.float32)
    out, fout = np.zeros(8, np.int32), np.zeros(2, np.float32)
    tile_stats[(1,)](x, f, out, fout, len(x), BLOCK=32)
    want, fwant = reference(x, f)
    assert seen == [False] and gc.isenabled() and list(out[:5]) == want and list(fout) == fwant
