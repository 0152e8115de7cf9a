"""Split-KV decode attention over a paged or contiguous KV cache: one program per (query head, sequence x query
block, split) (sequence first without HEADS_FIRST) streams its share of kv head h // GROUP's keys through the online
softmax into the output and LSE, or f32 partials for combine.py. pack_gqa: a kv head's GROUP heads in one program."""
import fakv
import fakv.language as fl
from fakv.kernels.append import (APPEND_ERROR, BATCH_IDX_ERROR, BLOCK_TABLE_ERROR, LEFTPAD_ERROR, ROTARY_ERROR,
                                 SEQLENS_ERROR, append_rows, new_rows, rotated_rows)
from fakv.kernels.splits import cluster_merge, longest_first, merge_splits, store_partial, used_splits


@fakv.jit
def score_mod(s, q_pos, k_pos, valid, seqlen_k, seqlen_q, left, right, slopes,
              CAUSAL: fl.constexpr, WINDOW: fl.constexpr, ALIBI: fl.constexpr):
    """Scores of one block of keys: keys at or past `valid` out, the ALiBi bias, then the sliding window or
    the causal mask (both aligned bottom-right). Copy this kernel and change this to make a variant."""
    s = fl.length_mask(s, k_pos, valid)
    if ALIBI:
        s = fl.alibi(s, q_pos, k_pos, seqlen_k - seqlen_q, slopes)
    if WINDOW:
        s = fl.window_mask(s, q_pos, k_pos, seqlen_k - seqlen_q, left, right)
    elif CAUSAL:
        s = fl.causal_mask(s, q_pos, k_pos, seqlen_k - seqlen_q)
    return s


@fakv.jit
def attend(q, k, v, m, l, acc, q_pos, k_pos, valid, seqlen, seqlen_q, left, right, slopes, scale, sm_scale, softcap,
           CAUSAL: fl.constexpr, WINDOW: fl.constexpr, ALIBI: fl.constexpr, SOFTCAP: fl.constexpr,
           PRESCALE: fl.constexpr):
    """One block of keys through the online softmax: (m, l, acc) updated."""
    s = fl.dot(q, k, trans_b=True)
    if SOFTCAP:                            # scores scaled before the masks: FlashAttention's softcap
        s = fl.softcap(s * sm_scale, softcap)
    elif PRESCALE:                         # (the online softmax folds in a positive scale only)
        s = s * sm_scale
    s = score_mod(s, q_pos, k_pos, valid, seqlen, seqlen_q, left, right, slopes, CAUSAL, WINDOW, ALIBI)
    m, l, p, alpha = fl.online_softmax(s, m, l, scale)
    return m, l, fl.dot(p.to(q.dtype), v, acc * alpha[:, None])


@fakv.jit
def load_kv(Cache, Table, kvh, row, b, n0, seqlen, pad, head_dim, page_size, num_pages, strides, Errors,
            BLOCK_N: fl.constexpr, HEAD_DIM: fl.constexpr, PAGE_SIZE: fl.constexpr):
    """Keys [n0, n0 + BLOCK_N) of kv head kvh of sequence b after its padding, through the block table
    (PAGE_SIZE) or from contiguous cache row `row`; a page outside the cache reads as zeros, reported."""
    return fl.paged_load(Cache, kvh, n0, BLOCK_N, HEAD_DIM, seqlen, PAGE_SIZE if PAGE_SIZE else page_size, num_pages,
                         strides, table=Table if PAGE_SIZE else None, page=None if PAGE_SIZE else row, leftpad=pad,
                         channels=head_dim, report=(Errors, (BLOCK_TABLE_ERROR if PAGE_SIZE else BATCH_IDX_ERROR) + b))


@fakv.jit(pack_gqa=0, stages=3)
def decode(Q, K, V, Table, Seqlens, Out, Lse, OutPart, LsePart,
           q_batch_stride, q_seq_stride, q_head_stride, page_stride, row_stride, head_stride, table_stride,
           batch, seqlen_q, heads, kv_heads, head_dim, page_size, num_pages, scale,
           BatchIdx, softcap, left, right, Slopes, slopes_batch_stride, Errors, capacity, LeftPad, new_keys,
           Counters, KNew, VNew, new_batch_stride, new_seq_stride, new_head_stride, Cos, Sin, cos_stride, rotary_dim,
           rotary_rows, q_step, HEAD_DIM: fl.constexpr, BLOCK_N: fl.constexpr, NEW_N: fl.constexpr, GROUP: fl.constexpr,
           SQ_BLOCK: fl.constexpr, PAGE_SIZE: fl.constexpr, CAUSAL: fl.constexpr, BATCH_IDX: fl.constexpr,
           SOFTCAP: fl.constexpr, WINDOW: fl.constexpr, ALIBI: fl.constexpr, LEFTPAD: fl.constexpr,
           PRESCALE: fl.constexpr, MERGE: fl.constexpr, APPEND: fl.constexpr, ROTARY: fl.constexpr,
           INTERLEAVED: fl.constexpr, ADAPTIVE: fl.constexpr, LONGEST_FIRST: fl.constexpr, HEADS_FIRST: fl.constexpr):
    axes = (1, 0) if HEADS_FIRST else (0, 1)      # HEADS_FIRST: a sequence's heads start together
    bm, h, split = fl.program_id(axes[0]), fl.program_id(axes[1]), fl.program_id(2)
    m_blocks = (seqlen_q + SQ_BLOCK - 1) // SQ_BLOCK
    b, q0 = bm // m_blocks, (bm % m_blocks) * SQ_BLOCK
    b, old = longest_first(Seqlens, b, capacity, LONGEST_FIRST) if LONGEST_FIRST else (b, Seqlens[b])  # (splits.py)
    num_splits, kvh = fl.num_programs(2), h // GROUP
    # The keys: cache rows [pad, old + new_keys) after the padding; the new ones appended by append.py, or with
    # APPEND read from KNew / VNew. Bad lengths or padding are reported, and the sequence reads no key.
    seqlen = old + new_keys
    bad = (old < 0) | (old > capacity - new_keys)         # (not seqlen > capacity: old + new_keys may wrap)
    fl.report(Errors, bad, fl.where((new_keys > 0) & (old >= 0), APPEND_ERROR + b, SEQLENS_ERROR + b))
    pad = 0
    if LEFTPAD:
        pad = LeftPad[b]
        fl.report(Errors, (pad < 0) | (pad > seqlen), LEFTPAD_ERROR + b)
        bad = bad | (pad < 0) | (pad > seqlen)
    seqlen = fl.where(bad, 0, seqlen - pad)
    cached = fl.where(bad, 0, fl.maximum(old - pad, 0)) if APPEND else seqlen
    cache_row = BatchIdx[b] if BATCH_IDX else b      # contiguous cache rows picked by cache_batch_idx

    # The blocks of cached keys these queries may see, [lo, hi), and this split's share, [first, last).
    lo, hi = 0, (cached + BLOCK_N - 1) // BLOCK_N
    if WINDOW:
        pos = q0 + seqlen - seqlen_q       # the first query's position in the cache
        lo = fl.where(left < 0, 0, fl.maximum(pos - left, 0) // BLOCK_N)
        hi = fl.where(right < 0, hi, fl.minimum(hi, (pos + SQ_BLOCK - 1 + right) // BLOCK_N + 1))
    splits = used_splits(Seqlens, cached, num_splits, capacity, ADAPTIVE) if ADAPTIVE else num_splits  # (splits.py)
    per_split = (hi - lo + APPEND + splits - 1) // splits       # APPEND: the last split's blocks for new keys
    first, last = lo + split * per_split, fl.minimum(lo + (split + 1) * per_split, hi)

    # Queries [q0, q0 + SQ_BLOCK) of head h, with ROTARY rotated at old + q0 + i * q_step (FlashAttention's).
    q = rotated_rows(Q + b.to(fl.int64) * q_batch_stride + h * q_head_stride + q0 * q_seq_stride, q_seq_stride,
                     seqlen_q - q0, head_dim, Cos, Sin, old + q0 * q_step, q_step, cos_stride, rotary_dim,
                     rotary_rows, Errors, ROTARY_ERROR + b, SQ_BLOCK, HEAD_DIM, ROTARY, INTERLEAVED)
    q_pos = q0 + fl.arange(0, SQ_BLOCK)
    # Scores scaled before the masks with softcap (softcap * tanh(scale * q.k / softcap)) or a scale <= 0.
    sm_scale, scale = scale, (1.0 if SOFTCAP or PRESCALE else scale)
    slopes = fl.zeros((SQ_BLOCK,))
    if ALIBI:                              # this head's slope on every row, in units of the scores
        slopes = fl.load(Slopes + b.to(fl.int64) * slopes_batch_stride + h, (SQ_BLOCK,), (0,), (0,)) / scale
    mods = (seqlen_q, left, right, slopes, scale, sm_scale, softcap, CAUSAL, WINDOW, ALIBI, SOFTCAP, PRESCALE)

    table, strides = Table + b.to(fl.int64) * table_stride, (page_stride, row_stride, head_stride)
    if APPEND:      # first: the new rows written (past every split's keys: a share each, the last split's first)
        new = b.to(fl.int64) * new_batch_stride + kvh * new_head_stride
        append_rows(KNew + new, VNew + new, new_seq_stride, K + kvh.to(fl.int64) * head_stride,
                    V + kvh.to(fl.int64) * head_stride, table, BatchIdx, Cos, Sin, Errors, b,
                    (num_splits - 1 - split) * m_blocks + bm % m_blocks, new_keys, num_splits * m_blocks,
                    fl.where(bad, -1, old), page_stride, row_stride, num_pages, head_dim, rotary_dim, cos_stride,
                    HEAD_DIM, PAGE_SIZE, BATCH_IDX, ROTARY, INTERLEAVED, False)
    m, l, acc = fl.full((SQ_BLOCK,), float("-inf")), fl.zeros((SQ_BLOCK,)), fl.zeros((SQ_BLOCK, HEAD_DIM))
    for blk in fl.range(first, last):
        n0 = blk * BLOCK_N
        k = load_kv(K, table, kvh, cache_row, b, n0, cached, pad, head_dim, page_size, num_pages, strides,
                    Errors, BLOCK_N, HEAD_DIM, PAGE_SIZE)
        v = load_kv(V, table, kvh, cache_row, b, n0, cached, pad, head_dim, page_size, num_pages, strides,
                    Errors, BLOCK_N, HEAD_DIM, PAGE_SIZE)
        m, l, acc = attend(q, k, v, m, l, acc, q_pos, n0 + fl.arange(0, BLOCK_N), cached, seqlen, *mods)
    if APPEND:                    # then the last split attends the new keys, after its blocks (measured faster)
        new_at = (KNew + new, VNew + new, new_seq_stride, head_dim, Cos, Sin, old, cos_stride, rotary_dim,
                  rotary_rows, Errors, ROTARY_ERROR + b, NEW_N, HEAD_DIM, ROTARY, INTERLEAVED)
        for t0 in fl.range(fl.maximum(pad - old, 0), fl.where((split == splits - 1) & (not bad), new_keys, 0),
                           NEW_N):       # NEW_N rows at a time; new keys before the padding: not attended
            kn, vn = new_rows(t0, new_keys, *new_at)
            m, l, acc = attend(q, kn, vn, m, l, acc, q_pos, old - pad + t0 + fl.arange(0, NEW_N), seqlen, seqlen,
                               *mods)
    # out = acc / l, lse = m + log(l); a row that saw no key gives 0 and -inf (+inf in Lse, as FlashAttention 2).
    out, lse = acc * fl.where(l == 0.0, 0.0, 1.0 / l)[:, None], fl.where(l == 0.0, float("-inf"), m + fl.log(l))
    if ALIBI and CAUSAL and not WINDOW:    # FlashAttention biases causal rows by slope * key (its LSE)
        lse = lse + slopes * scale * (q_pos + seqlen - seqlen_q)
    if MERGE > 1:            # one launch: the splits, a cluster, merge in it (splits.py), a slice of columns each
        out, lse = cluster_merge(out, lse, MERGE)
    if MERGE > 1 or num_splits == 1:       # (merged in the cluster: split 0 stores the LSE)
        c0 = split * (HEAD_DIM // MERGE) if MERGE > 1 else 0
        fl.store(Out + b.to(fl.int64) * q_batch_stride + h * q_head_stride, out, (q0, c0), (q_seq_stride, 1),
                 bounds=(seqlen_q, head_dim))
        fl.store(Lse + (b * heads + h) * seqlen_q, fl.where(lse == float("-inf"), float("inf"), lse), (q0,), (1,),
                 bounds=(fl.where(split == 0, seqlen_q, 0),))
    else:
        store_partial(OutPart, LsePart, out, lse, split * batch + b, h, q0, seqlen_q, heads, head_dim, HEAD_DIM)
        if MERGE:                          # one launch: the last split merges (splits.py's merge_splits)
            merge_splits(OutPart, LsePart, Out, Lse, Counters, b, h, q0, (b * heads + h) * m_blocks + q0 // SQ_BLOCK,
                         num_splits, batch, seqlen_q, heads, head_dim, q_batch_stride, q_seq_stride, q_head_stride,
                         HEAD_DIM, SQ_BLOCK, GROUP)
