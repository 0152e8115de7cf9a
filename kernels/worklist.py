"""A persistent decode from a work list (a prototype, not planned: docs/decisions.md, "Next: a persistent decode"; on
the H200 at best even with the planned call): program (h, p) of grid (heads, P) runs the key blocks
Work[p, 0 .. Count[p]) in turn, each entry a (sequence, block) pair (fakv.worklist builds the lists from the
lengths and checks them: the kernel reads no length), so that its K/V ring prefetches the next sequence's first
blocks while the one before it is finishing, and every program reads as many blocks. A part's first block resets the running max / sum, its last stores the
output and LSE; a sequence run in parts leaves each part's in OutPart / LsePart and the last to finish merges them.
One query row, no splits, no options; pack_gqa runs a kv head's GROUP heads in one program."""
import fakv
import fakv.language as fl
from fakv.kernels.decode import attend, load_kv
from fakv.kernels.splits import store_partial


@fakv.jit
def merge_parts(OutPart, LsePart, Out, Lse, parts, b, h, batch, heads, head_dim, q_batch_stride, q_head_stride,
                HEAD_DIM: fl.constexpr, MAX_PARTS: fl.constexpr):
    """Sequence b's `parts` partial outputs of head h, weighted by their LSEs, into Out and Lse (one part at a
    time: few registers)."""
    m, l, acc = fl.full((1,), float("-inf")), fl.zeros((1,)), fl.zeros((1, HEAD_DIM))
    for k in fl.static_range(MAX_PARTS):
        part = k * batch + b
        lse = fl.load(LsePart + part * heads + h, (1, 1), (0, 0), (0, 0), bounds=(1, parts - k), other=float("-inf"))
        o = fl.load(OutPart + (part * heads + h) * HEAD_DIM, (1, 1, HEAD_DIM), (0, 0, 0), (0, 0, 1),
                    bounds=(1, parts - k, head_dim))
        m, l, w, alpha = fl.online_softmax(lse, m, l)
        acc = acc * alpha[:, None] + fl.sum(o * w[:, :, None], 1)
    fl.store(Out + b.to(fl.int64) * q_batch_stride + h * q_head_stride, acc * fl.where(l == 0.0, 0.0, 1.0 / l)[:, None],
             (0, 0), (0, 1), bounds=(1, head_dim))
    fl.store(Lse + b * heads + h, fl.where(l == 0.0, float("inf"), m + fl.log(l)), (0,), (1,))


@fakv.jit(pack_gqa=0, stages=2, registers=(24, 232), row_boxes=True)
def decode_worklist(Q, K, V, Table, Out, Lse, OutPart, LsePart, Counters, Work, Flags, Count, work_stride,
                    batch, q_batch_stride, q_head_stride, page_stride, row_stride, head_stride, table_stride, heads,
                    head_dim, page_size, num_pages, scale, Errors, HEAD_DIM: fl.constexpr,
                    BLOCK_N: fl.constexpr, GROUP: fl.constexpr, PAGE_SIZE: fl.constexpr, MAX_PARTS: fl.constexpr):
    h, p = fl.program_id(0), fl.program_id(1)
    kvh, strides = h // GROUP, (page_stride, row_stride, head_stride)
    m, l, acc = fl.full((1,), float("-inf")), fl.zeros((1,)), fl.zeros((1, HEAD_DIM))
    q = fl.load(Q + (Work[p * work_stride] >> 16).to(fl.int64) * q_batch_stride + h * q_head_stride, (1, HEAD_DIM),
                (0, 0), (0, 1), bounds=(1, head_dim))           # (the first entry's; an empty list has one of zeros)
    for f in fl.range(0, Count[p]):
        w, g = Work[p * work_stride + f], Flags[p * work_stride + f]
        b, blk, fresh = w >> 16, w % 65536, g % 2 == 1
        n0 = blk * BLOCK_N
        seqlen = n0 + (g >> 9)                  # (the keys of this block the list counted: no length to read)
        if fresh:                               # a part's first block: its query; the running max / sum reset
            q = fl.load(Q + b.to(fl.int64) * q_batch_stride + h * q_head_stride, (1, HEAD_DIM), (0, 0), (0, 1),
                        bounds=(1, head_dim))
        table = Table + b.to(fl.int64) * table_stride
        k = load_kv(K, table, kvh, b, b, n0, seqlen, 0, head_dim, page_size, num_pages, strides, Errors, BLOCK_N,
                    HEAD_DIM, PAGE_SIZE)
        v = load_kv(V, table, kvh, b, b, n0, seqlen, 0, head_dim, page_size, num_pages, strides, Errors, BLOCK_N,
                    HEAD_DIM, PAGE_SIZE)
        m, l, acc = fl.where(fresh, float("-inf"), m), fl.where(fresh, 0.0, l), fl.where(fresh, 0.0, acc)
        m, l, acc = attend(q, k, v, m, l, acc, fl.arange(0, 1), n0 + fl.arange(0, BLOCK_N), seqlen, seqlen, 1, -1,
                           -1, fl.zeros((1,)), scale, scale, 0.0, False, False, False, False, False)
        parts = (g >> 5) % 16
        if (g // 2) % 2 == 1:                   # a part's last block: out = acc / l, lse = m + log(l)
            out, lse = acc * fl.where(l == 0.0, 0.0, 1.0 / l)[:, None], fl.where(l == 0.0, float("-inf"), m + fl.log(l))
            if parts == 1:
                fl.store(Out + b.to(fl.int64) * q_batch_stride + h * q_head_stride, out, (0, 0), (0, 1),
                         bounds=(1, head_dim))
                fl.store(Lse + b * heads + h, fl.where(l == 0.0, float("inf"), lse), (0,), (1,))
            else:                               # the last part to finish merges them all
                store_partial(OutPart, LsePart, out, lse, ((g >> 2) % 8) * batch + b, h, 0, 1, heads, head_dim,
                              HEAD_DIM)
                if fl.atomic_add(Counters, b * heads + h, 1) == parts - 1:
                    merge_parts(OutPart, LsePart, Out, Lse, parts, b, h, batch, heads, head_dim, q_batch_stride,
                                q_head_stride, HEAD_DIM, MAX_PARTS)
                    fl.atomic_add(Counters, b * heads + h, -parts)
