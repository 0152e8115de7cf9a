"""FlashAttention's flash_attn_with_kvcache as its own tests define it, in
numpy (float64, and rounded to the input dtype where FlashAttention's
reference is): the append of k/v at cache_seqlens, rotary (RoPE) of the new
keys and of q, left padding, and the attention over the updated cache
(attention_ref.attention does the masks). Written from FlashAttention's
published semantics (shared/design/semantics.md, FlashAttention 2's test)
for the conformance grids: test/python/test_kvcache.py (CPU path, in CI) and
test/gpu/test_kvcache.py (the H200).
"""
import numpy as np

from attention_ref import attention


def rotate(x, cos, sin, positions, interleaved):
    """x (rows, ..., d) rotated at `positions` (rows,): the first rotary_dim =
    2 * cos.shape[1] channels, in float32, rounded once to x's dtype."""
    half = cos.shape[1]
    if half == 0:
        return x.copy()
    dtype = x.dtype
    c = cos[positions].astype(np.float32).reshape((len(positions),) + (1,) * (x.ndim - 2) + (half,))
    s = sin[positions].astype(np.float32).reshape(c.shape)
    out = x.astype(np.float32)
    if interleaved:
        x1, x2 = out[..., 0:2 * half:2].copy(), out[..., 1:2 * half:2].copy()
        out[..., 0:2 * half:2] = x1 * c - x2 * s
        out[..., 1:2 * half:2] = x1 * s + x2 * c
    else:
        x1, x2 = out[..., :half].copy(), out[..., half:2 * half].copy()
        out[..., :half] = x1 * c - x2 * s
        out[..., half:2 * half] = x1 * s + x2 * c
    return out.astype(dtype)


def dense(cache, table, page_size, rows):
    """The cache of sequence i as (rows, hk, d): cache row i, or its pages."""
    if table is None:
        return cache[rows]
    pos = np.arange(table.shape[1] * page_size)
    return cache[table[rows][pos // page_size], pos % page_size]


def kvcache_reference(q, k_cache, v_cache, seqlens, k=None, v=None, cos=None, sin=None, leftpad=None,
                      table=None, batch_idx=None, causal=False, window=(-1, -1), interleaved=True, alibi=None,
                      softcap=0.0, scale=None):
    """(out_ref, out_pt, lse_ref, k_cache_ref, v_cache_ref): FlashAttention's
    output in float64 and rounded to q's dtype where its reference is
    (out_pt), the natural-log LSE (+inf for a row without keys, as
    FlashAttention 2 gives), and the caches after the append (dense, one
    (capacity, hk, d) per sequence)."""
    b, sq, h, d = q.shape
    page_size = k_cache.shape[1]
    capacity = table.shape[1] * page_size if table is not None else k_cache.shape[1]
    scale = 1 / np.sqrt(d) if scale is None else scale
    rotary = cos is not None and cos.shape[1] > 0
    seqlen_new = 0 if k is None else k.shape[1]
    left, right = (-1 if w < 0 or w >= capacity else int(w) for w in window)
    local_or_causal = causal or (left, right) != (-1, -1)
    keys, values, kref, vref = [], [], [], []
    q_ro = q.copy()
    for i in range(b):
        row = i if batch_idx is None else int(batch_idx[i])
        kd = dense(k_cache, table, page_size, row).copy()
        vd = dense(v_cache, table, page_size, row).copy()
        n = int(seqlens[i])
        if k is not None:
            pos = n + np.arange(seqlen_new)
            kd[pos] = rotate(k[i], cos, sin, pos, interleaved) if rotary else k[i]
            vd[pos] = v[i]
        if rotary:
            qpos = n + np.arange(sq) if local_or_causal else np.full(sq, n)
            q_ro[i] = rotate(q[i], cos, sin, qpos, interleaved)
        pad = 0 if leftpad is None else int(leftpad[i])
        kref.append(kd)
        vref.append(vd)
        keys.append(kd[pad:n + seqlen_new])
        values.append(vd[pad:n + seqlen_new])
    lengths = [len(x) for x in keys]
    kw = dict(window=window, alibi=alibi, capacity=capacity, fa_softcap=softcap)
    out_ref, lse = attention(q_ro, keys, values, lengths, causal, scale, **kw)
    out_pt, _ = attention(q_ro, keys, values, lengths, causal, scale, q.dtype, **kw)
    lse = np.where(np.isneginf(lse), np.inf, lse)
    return out_ref, out_pt, lse, kref, vref


def check(out, out_ref, out_pt, alibi=False, fa3=False):
    """FlashAttention's kvcache rule: max |out - ref| <= mult * max |pt - ref|
    + 1e-5 (mult 3, 5 with ALiBi: FlashAttention 2's; 2 for FlashAttention
    3's cases, as its hopper test); FlashAttention 3's mean rule too (mean
    <= 1.5 * the reference's mean error, + 1e-7)."""
    err, base = np.abs(out.astype(np.float64) - out_ref), np.abs(out_pt - out_ref)
    mult = 2 if fa3 else 5 if alibi else 3
    ok = err.max() <= mult * base.max() + 1e-5 and err.mean() <= 1.5 * base.mean() + 1e-7
    return ok, (f"max {err.max():.3e} (limit {mult * base.max() + 1e-5:.3e}), mean {err.mean():.3e} "
                f"(limit {1.5 * base.mean() + 1e-7:.3e})")
