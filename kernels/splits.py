"""How decode.py's programs follow a ragged batch's lengths, in fakv (BATCH,
the batch size, a constexpr): how many of its splits a sequence uses, so
that the longest sequences of a batch of one wave are not one program's
work each; and, for a batch of several waves, which sequence a program
runs, so that the longest start first instead of in the last wave; and
how decode merges its own splits: in a cluster of them, or the last split
to finish (FAKV_MERGE_SPLITS)."""
import fakv
import fakv.language as fl


@fakv.jit
def near_equal(longest, mean):
    """A batch's lengths are near-equal when the longest is at most 1/8
    (and one) above the mean: used_splits and longest_first then keep one
    split a sequence and index order."""
    return longest <= mean + mean // 8 + 1


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
    mine = fl.minimum(fl.maximum((length - 1) // share + 1, 1), num_splits)   # (not length + share - 1: a wrap)
    return fl.where(near_equal(longest, mean), 1, mine)


@fakv.jit
def _hits(mask):
    """How many elements of a 1-D mask are set."""
    return fl.sum(fl.where(mask, 1, 0), axis=0)


@fakv.jit
def longest_first(Seqlens, slot, capacity, BATCH: fl.constexpr):
    """The sequence that program `slot` of a batch of several waves runs,
    and its length as Seqlens has it: the batch in 16 bands of lengths below
    the longest (1/16 of it wide), the longest band's sequences first,
    in index order within a band (programs start in slot order, so the
    longest no longer end the call); `slot` itself, without the search,
    when no sequence is more than 1/8 longer than the mean. The batch's
    lengths are one tile; counts
    are its reductions, the slot's sequence, the index-th of its band, is
    found by halving, and its length taken from the tile (no load after)."""
    tile = 1 << (BATCH - 1).bit_length()
    i = fl.arange(0, tile)
    valid = i < BATCH
    raw = fl.load(Seqlens, (tile,), (0,), (1,), bounds=(BATCH,), other=0)
    n = fl.minimum(fl.maximum(raw, 0), capacity)
    longest, mean = fl.max(n, axis=0), fl.sum(n // BATCH, axis=0)      # (no sum to overflow int32)
    seq = slot                             # near-equal lengths: index order, no search
    if not near_equal(longest, mean):
        width = longest // 16 + 1          # band k: lengths in (longest - (k + 1) width, longest - k width]
        band, start = 0, 0                 # the slot's band, the sequences in the bands before it
        for k in fl.static_range(1, 16):
            above = _hits(valid & (n > longest - k * width))   # sequences in bands 0 .. k - 1
            band, start = band + fl.where(slot >= above, 1, 0), fl.where(slot >= above, above, start)
        index = slot - start
        hit = valid & (n > longest - (band + 1) * width) & (n <= longest - band * width)
        lo, hi = 0, BATCH - 1              # the first sequence with index + 1 hits up to it
        for _ in fl.static_range(tile.bit_length() - 1):
            mid = (lo + hi) // 2
            enough = _hits(hit & (i <= mid)) >= index + 1
            lo, hi = fl.where(enough, lo, mid + 1), fl.where(enough, mid, hi)
        seq = lo
    return seq, fl.sum(fl.where(i == seq, raw, 0), axis=0)


@fakv.jit
def store_partial(OutPart, LsePart, out, lse, part, h, q0, seqlen_q, heads, head_dim, HEAD_DIM: fl.constexpr):
    """Split `part` (split x batch + sequence) of head h's query block q0 into the partials decode.py leaves for
    combine.py: (splits x batch, seqlen_q, heads, HEAD_DIM) outputs and (splits x batch, heads, seqlen_q) LSEs."""
    fl.store(OutPart + (part * seqlen_q * heads + h) * HEAD_DIM, out, (q0, 0), (heads * HEAD_DIM, 1),
             bounds=(seqlen_q, head_dim))
    fl.store(LsePart + (part * heads + h) * seqlen_q, lse, (q0,), (1,), bounds=(seqlen_q,))


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
        fl.store(Out + b.to(fl.int64) * out_batch_stride + h * out_head_stride,
                 acc * fl.where(empty, 0.0, 1.0 / l)[:, None], (q0, 0), (out_seq_stride, 1),
                 bounds=(seqlen_q, head_dim))
        fl.store(Lse + (b * heads + h) * seqlen_q, fl.where(empty, float("inf"), m + fl.log(l)), (q0,), (1,),
                 bounds=(seqlen_q,))
        fl.atomic_add(Counters, counter, -num_splits)


@fakv.jit
def cluster_merge(out, lse, SIZE: fl.constexpr):
    """decode.py's ending with MERGE = SIZE > 1 (one launch instead of decode
    + combine): the SIZE splits of a row run as one cluster; split s merges
    columns [s, s + 1) x HEAD_DIM / SIZE of every split's output, sent to it
    through shared memory, by their LSEs (every split's, sent to all), as
    combine does; a row no split saw gives 0 and -inf."""
    outs, lses = fl.cluster_gather((out, lse), SIZE, scatter=(True, False))     # [..., s]: split s's
    m = fl.max(lses, 1)
    w = fl.where(lses == float("-inf"), 0.0, fl.exp(lses - m[:, None]))       # (no NaN where m is -inf)
    l = fl.sum(w, 1)
    empty = l == 0.0
    return fl.sum(outs * w[:, None, :], 2) * fl.where(empty, 0.0, 1.0 / l)[:, None], \
        fl.where(empty, float("-inf"), m + fl.log(l))
