"""Split-KV decode attention over a paged or contiguous KV cache, in fakv.

Written for one program per (split x query block, query head, sequence):
the program streams its share of the keys of kv head h // GROUP, BLOCK_N at
a time, through the online softmax, and writes the output and its LSE (one
split) or f32 partials for combine.py (several). `pack_gqa=1` has the
compiler (fakv-pack-gqa) run the GROUP query heads of a kv head in one
program, stacked in the rows of its tiles, so that each K/V block is read
once per kv head and the heads times the query positions are the M of the
matmuls; the launch keeps the per-head grid. `stages=3`: three blocks of K
and V in flight (fakv.interface.plan lowers it to 2 for head dims above 128).
"""
import fakv
import fakv.language as fl
from fakv.kernels.combine import merge_splits

# Codes a program reports bad data with (fl.report; fakv.runtime.ERROR_KINDS),
# plus the batch row.
SEQLENS_ERROR, BLOCK_TABLE_ERROR, BATCH_IDX_ERROR, LEFTPAD_ERROR = 1 << 24, 2 << 24, 3 << 24, 5 << 24


@fakv.jit
def score_mod(s, q_pos, k_pos, seqlen_k, seqlen_q, left, right, slopes,
              CAUSAL: fl.constexpr, WINDOW: fl.constexpr, ALIBI: fl.constexpr):
    """Scores of one block of keys: invalid keys out, the ALiBi bias, then the
    sliding window or the causal mask (both aligned bottom-right). Copy this
    kernel and change this to make a variant."""
    s = fl.length_mask(s, k_pos, seqlen_k)
    if ALIBI:
        s = fl.alibi(s, q_pos, k_pos, seqlen_k - seqlen_q, slopes)
    if WINDOW:
        s = fl.window_mask(s, q_pos, k_pos, seqlen_k - seqlen_q, left, right)
    elif CAUSAL:
        s = fl.causal_mask(s, q_pos, k_pos, seqlen_k - seqlen_q)
    return s


@fakv.jit
def load_kv(Cache, Table, kvh, row, b, n0, seqlen, pad, head_dim, page_size, num_pages, strides, Errors,
            BLOCK_N: fl.constexpr, HEAD_DIM: fl.constexpr, PAGE_SIZE: fl.constexpr):
    """Keys [n0, n0 + BLOCK_N) of kv head kvh of sequence b, counted from its
    left padding `pad`: through the block table (a compile-time PAGE_SIZE),
    or from cache row `row` (PAGE_SIZE 0: a contiguous cache, `page_size`
    rows per sequence). A page outside the cache reads as zeros and is
    reported."""
    if PAGE_SIZE:
        return fl.paged_load(Cache, kvh, n0, BLOCK_N, HEAD_DIM, seqlen, PAGE_SIZE, num_pages, strides,
                             table=Table, leftpad=pad, channels=head_dim, report=(Errors, BLOCK_TABLE_ERROR + b))
    return fl.paged_load(Cache, kvh, n0, BLOCK_N, HEAD_DIM, seqlen, page_size, num_pages, strides,
                         page=row, leftpad=pad, channels=head_dim, report=(Errors, BATCH_IDX_ERROR + b))


@fakv.jit(pack_gqa=1, stages=3)
def decode(Q, K, V, Table, Seqlens, Out, Lse, OutPart, LsePart,
           q_batch_stride, q_seq_stride, q_head_stride,
           page_stride, row_stride, head_stride, table_stride,
           batch, seqlen_q, heads, kv_heads, head_dim, page_size, num_pages, scale,
           BatchIdx, softcap, left, right, Slopes, slopes_batch_stride, Errors, capacity, LeftPad, new_keys,
           Counters, HEAD_DIM: fl.constexpr, BLOCK_N: fl.constexpr, GROUP: fl.constexpr, SQ_BLOCK: fl.constexpr,
           PAGE_SIZE: fl.constexpr, CAUSAL: fl.constexpr, BATCH_IDX: fl.constexpr, SOFTCAP: fl.constexpr,
           WINDOW: fl.constexpr, ALIBI: fl.constexpr, LEFTPAD: fl.constexpr, PRESCALE: fl.constexpr,
           MERGE: fl.constexpr):
    split_mb, h, b = fl.program_id(0), fl.program_id(1), fl.program_id(2)
    m_blocks = (seqlen_q + SQ_BLOCK - 1) // SQ_BLOCK
    split, q0 = split_mb // m_blocks, (split_mb % m_blocks) * SQ_BLOCK
    num_splits = fl.num_programs(0) // m_blocks
    kvh = h // GROUP
    # The keys: cache rows [pad, Seqlens[b] + new_keys) (the new ones just
    # appended by append.py); `seqlen` counts them from the padding. A length
    # beyond `capacity` (the rows a sequence's cache holds) or a padding out
    # of range is bad data: reported, and the sequence reads no key.
    seqlen = Seqlens[b] + new_keys
    bad = (seqlen < new_keys) | (seqlen > capacity)
    fl.report(Errors, bad, SEQLENS_ERROR + b)
    pad = 0
    if LEFTPAD:
        pad = LeftPad[b]
        fl.report(Errors, (pad < 0) | (pad > seqlen), LEFTPAD_ERROR + b)
        bad = bad | (pad < 0) | (pad > seqlen)
    seqlen = fl.where(bad, 0, seqlen - pad)
    cache_row = b
    if BATCH_IDX:                          # contiguous cache rows picked by cache_batch_idx
        cache_row = BatchIdx[b]

    # The blocks of keys these queries may see, [lo, hi) (a window skips the
    # rest), and this split's share of them, [first, last).
    lo, hi = 0, (seqlen + BLOCK_N - 1) // BLOCK_N
    if WINDOW:
        pos = q0 + seqlen - seqlen_q       # the first query's position in the cache
        lo = fl.where(left < 0, 0, fl.maximum(pos - left, 0) // BLOCK_N)
        hi = fl.where(right < 0, hi, fl.minimum(hi, (pos + SQ_BLOCK - 1 + right) // BLOCK_N + 1))
    per_split = (hi - lo + num_splits - 1) // num_splits
    first = lo + split * per_split
    last = fl.minimum(first + per_split, hi)

    # Query positions [q0, q0 + SQ_BLOCK) of head h.
    q = fl.load(Q + b * q_batch_stride + h * q_head_stride, (SQ_BLOCK, HEAD_DIM), (q0, 0), (q_seq_stride, 1),
                bounds=(seqlen_q, head_dim))
    q_pos = q0 + fl.arange(0, SQ_BLOCK)
    sm_scale = scale
    if SOFTCAP or PRESCALE:                # scores scaled before the masks: FlashAttention's softcap
        scale = 1.0                        # (softcap * tanh(scale * q.k / softcap)), or a scale <= 0
    slopes = fl.zeros((SQ_BLOCK,))
    if ALIBI:                              # this head's slope on every row, in units of the scores
        slopes = fl.load(Slopes + b * slopes_batch_stride + h, (SQ_BLOCK,), (0,), (0,)) / scale

    table = Table + b * table_stride
    strides = (page_stride, row_stride, head_stride)
    m = fl.full((SQ_BLOCK,), float("-inf"))
    l = fl.zeros((SQ_BLOCK,))
    acc = fl.zeros((SQ_BLOCK, HEAD_DIM))
    for blk in fl.range(first, last):
        n0 = blk * BLOCK_N
        k = load_kv(K, table, kvh, cache_row, b, n0, seqlen, pad, head_dim, page_size, num_pages, strides,
                    Errors, BLOCK_N, HEAD_DIM, PAGE_SIZE)
        v = load_kv(V, table, kvh, cache_row, b, n0, seqlen, pad, head_dim, page_size, num_pages, strides,
                    Errors, BLOCK_N, HEAD_DIM, PAGE_SIZE)
        s = fl.dot(q, k, trans_b=True)
        if SOFTCAP:
            s = fl.softcap(s * sm_scale, softcap)
        elif PRESCALE:                     # (the online softmax folds in a positive scale only)
            s = s * sm_scale
        s = score_mod(s, q_pos, n0 + fl.arange(0, BLOCK_N), seqlen, seqlen_q, left, right, slopes,
                      CAUSAL, WINDOW, ALIBI)
        m, l, p, alpha = fl.online_softmax(s, m, l, scale)
        acc = fl.dot(p.to(q.dtype), v, acc * alpha[:, None])

    # out = acc / l, lse = m + log(l); a row that saw no key gives 0 and -inf
    # (+inf in the output LSE, as FlashAttention 2 gives).
    empty = l == 0.0
    out = acc * fl.where(empty, 0.0, 1.0 / l)[:, None]
    lse = fl.where(empty, float("-inf"), m + fl.log(l))
    if ALIBI and CAUSAL and not WINDOW:    # FlashAttention biases causal rows by slope * key (its LSE)
        lse = lse + slopes * scale * (q_pos + seqlen - seqlen_q)
    if num_splits == 1:
        fl.store(Out + b * q_batch_stride + h * q_head_stride, out, (q0, 0), (q_seq_stride, 1),
                 bounds=(seqlen_q, head_dim))
        fl.store(Lse + (b * heads + h) * seqlen_q, fl.where(empty, float("inf"), lse), (q0,), (1,),
                 bounds=(seqlen_q,))
    else:
        # Partials: (splits, batch, seqlen_q, heads, HEAD_DIM) and (splits, batch, heads, seqlen_q).
        part = split * batch + b
        fl.store(OutPart + (part * seqlen_q * heads + h) * HEAD_DIM, out, (q0, 0), (heads * HEAD_DIM, 1),
                 bounds=(seqlen_q, head_dim))
        fl.store(LsePart + (part * heads + h) * seqlen_q, lse, (q0,), (1,), bounds=(seqlen_q,))
        if MERGE:                          # one launch: the last split merges (combine.py's merge_splits)
            merge_splits(OutPart, LsePart, Out, Lse, Counters, b, h, q0, (b * heads + h) * m_blocks + q0 // SQ_BLOCK,
                         num_splits, batch, seqlen_q, heads, head_dim, q_batch_stride, q_seq_stride, q_head_stride,
                         HEAD_DIM, SQ_BLOCK)
