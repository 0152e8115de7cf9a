"""fakv.flash_attn_with_kvcache: FlashAttention's KV-cache attention API,
run by the kernels in kernels/ (decode.py, combine.py).

Same signature, defaults, shapes and results as flash_attn.flash_attn_with_kvcache
(docs/api.md lists what is implemented and what we chose where FlashAttention
is silent). Inputs are checked before anything is launched.
"""
import functools
import math
import numbers
import os
import sys

from . import tensors as T
from .heuristics import num_splits_heuristic

# The kernels: installed with the package (fakv/kernels), or kernels/ of a
# source checkout, or $FAKV_KERNELS.
_HERE = os.path.dirname(os.path.abspath(__file__))
_KERNELS = os.environ.get("FAKV_KERNELS") or next(
    p for p in (os.path.join(_HERE, "kernels"), os.path.join(os.path.dirname(os.path.dirname(_HERE)), "kernels"))
    if os.path.isdir(p))
if _KERNELS not in sys.path:
    sys.path.insert(0, _KERNELS)

_DTYPES = ("f16", "bf16")
HEAD_DIMS = (64, 96, 128, 192, 256)
MAX_SPLITS = 64
MAX_ROWS = 64  # query rows (GQA group x query positions) per program: one wgmma's M


def _kernels():
    import combine
    import decode
    return decode.decode, combine.combine


def _pow2(n):
    return 1 << max(0, int(n - 1).bit_length())


def _not_yet(name, value, default):
    if value is not default and not (isinstance(default, tuple) and tuple(value) == default) and not (
            default == 0.0 and value == 0.0):
        raise NotImplementedError(f"flash_attn_with_kvcache: `{name}` is not supported yet by fakv "
                                  f"(got a non-default value); see docs/api.md")


def plan(*args, **kwargs):
    """The kernel specialisations and launch grids of one call (no tensors
    needed: shapes and options only); see _plan. Returns fresh dicts."""
    return {k: dict(v) if isinstance(v, dict) else v for k, v in _plan(*args, **kwargs).items()}


@functools.lru_cache(maxsize=4096)
def _plan(batch, seqlen_q, heads, kv_heads, head_dim, dtype, paged, page_size, max_seqlen_k, causal,
         num_splits, num_sms=132, l2_bytes=50 * 1024 * 1024):
    """The kernel specialisations and launch grids of one call (no tensors
    needed: shapes and options only). Returns a dict with the decode and
    combine constexprs and grids and the number of splits."""
    group = heads // kv_heads
    head_tile = _pow2(head_dim)
    group_tile = _pow2(group)
    if group_tile > MAX_ROWS:
        raise NotImplementedError(f"flash_attn_with_kvcache: {group} query heads per kv head is more than "
                                  f"fakv handles ({MAX_ROWS})")
    sq_block = max(1, min(_pow2(seqlen_q), MAX_ROWS // group_tile))
    m_blocks = math.ceil(seqlen_q / sq_block)
    # Keys per block: 32 reads the cache fastest on the H200 for head dims up
    # to 128 (bench/sweep_decode.py: small tiles, several blocks per SM); 64
    # above. Pages that hold whole blocks are copied by TMA, others gathered.
    block_n = 32 if head_tile <= 128 else 64
    n_blocks = math.ceil(max(max_seqlen_k, 1) / block_n)
    if num_splits <= 0:
        size_one_kv_head = max_seqlen_k * head_dim * 2 * 2
        num_splits = num_splits_heuristic(batch * kv_heads * m_blocks, num_sms, n_blocks, m_blocks,
                                          size_one_kv_head, causal, MAX_SPLITS, l2_bytes)
    num_splits = max(1, min(num_splits, MAX_SPLITS, n_blocks))
    head_block = max(1, min(_pow2(heads), 16384 // (_pow2(num_splits) * head_tile)))
    return {
        # decode.py is written per query head; fakv-pack-gqa runs the GROUP
        # heads of a kv head (padded to group_tile rows) in one program.
        "decode": dict(HEAD_DIM=head_tile, BLOCK_N=block_n, GROUP=group, SQ_BLOCK=sq_block,
                       PAGE_SIZE=page_size if paged else 0, CAUSAL=bool(causal) and seqlen_q > 1,
                       BATCH_IDX=False, SOFTCAP=False, WINDOW=False, ALIBI=False),
        "decode_grid": (num_splits * m_blocks, heads, batch),
        # Ring depth (docs/gpu-results.md): three K/V blocks in flight read
        # the cache fastest at head dims up to 128 (decode.py's own stages=3);
        # above, two (shared memory).
        "decode_options": dict(stages=3 if head_tile <= 128 else 2),
        "combine": dict(HEAD_DIM=head_tile, HEAD_BLOCK=head_block, MAX_SPLITS=_pow2(num_splits)),
        "combine_grid": (math.ceil(heads / head_block), seqlen_q, batch),
        "num_splits": num_splits,
    }


def plain_extras(seqlens, lse):
    """decode.py's arguments after `scale` when cache_batch_idx, softcap,
    window_size and alibi_slopes are not used: (BatchIdx, softcap, left,
    right, Slopes, slopes_batch_stride), pointers to tensors never read."""
    return seqlens, 0.0, -1, -1, lse, 0


def _check(cond, message):
    if not cond:
        raise ValueError("flash_attn_with_kvcache: " + message)


def with_kernels(decode=None, combine=None):
    """flash_attn_with_kvcache run by other kernels: `decode` in place of
    kernels/decode.py's (a copy with another score_mod, say; same
    parameters) and `combine` in place of kernels/combine.py's. Returns a
    function with flash_attn_with_kvcache's signature (kernels/README.md)."""

    def flash_attn_with_kvcache(q, k_cache, v_cache, k=None, v=None, rotary_cos=None, rotary_sin=None,
                                cache_seqlens=None, cache_batch_idx=None, cache_leftpad=None, block_table=None,
                                softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                                rotary_interleaved=True, alibi_slopes=None, num_splits=0,
                                return_softmax_lse=False):
        return _attention(decode, combine, q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens,
                          cache_batch_idx, cache_leftpad, block_table, softmax_scale, causal, window_size,
                          softcap, rotary_interleaved, alibi_slopes, num_splits, return_softmax_lse)

    flash_attn_with_kvcache.__doc__ = _DOC
    return flash_attn_with_kvcache


def _check_data(q):
    """Whether to check cache_seqlens and block_table entries (a copy to the
    host): not while a CUDA graph is captured, nor with FAKV_CHECK_DATA=0."""
    if os.environ.get("FAKV_CHECK_DATA", "1") == "0":
        return False
    if T.device(q) != "cuda":
        return True
    import torch
    return not torch.cuda.is_current_stream_capturing()


def _attention(decode, combine, q, k_cache, v_cache, k, v, rotary_cos, rotary_sin, cache_seqlens,
               cache_batch_idx, cache_leftpad, block_table, softmax_scale, causal, window_size, softcap,
               rotary_interleaved, alibi_slopes, num_splits, return_softmax_lse):
    # Docstring: _DOC below.
    for name, value, default in (("k", k, None), ("v", v, None), ("rotary_cos", rotary_cos, None),
                                 ("rotary_sin", rotary_sin, None), ("cache_leftpad", cache_leftpad, None)):
        _not_yet(name, value, default)

    # ---- shapes, dtypes, devices --------------------------------------------------------------
    for name, t in (("q", q), ("k_cache", k_cache), ("v_cache", v_cache)):
        _check(T.is_array(t), f"`{name}` must be a torch.Tensor (or a numpy array on the CPU path)")
        _check(len(t.shape) == 4, f"`{name}` must be 4-D, got shape {tuple(t.shape)}")
        _check(T.dtype(t) in _DTYPES, f"`{name}` must be float16 or bfloat16, got {t.dtype}")
        _check(T.strides(t)[-1] == 1, f"`{name}` must be contiguous in its last dimension")
    _check(T.dtype(k_cache) == T.dtype(q) and T.dtype(v_cache) == T.dtype(q),
           f"q, k_cache and v_cache must share one dtype, got {q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    _check(T.device(k_cache) == T.device(q) and T.device(v_cache) == T.device(q),
           "q, k_cache and v_cache must be on one device")
    _check(tuple(k_cache.shape) == tuple(v_cache.shape),
           f"k_cache {tuple(k_cache.shape)} and v_cache {tuple(v_cache.shape)} must have one shape")
    _check(T.strides(k_cache) == T.strides(v_cache), "k_cache and v_cache must have the same strides")
    batch, seqlen_q, heads, head_dim = q.shape
    kv_heads = k_cache.shape[2]
    _check(seqlen_q >= 1, "seqlen_q must be at least 1")
    _check(k_cache.shape[3] == head_dim, f"head_dim of q ({head_dim}) and of the cache ({k_cache.shape[3]}) differ")
    _check(head_dim % 8 == 0 and head_dim <= 256, f"head_dim must be a multiple of 8 up to 256, got {head_dim}")
    _check(heads % kv_heads == 0, f"heads ({heads}) must be a multiple of kv heads ({kv_heads})")
    paged = block_table is not None
    if paged:
        _check(T.is_array(block_table) and T.dtype(block_table) == "i32"
               and len(block_table.shape) == 2 and block_table.shape[0] == batch,
               f"`block_table` must be an int32 tensor (batch={batch}, max_blocks)")
        _check(T.device(block_table) == T.device(q), "`block_table` must be on q's device")
        num_pages, page_size = k_cache.shape[0], k_cache.shape[1]
        capacity = block_table.shape[1] * page_size
    else:
        _check(cache_batch_idx is not None or k_cache.shape[0] >= batch,
               f"k_cache holds {k_cache.shape[0]} sequences, q has {batch}")
        num_pages, page_size = k_cache.shape[0], k_cache.shape[1]
        capacity = page_size

    if cache_seqlens is None:
        cache_seqlens = capacity
    check_data = _check_data(q)
    lens = None                                           # cache_seqlens on the host, when checked
    if isinstance(cache_seqlens, int):
        _check(0 <= cache_seqlens <= capacity,
               f"cache_seqlens ({cache_seqlens}) must be in [0, {capacity}] (the cache's rows)")
        seqlens = T.full_int32((batch,), cache_seqlens, q)
        if paged and check_data:
            import numpy as np
            lens = np.full(batch, cache_seqlens)
    else:
        _check(T.is_array(cache_seqlens) and T.dtype(cache_seqlens) == "i32"
               and tuple(cache_seqlens.shape) == (batch,) and T.strides(cache_seqlens)[0] == 1,
               f"`cache_seqlens` must be an int or a contiguous int32 tensor ({batch},)")
        _check(T.device(cache_seqlens) == T.device(q), "`cache_seqlens` must be on q's device")
        seqlens = cache_seqlens
        if check_data:
            lens = T.host(seqlens).astype("int64")
            _check(int(lens.min()) >= 0, "cache_seqlens must not be negative")
            _check(int(lens.max()) <= capacity,
                   f"cache_seqlens ({int(lens.max())}) exceeds the cache ({capacity} rows)")
    if paged and check_data:
        import numpy as np
        used = np.arange(block_table.shape[1])[None, :] < ((lens + page_size - 1) // page_size)[:, None]
        entries = T.host(block_table)[used]
        _check(entries.size == 0 or (int(entries.min()) >= 0 and int(entries.max()) < num_pages),
               f"block_table entries used by cache_seqlens must be in [0, {num_pages})")

    # ---- cache_batch_idx, softcap, window_size, alibi_slopes -------------------------------------
    batch_idx = seqlens                                   # any int32 tensor when unused
    if cache_batch_idx is not None:
        _check(not paged, "cache_batch_idx is for a contiguous cache (FlashAttention: not with block_table)")
        _check(T.is_array(cache_batch_idx) and T.dtype(cache_batch_idx) == "i32"
               and tuple(cache_batch_idx.shape) == (batch,) and T.strides(cache_batch_idx)[0] == 1,
               f"`cache_batch_idx` must be a contiguous int32 tensor ({batch},)")
        _check(T.device(cache_batch_idx) == T.device(q), "`cache_batch_idx` must be on q's device")
        if check_data:
            rows = T.host(cache_batch_idx)
            _check(int(rows.min()) >= 0 and int(rows.max()) < k_cache.shape[0],
                   f"cache_batch_idx entries must be in [0, {k_cache.shape[0]}) (the cache's sequences)")
        batch_idx = cache_batch_idx
    _check(isinstance(softcap, numbers.Real) and not isinstance(softcap, bool) and math.isfinite(softcap)
           and softcap >= 0, f"`softcap` must be a finite number >= 0, got {softcap!r}")
    softcap = float(softcap)
    _check(isinstance(window_size, (tuple, list)) and len(window_size) == 2
           and all(isinstance(w, numbers.Integral) and not isinstance(w, bool) for w in window_size),
           f"`window_size` must be a pair of ints (left, right), got {window_size!r}")
    # FlashAttention's normalisation: causal is the window (left, 0); a bound
    # of at least the cache's capacity is no bound; "causal" is then
    # (unbounded, 0), whatever `causal` said (it selects ALiBi's causal form).
    left, right = (-1 if w < 0 or w >= capacity else int(w) for w in window_size)
    if causal:
        right = 0
    fa_causal = left < 0 and right == 0
    slopes, slopes_stride = None, 0
    if alibi_slopes is not None:
        _check(T.is_array(alibi_slopes) and T.dtype(alibi_slopes) == "f32"
               and tuple(alibi_slopes.shape) in ((heads,), (batch, heads)),
               f"`alibi_slopes` must be a float32 tensor ({heads},) or ({batch}, {heads})")
        _check(T.device(alibi_slopes) == T.device(q), "`alibi_slopes` must be on q's device")
        _check(T.strides(alibi_slopes)[-1] == 1, "`alibi_slopes` must be contiguous in its last dimension")
        slopes = alibi_slopes
        slopes_stride = T.strides(alibi_slopes)[0] if len(alibi_slopes.shape) == 2 else 0
    # decode.py's flags for this call (plan() gives those of a call without
    # these options). A one-query causal call stays causal with ALiBi, as in
    # FlashAttention: its causal bias, slope * key, shifts the LSE.
    extras = dict(BATCH_IDX=cache_batch_idx is not None, SOFTCAP=softcap > 0, ALIBI=slopes is not None,
                  WINDOW=(left, right) != (-1, -1) and not fa_causal,
                  CAUSAL=fa_causal and (seqlen_q > 1 or slopes is not None))

    scale = 1.0 / math.sqrt(head_dim) if softmax_scale is None else float(softmax_scale)
    num_sms, l2 = T.device_properties(q)
    # Planned on the cache's capacity, as FlashAttention does (no data needed):
    # each program stops at its sequence's length.
    p = plan(batch, seqlen_q, heads, kv_heads, head_dim, T.dtype(q), paged, page_size, capacity, causal,
             num_splits, num_sms, l2)
    splits = p["num_splits"]

    if decode is None or combine is None:
        default_decode, default_combine = _kernels()
        decode, combine = decode or default_decode, combine or default_combine
    out = T.empty((batch, seqlen_q, heads, head_dim), T.dtype(q), q)
    lse = T.empty((batch, heads, seqlen_q), "f32", q)
    tile = p["decode"]["HEAD_DIM"]
    if splits > 1:
        out_part = T.empty((splits, batch, seqlen_q, heads, tile), "f32", q)
        lse_part = T.empty((splits, batch, heads, seqlen_q), "f32", q)
    else:
        out_part = lse_part = lse                        # not written with one split
    table = block_table if paged else seqlens            # any int32 tensor when unused
    q = T.contiguous(q)                                   # out is written with q's strides
    qs, ks, os_ = T.strides(q), T.strides(k_cache), T.strides(out)
    decode.with_options(**p["decode_options"])[p["decode_grid"]](
        q, k_cache, v_cache, table, seqlens, out, lse, out_part, lse_part,
        qs[0], qs[1], qs[2], ks[0], ks[1], ks[2], T.strides(block_table)[0] if paged else 0,
        batch, seqlen_q, heads, kv_heads, head_dim, page_size, num_pages, scale,
        batch_idx, softcap, left, right, lse if slopes is None else slopes, slopes_stride,
        **dict(p["decode"], **extras))
    if splits > 1:
        combine[p["combine_grid"]](out_part, lse_part, out, lse, os_[0], os_[1], os_[2],
                                   splits, batch, seqlen_q, heads, head_dim, **p["combine"])
    return (out, lse) if return_softmax_lse else out


_DOC = """Attention of q over a KV cache (FlashAttention's contract).

    q: (batch, seqlen_q, heads, head_dim); k_cache, v_cache: (batch_cache,
    seqlen_cache, kv_heads, head_dim), or (num_blocks, page_size, kv_heads,
    head_dim) with block_table (batch, max_blocks) int32. cache_seqlens: int or
    (batch,) int32, the keys of each sequence. Returns out (batch, seqlen_q,
    heads, head_dim) in q's dtype, and with return_softmax_lse the natural-log
    LSE (batch, heads, seqlen_q) float32.
    """

flash_attn_with_kvcache = with_kernels()
