"""fakv: a tile DSL for KV-cache decode attention on NVIDIA Hopper.

    import fakv
    import fakv.language as fl

    @fakv.jit
    def kernel(...): ...          # see kernels/ and docs/frontend.md

    fakv.flash_attn_with_kvcache(q, k_cache, v_cache, ...)   # FlashAttention's API
    fakv.with_kernels(decode=my_decode)(q, k_cache, ...)     # the same, by a variant kernel
"""
from . import language  # noqa: F401
from .errors import CompilationError, DataError, FakvError  # noqa: F401
from .jit import JITFunction, jit  # noqa: F401

__version__ = "0.1.0"


def synchronize():
    """Waits for the current CUDA device, then raises DataError if a fakv
    kernel found bad data (a cache length past the cache, a block-table
    entry outside it) since the last check."""
    from .runtime import synchronize as sync
    sync()


def check_errors():
    """Raises DataError if a finished fakv kernel found bad data since the
    last check (does not wait for the GPU; every API call checks too)."""
    from .runtime import raise_pending
    raise_pending()


def __getattr__(name):
    # The attention API (and the kernels it imports) load on first use.
    if name in ("flash_attn_with_kvcache", "with_kernels"):
        from . import interface
        return getattr(interface, name)
    raise AttributeError(name)
