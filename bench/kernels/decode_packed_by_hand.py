"""kernels/decode.py as it was before fakv-pack-gqa: packed by hand, for
bench/bench_decode.py to compare with the compiler's packing in one run.

One program per (split, kv head x query block, sequence). The query heads
that share a kv head, times the query positions, are the rows of one tile;
GROUP is the group size rounded up to a power of two. Launch over
(splits, kv_heads * query blocks, batch) (`hand_packed_launch`).
"""
import fakv
import fakv.language as fl
from fakv.kernels.decode import load_kv, score_mod


@fakv.jit
def decode(Q, K, V, Table, Seqlens, Out, Lse, OutPart, LsePart,
           q_batch_stride, q_seq_stride, q_head_stride,
           page_stride, row_stride, head_stride, table_stride,
           batch, seqlen_q, heads, kv_heads, head_dim, page_size, num_pages, scale, Errors,
           HEAD_DIM: fl.constexpr, BLOCK_N: fl.constexpr, GROUP: fl.constexpr, SQ_BLOCK: fl.constexpr,
           PAGE_SIZE: fl.constexpr, CAUSAL: fl.constexpr):
    ROWS: fl.constexpr = SQ_BLOCK * GROUP
    split, kvh_mb, b = fl.program_id(0), fl.program_id(1), fl.program_id(2)
    num_splits = fl.num_programs(0)
    m_blocks = (seqlen_q + SQ_BLOCK - 1) // SQ_BLOCK
    kvh, q0 = kvh_mb // m_blocks, (kvh_mb % m_blocks) * SQ_BLOCK
    seqlen = Seqlens[b]

    # This split's blocks of keys: [first, last).
    n_blocks = (seqlen + BLOCK_N - 1) // BLOCK_N
    per_split = (n_blocks + num_splits - 1) // num_splits
    first = split * per_split
    last = fl.minimum(first + per_split, n_blocks)

    # Q: row GROUP * i + j is query position q0 + i of head kvh * group + j
    # (GROUP, the tile's, is a power of two at least the group's size).
    group = heads // kv_heads
    head0 = kvh * group
    q_ptr = Q + b * q_batch_stride
    q = fl.load(q_ptr, (SQ_BLOCK, GROUP, HEAD_DIM), (q0, head0, 0), (q_seq_stride, q_head_stride, 1),
                bounds=(seqlen_q, head0 + group, head_dim))
    q = q.reshape((ROWS, HEAD_DIM))
    q_pos = q0 + fl.arange(0, ROWS) // GROUP

    table = Table + b * table_stride
    strides = (page_stride, row_stride, head_stride)
    m = fl.full((ROWS,), float("-inf"))
    l = fl.zeros((ROWS,))
    acc = fl.zeros((ROWS, HEAD_DIM))
    for blk in fl.range(first, last):
        n0 = blk * BLOCK_N
        k = load_kv(K, table, kvh, b, b, n0, seqlen, 0, head_dim, page_size, num_pages, strides, Errors,
                    BLOCK_N, HEAD_DIM, PAGE_SIZE)
        v = load_kv(V, table, kvh, b, b, n0, seqlen, 0, head_dim, page_size, num_pages, strides, Errors,
                    BLOCK_N, HEAD_DIM, PAGE_SIZE)
        s = fl.dot(q, k, trans_b=True)
        s = score_mod(s, q_pos, n0 + fl.arange(0, BLOCK_N), seqlen, seqlen, seqlen_q, -1, -1, l, CAUSAL, False,
                      False)
        m, l, p, alpha = fl.online_softmax(s, m, l, scale)
        acc = fl.dot(p.to(q.dtype), v, acc * alpha[:, None])

    # out = acc / l, lse = m + log(l); a row that saw no key gives 0 and -inf.
    empty = l == 0.0
    out = acc * fl.where(empty, 0.0, 1.0 / l)[:, None]
    lse = fl.where(empty, float("-inf"), m + fl.log(l))
    out = out.reshape((SQ_BLOCK, GROUP, HEAD_DIM))
    lse = lse.reshape((SQ_BLOCK, GROUP))
    lse_offset = b * heads * seqlen_q
    if num_splits == 1:
        fl.store(Out + b * q_batch_stride, out, (q0, head0, 0), (q_seq_stride, q_head_stride, 1),
                 bounds=(seqlen_q, head0 + group, head_dim))
        fl.store(Lse + lse_offset, lse, (q0, head0), (1, seqlen_q), bounds=(seqlen_q, head0 + group))
    else:
        # Partials: (splits, batch, seqlen_q, heads, HEAD_DIM) and (splits, batch, heads, seqlen_q).
        part = split * batch + b
        fl.store(OutPart + part * seqlen_q * heads * HEAD_DIM, out, (q0, head0, 0),
                 (heads * HEAD_DIM, HEAD_DIM, 1), bounds=(seqlen_q, head0 + group, head_dim))
        fl.store(LsePart + part * heads * seqlen_q, lse, (q0, head0), (1, seqlen_q),
                 bounds=(seqlen_q, head0 + group))


def hand_packed_launch(p, kv_heads, group):
    """The grid and constexprs of this kernel for fakv.interface.plan's `p`
    (planned for kernels/decode.py)."""
    batch_mb, heads, splits = p["decode_grid"]
    m_blocks = p["m_blocks"]
    batch = batch_mb // m_blocks
    c = {k: p["decode"][k] for k in ("HEAD_DIM", "BLOCK_N", "SQ_BLOCK", "PAGE_SIZE", "CAUSAL")}
    c["GROUP"] = 1 << (group - 1).bit_length()
    return (p["num_splits"], kv_heads * m_blocks, batch), c
