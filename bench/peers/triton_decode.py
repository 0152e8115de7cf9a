"""A split-KV decode attention in Triton, as a Triton user would write it:
the peer fakv's host-cost bench (bench/bench_host.py) measures against.

One program per (sequence, query head, split) reads its share of the keys of
kv head h // group (through the block table when paged), block by block,
with an online softmax on the CUDA cores; a second kernel merges the splits
by their LSEs. `decode(q, k_cache, v_cache, cache_seqlens, block_table=None,
num_splits=None)` takes flash_attn_with_kvcache's layouts and returns the
output (batch, 1, heads, head_dim).
"""
import math

import torch
import triton
import triton.language as tl


@triton.jit
def _split_kernel(Q, K, V, Table, Lens, OutPart, LsePart,
                  stride_qb, stride_qh, stride_kp, stride_kr, stride_kh, stride_tb,
                  scale, group, batch, heads, keys_per_split,
                  PAGE: tl.constexpr, PAGED: tl.constexpr, D: tl.constexpr, BLOCK_N: tl.constexpr):
    b, h, s = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    kvh = h // group
    seqlen = tl.load(Lens + b)
    start = s * keys_per_split
    end = tl.minimum(start + keys_per_split, seqlen)
    d = tl.arange(0, D)
    q = tl.load(Q + b * stride_qb + h * stride_qh + d).to(tl.float32)
    m = -float("inf")
    l = 0.0
    acc = tl.zeros([D], dtype=tl.float32)
    for n0 in range(start, end, BLOCK_N):
        n = n0 + tl.arange(0, BLOCK_N)
        valid = n < end
        if PAGED:
            page = tl.load(Table + b * stride_tb + n // PAGE, mask=valid, other=0)
            row = page.to(tl.int64) * stride_kp + (n % PAGE) * stride_kr
        else:
            row = b.to(tl.int64) * stride_kp + n * stride_kr
        off = row[:, None] + kvh * stride_kh + d[None, :]
        k = tl.load(K + off, mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.where(valid, tl.sum(q[None, :] * k, axis=1) * scale, -float("inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=0))
        p = tl.exp(scores - m_new)
        alpha = tl.exp(m - m_new)
        v = tl.load(V + off, mask=valid[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        l = l * alpha + tl.sum(p, axis=0)
        m = m_new
    part = (s * batch + b) * heads + h
    tl.store(OutPart + part * D + d, tl.where(l > 0, acc / l, 0.0))
    tl.store(LsePart + part, tl.where(l > 0, m + tl.log(l), -float("inf")))


@triton.jit
def _combine_kernel(OutPart, LsePart, Out, splits, batch, heads, stride_ob, stride_oh,
                    D: tl.constexpr, MAX_SPLITS: tl.constexpr):
    b, h = tl.program_id(0), tl.program_id(1)
    s = tl.arange(0, MAX_SPLITS)
    d = tl.arange(0, D)
    part = (s * batch + b) * heads + h
    lse = tl.load(LsePart + part, mask=s < splits, other=-float("inf"))
    top = tl.max(lse, axis=0)
    w = tl.where(lse > -float("inf"), tl.exp(lse - top), 0.0)
    parts = tl.load(OutPart + part[:, None] * D + d[None, :], mask=(s < splits)[:, None], other=0.0)
    out = tl.sum(w[:, None] * parts, axis=0) / tl.sum(w, axis=0)
    tl.store(Out + b * stride_ob + h * stride_oh + d, out.to(Out.dtype.element_ty))


def decode(q, k_cache, v_cache, cache_seqlens, block_table=None, num_splits=None, block_n=64):
    batch, sq, heads, d = q.shape
    assert sq == 1 and d == triton.next_power_of_2(d)
    kv_heads = k_cache.shape[2]
    paged = block_table is not None
    page = k_cache.shape[1]
    capacity = block_table.shape[1] * page if paged else page
    if num_splits is None:          # enough programs for every SM, a few blocks of keys each
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        num_splits = max(1, min(2 * sms // (batch * heads) + 1, math.ceil(capacity / (4 * block_n))))
    keys_per_split = math.ceil(capacity / num_splits / block_n) * block_n
    out_part = torch.empty((num_splits, batch, heads, d), dtype=torch.float32, device=q.device)
    lse_part = torch.empty((num_splits, batch, heads), dtype=torch.float32, device=q.device)
    out = torch.empty_like(q)
    table = block_table if paged else cache_seqlens
    _split_kernel[(batch, heads, num_splits)](
        q, k_cache, v_cache, table, cache_seqlens, out_part, lse_part,
        q.stride(0), q.stride(2), k_cache.stride(0), k_cache.stride(1), k_cache.stride(2),
        block_table.stride(0) if paged else 0, 1 / math.sqrt(d), heads // kv_heads, batch, heads, keys_per_split,
        PAGE=page, PAGED=paged, D=d, BLOCK_N=block_n)
    _combine_kernel[(batch, heads)](out_part, lse_part, out, num_splits, batch, heads, out.stride(0), out.stride(2),
                                    D=d, MAX_SPLITS=triton.next_power_of_2(num_splits))
    return out
