"""fakv: a tile DSL for KV-cache decode attention on NVIDIA Hopper.

    import fakv
    import fakv.language as fl

    @fakv.jit
    def kernel(...): ...          # see kernels/ and docs/frontend.md

    fakv.flash_attn_with_kvcache(q, k_cache, v_cache, ...)   # FlashAttention's API
"""
from . import language  # noqa: F401
from .codegen import CompilationError  # noqa: F401
from .jit import JITFunction, jit  # noqa: F401

__version__ = "0.1.0"


def __getattr__(name):
    # The attention API imports torch; load it on first use.
    if name == "flash_attn_with_kvcache":
        from .interface import flash_attn_with_kvcache
        return flash_attn_with_kvcache
    raise AttributeError(name)
