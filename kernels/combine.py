"""Merge the split-KV partials of decode.py by their LSEs, in fakv.

One program per (block of HEAD_BLOCK heads, query position, sequence): it
loads every split's partial output and LSE for its rows and weights split s
by exp(lse_s - lse) (fl.lse_combine); splits past num_splits read as LSE
-inf and weigh nothing.
"""
import fakv
import fakv.language as fl


@fakv.jit
def split_partials(OutPart, LsePart, b, qi, h0, num_splits, batch, seqlen_q, heads, head_dim,
                   HEAD_DIM: fl.constexpr, HEAD_BLOCK: fl.constexpr, MAX_SPLITS: fl.constexpr):
    """(out, lse) of heads [h0, h0 + HEAD_BLOCK) at query qi of sequence b: decode.py's partials merged. They are
    (splits, batch, seqlen_q, heads, HEAD_DIM) f32 and (splits, batch, heads, seqlen_q); channels past head_dim are
    not read."""
    row = b * seqlen_q + qi
    parts = fl.load(OutPart + row * heads * HEAD_DIM, (MAX_SPLITS, HEAD_BLOCK, HEAD_DIM), (0, h0, 0),
                    (batch * seqlen_q * heads * HEAD_DIM, HEAD_DIM, 1), bounds=(num_splits, heads, head_dim))
    lses = fl.load(LsePart + b * heads * seqlen_q + qi, (MAX_SPLITS, HEAD_BLOCK), (0, h0),
                   (batch * heads * seqlen_q, seqlen_q), bounds=(num_splits, heads), other=float("-inf"))
    return fl.lse_combine(parts, lses)


@fakv.jit
def store_rows(Out, Lse, out, lse, b, qi, h0, out_batch_stride, out_seq_stride, out_head_stride, seqlen_q, heads,
               head_dim):
    """out and lse of heads [h0, h0 + HEAD_BLOCK) (no key in any split: +inf, as FlashAttention 2)."""
    fl.store(Out + b.to(fl.int64) * out_batch_stride + qi * out_seq_stride, out, (h0, 0), (out_head_stride, 1),
             bounds=(heads, head_dim))
    fl.store(Lse + b * heads * seqlen_q + qi, fl.where(lse == float("-inf"), float("inf"), lse), (h0,), (seqlen_q,),
             bounds=(heads,))


@fakv.jit
def combine(OutPart, LsePart, Out, Lse, out_batch_stride, out_seq_stride, out_head_stride,
            num_splits, batch, seqlen_q, heads, head_dim,
            HEAD_DIM: fl.constexpr, HEAD_BLOCK: fl.constexpr, MAX_SPLITS: fl.constexpr):
    hb, qi, b = fl.program_id(0), fl.program_id(1), fl.program_id(2)
    out, lse = split_partials(OutPart, LsePart, b, qi, hb * HEAD_BLOCK, num_splits, batch, seqlen_q, heads, head_dim,
                              HEAD_DIM, HEAD_BLOCK, MAX_SPLITS)
    store_rows(Out, Lse, out, lse, b, qi, hb * HEAD_BLOCK, out_batch_stride, out_seq_stride, out_head_stride,
               seqlen_q, heads, head_dim)
