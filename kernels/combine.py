"""Merge the split-KV partials of decode.py by their LSEs, in fakv.

One program per (block of HEAD_BLOCK heads, query position, sequence): it
loads every split's partial output and LSE for its rows and weights split s
by exp(lse_s - lse) (fl.lse_combine); splits past num_splits read as LSE
-inf and weigh nothing.
"""
import fakv
import fakv.language as fl


@fakv.jit
def merge_splits(OutPart, LsePart, Out, Lse, Counters, b, h, q0, counter, num_splits, batch, seqlen_q, heads,
                 head_dim, out_batch_stride, out_seq_stride, out_head_stride,
                 HEAD_DIM: fl.constexpr, SQ_BLOCK: fl.constexpr, GROUP: fl.constexpr):
    """decode.py's ending with MERGE (one launch instead of decode + combine):
    the last split of (sequence b, head h, query block q0) to store its
    partial merges every split's, as combine does, and leaves its counter at
    0 for the next launch."""
    if fl.atomic_add(Counters, counter, 1) == num_splits - 1:
        m, l = fl.full((SQ_BLOCK,), float("-inf")), fl.zeros((SQ_BLOCK,))
        acc = fl.zeros((SQ_BLOCK, HEAD_DIM))
        ROUND = 8 if SQ_BLOCK * GROUP * HEAD_DIM <= 512 else 1     # splits loaded at once (registers)
        for s in fl.range(0, num_splits, ROUND):    # a round's LSEs are the scores of one softmax step
            part = s * batch + b
            lse = fl.load(LsePart + (part * heads + h) * seqlen_q, (SQ_BLOCK, ROUND), (q0, 0),
                          (1, batch * heads * seqlen_q), bounds=(seqlen_q, num_splits - s), other=float("-inf"))
            o = fl.load(OutPart + (part * seqlen_q * heads + h) * HEAD_DIM, (SQ_BLOCK, ROUND, HEAD_DIM), (q0, 0, 0),
                        (heads * HEAD_DIM, batch * seqlen_q * heads * HEAD_DIM, 1),
                        bounds=(seqlen_q, num_splits - s, head_dim))
            m, l, w, alpha = fl.online_softmax(lse, m, l)
            acc = acc * alpha[:, None] + fl.sum(o * w[:, :, None], 1)
        empty = l == 0.0        # no key in any split: 0 and +inf, as FlashAttention 2
        fl.store(Out + b * out_batch_stride + h * out_head_stride, acc * fl.where(empty, 0.0, 1.0 / l)[:, None],
                 (q0, 0), (out_seq_stride, 1), bounds=(seqlen_q, head_dim))
        fl.store(Lse + (b * heads + h) * seqlen_q, fl.where(empty, float("inf"), m + fl.log(l)), (q0,), (1,),
                 bounds=(seqlen_q,))
        fl.atomic_add(Counters, counter, -num_splits)


@fakv.jit
def combine(OutPart, LsePart, Out, Lse, out_batch_stride, out_seq_stride, out_head_stride,
            num_splits, batch, seqlen_q, heads, head_dim,
            HEAD_DIM: fl.constexpr, HEAD_BLOCK: fl.constexpr, MAX_SPLITS: fl.constexpr):
    hb, qi, b = fl.program_id(0), fl.program_id(1), fl.program_id(2)
    h0 = hb * HEAD_BLOCK
    # Partials: (splits, batch, seqlen_q, heads, HEAD_DIM) f32 and (splits, batch, heads, seqlen_q);
    # channels past head_dim are not read, nor written.
    row = b * seqlen_q + qi
    parts = fl.load(OutPart + row * heads * HEAD_DIM, (MAX_SPLITS, HEAD_BLOCK, HEAD_DIM), (0, h0, 0),
                    (batch * seqlen_q * heads * HEAD_DIM, HEAD_DIM, 1),
                    bounds=(num_splits, heads, head_dim))
    lses = fl.load(LsePart + b * heads * seqlen_q + qi, (MAX_SPLITS, HEAD_BLOCK), (0, h0),
                   (batch * heads * seqlen_q, seqlen_q), bounds=(num_splits, heads), other=float("-inf"))
    out, lse = fl.lse_combine(parts, lses)
    lse = fl.where(lse == float("-inf"), float("inf"), lse)   # no key in any split: +inf, as FlashAttention 2
    fl.store(Out + b * out_batch_stride + qi * out_seq_stride, out, (h0, 0), (out_head_stride, 1),
             bounds=(heads, head_dim))
    fl.store(Lse + b * heads * seqlen_q + qi, lse, (h0,), (seqlen_q,), bounds=(heads,))
