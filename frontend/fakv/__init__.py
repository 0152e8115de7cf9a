"""fakv: a tile DSL for KV-cache decode attention on NVIDIA Hopper.

    import fakv
    import fakv.language as fl

    @fakv.jit
    def kernel(...): ...          # see kernels/ and docs/frontend.md

    fakv.flash_attn_with_kvcache(q, k_cache, v_cache, ...)   # FlashAttention's API
    fakv.with_kernels(decode=my_decode)(q, k_cache, ...)     # the same, by a variant kernel
"""
import gc as _gc
import os as _os
import threading as _threading

from . import cache as _cache  # first: the package's files as this process found them (cache._AT_IMPORT)
from .errors import CompilationError, DataError, FakvError  # noqa: F401

del _cache
__version__ = "0.1.0"
# (flash_attn_with_kvcache, with_kernels, language, jit and JITFunction load on first use: __getattr__)
__all__ = ["CompilationError", "DataError", "FakvError", "JITFunction", "check_errors", "flash_attn_with_kvcache",
           "jit", "language", "synchronize", "with_kernels"]


def synchronize(device=None):
    """Waits for `device` (a torch device or index; None: the current CUDA
    device), then raises DataError if a fakv kernel found bad data (a cache
    length past the cache, a block-table entry outside it) since the last
    check. After calls on another device than the current one, name
    theirs."""
    from .runtime import synchronize as sync
    sync(device)


def check_errors():
    """Raises DataError if a finished fakv kernel found bad data since the
    last check (does not wait for the GPU; every API call checks too)."""
    from .runtime import raise_pending
    raise_pending()


class _GCPaused:
    """`with _gc_paused:` Python's cyclic garbage collector paused (if it
    runs) while fakv imports its API, prepares a call or loads / compiles a
    kernel specialisation: their thousands of new, long-lived objects (code
    objects, tuples, dicts) would otherwise trigger collections that scan
    them all for cycles (one generation-1 collection cost 1.2-1.4 ms of a
    2.2 ms import of fakv.interface on the build machine; docs/decisions.md).
    Nested and concurrent uses within fakv share one pause; collection
    resumes when the last ends, as it was before the first (a program that
    turns the collector on or off from another thread meanwhile may see its
    choice undone)."""
    _lock, _depth, _resume = _threading.Lock(), 0, False

    def __enter__(self):
        with self._lock:
            if _GCPaused._depth == 0:
                _GCPaused._resume = _gc.isenabled()
                _gc.disable()
            _GCPaused._depth += 1

    def __exit__(self, *exc):
        with self._lock:
            _GCPaused._depth -= 1
            if _GCPaused._depth == 0 and _GCPaused._resume:
                _gc.enable()

    @staticmethod
    def _after_fork_in_child():
        """A thread of the parent's paused it: not in the child, which would
        never collect again (a thread of its own that forked inside a pause
        is not provided for)."""
        _GCPaused._lock = _threading.Lock()
        if _GCPaused._depth:
            _GCPaused._depth = 0
            if _GCPaused._resume:
                _gc.enable()


_gc_paused = _GCPaused()
_os.register_at_fork(after_in_child=_GCPaused._after_fork_in_child)


def __getattr__(name):
    # Loaded on first use: the attention API (a warm start's call needs
    # neither the DSL nor the kernels: the cache's index names their
    # binaries), the DSL and @fakv.jit (the kernels' modules use them).
    # Each is kept in this module's globals once loaded: later lookups (a
    # call of fakv.flash_attn_with_kvcache reads it every time) no longer
    # come here (2 us a lookup on the build machine, 3-4 on the H200 host).
    import importlib        # (not `from . import`: it would ask this function again)
    if name in ("flash_attn_with_kvcache", "with_kernels"):
        with _gc_paused:
            api = importlib.import_module("fakv.api")
        globals().update(flash_attn_with_kvcache=api.flash_attn_with_kvcache, with_kernels=api.with_kernels)
        return globals()[name]
    if name == "language":
        return importlib.import_module("fakv.language")
    if name in ("jit", "JITFunction"):
        jitfunction = importlib.import_module("fakv.jitfunction")
        globals().update(jit=jitfunction.jit, JITFunction=jitfunction.JITFunction)
        return globals()[name]
    raise AttributeError(f"module 'fakv' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
