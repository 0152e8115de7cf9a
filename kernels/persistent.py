"""A persistent decode (prototype, not planned yet): program (h, p) of grid (heads, P) runs the sequences p, p + P,
p + 2P, ... (at most MAX_J) of query head h in turn, as one loop over their key blocks, so that the K/V ring
prefetches a sequence's first blocks while the one before it is finishing (docs/decisions.md, "Next: a persistent
decode"). One query row, no splits, no options; pack_gqa runs a kv head's GROUP heads in one program."""
import fakv
import fakv.language as fl
from fakv.kernels.decode import SEQLENS_ERROR, attend, load_kv


@fakv.jit
def item_of(Seqlens, f, p, P, batch, capacity, BLOCK_N: fl.constexpr, MAX_J: fl.constexpr):
    """Which of the program's sequences key block f (of them all, in turn) belongs to: (j, its first block's
    index f0, its blocks' end f1). Every length is read again: no value from before the loop reaches the copies."""
    j, f0, f1, end = 0, 0, 0, 0
    for i in fl.static_range(MAX_J):
        b = p + i * P
        n = Seqlens[fl.minimum(b, batch - 1)]
        n = fl.where((n < 0) | (n > capacity), 0, n)                  # a bad length: no key (reported)
        start, end = end, end + fl.where(b < batch, (n + BLOCK_N - 1) // BLOCK_N, 0)
        here = (f >= start) & (f < end)
        j, f0, f1 = fl.where(here, i, j), fl.where(here, start, f0), fl.where(here, end, f1)
    return j, f0, f1, end


@fakv.jit(pack_gqa=0, stages=3)
def decode_persistent(Q, K, V, Table, Seqlens, Out, Lse, q_batch_stride, q_head_stride, page_stride, row_stride,
                      head_stride, table_stride, batch, heads, head_dim, page_size, num_pages, scale, Errors, capacity,
                      HEAD_DIM: fl.constexpr, BLOCK_N: fl.constexpr, GROUP: fl.constexpr, PAGE_SIZE: fl.constexpr,
                      MAX_J: fl.constexpr):
    h, p, P = fl.program_id(0), fl.program_id(1), fl.num_programs(1)
    kvh, strides = h // GROUP, (page_stride, row_stride, head_stride)
    _, _, _, total = item_of(Seqlens, 0, p, P, batch, capacity, BLOCK_N, MAX_J)
    for i in fl.static_range(MAX_J):            # sequences without a key (or a bad length): 0 and +inf
        b = p + i * P
        n = Seqlens[fl.minimum(b, batch - 1)]
        fl.report(Errors, (b < batch) & ((n < 0) | (n > capacity)), SEQLENS_ERROR + b)
        if (b < batch) & ((n <= 0) | (n > capacity)):
            fl.store(Out + b * q_batch_stride + h * q_head_stride, fl.zeros((1, HEAD_DIM)), (0, 0), (0, 1),
                     bounds=(1, head_dim))
            fl.store(Lse + b * heads + h, fl.full((1,), float("inf")), (0,), (1,))
    m, l, acc = fl.full((1,), float("-inf")), fl.zeros((1,)), fl.zeros((1, HEAD_DIM))
    for f in fl.range(0, total):
        j, f0, f1, _ = item_of(Seqlens, f, p, P, batch, capacity, BLOCK_N, MAX_J)
        b = p + j * P
        seqlen = fl.minimum(fl.maximum(Seqlens[b], 0), capacity)
        n0 = (f - f0) * BLOCK_N
        table = Table + b * table_stride
        # The query, every block (from L2; loaded before the block's keys are waited for)
        q = fl.load(Q + b * q_batch_stride + h * q_head_stride, (1, HEAD_DIM), (0, 0), (0, 1), bounds=(1, head_dim))
        k = load_kv(K, table, kvh, b, b, n0, seqlen, 0, head_dim, page_size, num_pages, strides, Errors, BLOCK_N,
                    HEAD_DIM, PAGE_SIZE)
        v = load_kv(V, table, kvh, b, b, n0, seqlen, 0, head_dim, page_size, num_pages, strides, Errors, BLOCK_N,
                    HEAD_DIM, PAGE_SIZE)
        fresh = f == f0                         # a new sequence: the running max / sum reset
        m, l, acc = fl.where(fresh, float("-inf"), m), fl.where(fresh, 0.0, l), fl.where(fresh, 0.0, acc)
        m, l, acc = attend(q, k, v, m, l, acc, fl.arange(0, 1), n0 + fl.arange(0, BLOCK_N), seqlen, seqlen, 1, -1,
                           -1, fl.zeros((1,)), scale, scale, 0.0, False, False, False, False, False)
        if f == f1 - 1:                         # its last block: out = acc / l, lse = m + log(l)
            fl.store(Out + b * q_batch_stride + h * q_head_stride, acc * (1.0 / l)[:, None], (0, 0), (0, 1),
                     bounds=(1, head_dim))
            fl.store(Lse + b * heads + h, m + fl.log(l), (0,), (1,))
