"""How many of its splits a sequence of decode.py uses, in fakv: with BATCH
(the batch size, a constexpr) set, the splits follow the batch's lengths, so
that a ragged batch's longest sequences are not one program's work each."""
import fakv
import fakv.language as fl


@fakv.jit
def used_splits(Seqlens, length, num_splits, capacity, BATCH: fl.constexpr):
    """One split when no sequence is more than 1/8 longer than the mean (a
    batch of near-equal lengths runs as one program per sequence; those of
    the other splits read no key and leave an empty partial); else the
    longest uses all num_splits and each sequence as many shares of the
    longest's share as its `length` needs. (An unused program still costs
    ~5 us of an SM slot on the H200: docs/decisions.md.)"""
    longest, mean = 0, 0
    for i in fl.static_range(BATCH):       # (BATCH loads at once: no loop to wait on)
        n = fl.minimum(fl.maximum(Seqlens[i], 0), capacity)
        longest, mean = fl.maximum(longest, n), mean + n // BATCH     # (no sum to overflow int32)
    share = fl.maximum((longest + num_splits - 1) // num_splits, 1)
    mine = fl.minimum(fl.maximum((length + share - 1) // share, 1), num_splits)
    return fl.where(longest <= mean + mean // 8 + 1, 1, mine)


@fakv.jit
def store_partial(OutPart, LsePart, out, lse, part, h, q0, seqlen_q, heads, head_dim, HEAD_DIM: fl.constexpr):
    """Split `part` (split x batch + sequence) of head h's query block q0 into the partials decode.py leaves for
    combine.py: (splits x batch, seqlen_q, heads, HEAD_DIM) outputs and (splits x batch, heads, seqlen_q) LSEs."""
    fl.store(OutPart + (part * seqlen_q * heads + h) * HEAD_DIM, out, (q0, 0), (heads * HEAD_DIM, 1),
             bounds=(seqlen_q, head_dim))
    fl.store(LsePart + (part * heads + h) * seqlen_q, lse, (q0,), (1,), bounds=(seqlen_q,))
