"""fakv.flash_attn_with_kvcache and fakv.with_kernels: the API's function
and its fast path, one prepared call (fakv._runtime.PreparedCall) per
signature.

A torch call whose arguments have the shapes, strides, dtypes, devices,
alignment and options of an earlier one runs that call's prepared call
(prepare.CALLS): its checks, plan and kernels reused, only addresses, the
outputs and an int cache_seqlens changed; the key, the lookup and the call
in one C call (fakv._runtime.run_prepared, runtime/FastPath.h). A new process's first call of a
signature an earlier process kept is prepared from its recipe on disk
(recipes.py). Every other call takes the slow path, fakv.interface
(checks, plan, compilation), which keeps its prepared call. A warm start
imports this module, prepare.py and recipes.py, not interface.py.
"""
import contextlib

from . import _gc_paused, prepare, runtime
from .errors import FakvError

_recipes = None         # fakv.recipes, once a call looks for a recipe
_interface = None       # fakv.interface, once a call takes the slow path


def _from_recipe(kernels, arguments, options):
    """A new signature's call prepared from its recipe, run: its output; or
    None (no recipe, or one that does not restore: the slow path then)."""
    global _recipes
    if _recipes is None:
        from . import recipes
        _recipes = recipes
    k = _recipes.key_of(arguments, options, prepare.check_data()) if _recipes.ENABLED else None
    if k is None:
        return None
    prepare.see_torch()
    found = prepare.key(kernels, *arguments, *options)
    call = None if found is None else _recipes.prepared(k, arguments)     # (found None: a call never kept)
    if call is None:
        return None
    prepare.keep(found[0], call, kernels)
    return call(found[1], arguments[0], arguments[3])


def _flag(x):
    """A flag FlashAttention's bindings take (an int, numpy's bool scalar) as the bool the slow path keys it by;
    anything else as it is (interface refuses it, naming it)."""
    return bool(x) if prepare.is_flag(x) else x


def _on_device_of(q):
    """FlashAttention's CUDA guard: q's device made current for the call
    (its kernels, allocations and prepared call are that device's), the
    caller's restored after; nothing for a q not on a CUDA device. Entered
    even when torch says q's device is current: torch may only have noted
    it (a device a guard's exit left without a context) while the driver's
    current context is another's, and entering makes it so. The fast
    path's prepared call does the same in C (runtime/PreparedCall.cpp)."""
    if getattr(q, "is_cuda", False):
        import torch
        return torch.cuda.device(q.get_device())
    return contextlib.nullcontext()


def with_kernels(decode=None, combine=None):
    """flash_attn_with_kvcache run by other kernels: `decode` in place of
    kernels/decode.py's (a copy with another score_mod, say; same
    parameters) and `combine` in place of kernels/combine.py's. Returns a
    function with flash_attn_with_kvcache's signature (kernels/README.md)."""
    for name, kernel in (("decode", decode), ("combine", combine)):
        if kernel is not None and not callable(getattr(kernel, "with_options", None)):
            raise FakvError(f"with_kernels: `{name}` must be a @fakv.jit kernel (or None), got {kernel!r}")
    kernels = (decode, combine)

    def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                                cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                                softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                rotary_interleaved=True, alibi_slopes=None, num_splits=0,
                                return_softmax_lse=False):
        global _interface
        runtime.raise_pending()              # a kernel of an earlier call found bad data
        # Flags as the slow path keys them (bools): causal=1 was keyed as an int here and never found again.
        if not (causal is True or causal is False) or not (rotary_interleaved is True or rotary_interleaved is False) \
                or not (return_softmax_lse is True or return_softmax_lse is False):
            causal, rotary_interleaved, return_softmax_lse = map(_flag, (causal, rotary_interleaved,
                                                                        return_softmax_lse))
        if type(q) is prepare.tensor_type:
            # In C: the key, the lookup, the prepared call. None: no call kept for this key, or
            # interface._ByLengths has none yet for this lengths hint.
            out = prepare.run(prepare.CALLS, kernels, prepare.extras(q), q, k_cache, v_cache, cache_seqlens,
                              block_table, cache_batch_idx, alibi_slopes, k, v, rotary_cos, rotary_sin,
                              cache_leftpad, softmax_scale, causal, window_size, softcap, rotary_interleaved,
                              num_splits, return_softmax_lse)
            if out is not None:
                return out
        with _gc_paused, _on_device_of(q):     # (a call prepared: fakv/__init__.py's _GCPaused)
            if k is None and kernels == (None, None):
                out = _from_recipe(kernels, (q, k_cache, v_cache, cache_seqlens, block_table, cache_batch_idx,
                                             alibi_slopes, k, v, rotary_cos, rotary_sin, cache_leftpad),
                                   (softmax_scale, causal, window_size, softcap, rotary_interleaved, num_splits,
                                    return_softmax_lse))
                if out is not None:
                    return out
            if _interface is None:
                from . import interface
                _interface = interface
            return _interface._attention(decode, combine, q, k_cache, v_cache, k, v, rotary_cos, rotary_sin,
                                         cache_seqlens, cache_batch_idx, cache_leftpad, block_table, softmax_scale,
                                         causal, window_size, softcap, rotary_interleaved, alibi_slopes,
                                         num_splits, return_softmax_lse)

    flash_attn_with_kvcache.__doc__ = _DOC
    return flash_attn_with_kvcache


_DOC = """Attention of q over a KV cache (FlashAttention's contract).

    q: (batch, seqlen_q, heads, head_dim); k_cache, v_cache: (batch_cache,
    seqlen_cache, kv_heads, head_dim), or (num_blocks, page_size, kv_heads,
    head_dim) with block_table (batch, max_blocks) int32. cache_seqlens: int or
    (batch,) int32, the keys of each sequence. Returns out (batch, seqlen_q,
    heads, head_dim) in q's dtype, and with return_softmax_lse the natural-log
    LSE (batch, heads, seqlen_q) float32.
    """

flash_attn_with_kvcache = with_kernels()

# A new process's first call: the error word's page pinned by the driver meanwhile (runtime.start_error_word).
runtime.start_error_word()
