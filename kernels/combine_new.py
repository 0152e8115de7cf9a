"""The combine of a decode step that appends (one query row), in fakv: decode.py reads the cache's old keys in splits
(it neither reads nor writes the new rows), and meanwhile, before fl.dependency_wait, each program of this kernel
appends its kv head's new keys and values to the cache (rotated) and attends them with its query heads (q rotated);
then it merges decode's split partials and the new keys' as combine.py does. One program per (HEAD_BLOCK query heads
of one kv head, sequence); HEAD_BLOCK divides GROUP, the query heads per kv head."""
import fakv
import fakv.language as fl
from fakv.kernels.append import APPEND_ERROR, ROTARY_ERROR, SEQLENS_ERROR, append_rows, rotated_rows
from fakv.kernels.combine import split_partials, store_rows


@fakv.jit
def attend_new(Q, KNew, VNew, Cos, Sin, Errors, b, pos, new_keys, q_head_stride, new_stride, head_dim, cos_stride,
               rotary_dim, rotary_rows, scale, HEAD_BLOCK: fl.constexpr, NEW_N: fl.constexpr, HEAD_DIM: fl.constexpr,
               ROTARY: fl.constexpr, INTERLEAVED: fl.constexpr):
    """(out, lse) of HEAD_BLOCK query rows (q rotated at `pos`) over the new keys [0, new_keys) (key t rotated at
    pos + t), NEW_N at a time: the partial result of one more split."""
    q = rotated_rows(Q, q_head_stride, HEAD_BLOCK, head_dim, Cos, Sin, pos, 0, cos_stride, rotary_dim, rotary_rows,
                     Errors, ROTARY_ERROR + b, HEAD_BLOCK, HEAD_DIM, ROTARY, INTERLEAVED).to(fl.float32)
    m, l, acc = fl.full((HEAD_BLOCK,), float("-inf")), fl.zeros((HEAD_BLOCK,)), fl.zeros((HEAD_BLOCK, HEAD_DIM))
    for t in fl.range(0, new_keys, NEW_N):
        k = rotated_rows(KNew + t * new_stride, new_stride, new_keys - t, head_dim, Cos, Sin, pos + t, 1, cos_stride,
                         rotary_dim, rotary_rows, Errors, ROTARY_ERROR + b, NEW_N, HEAD_DIM, ROTARY, INTERLEAVED)
        v = fl.load(VNew + t * new_stride, (NEW_N, HEAD_DIM), (0, 0), (new_stride, 1), bounds=(new_keys - t, head_dim))
        s = fl.sum(q[:, None, :] * k.to(fl.float32)[None, :, :], 2)
        s = fl.length_mask(s, t + fl.arange(0, NEW_N), new_keys)
        m, l, p, alpha = fl.online_softmax(s, m, l, scale)
        acc = acc * alpha[:, None] + fl.sum(p[:, :, None] * v.to(fl.float32)[None, :, :], 1)
    empty = l == 0.0
    return acc * fl.where(empty, 0.0, 1.0 / l)[:, None], fl.where(empty, float("-inf"), m + fl.log(l))


@fakv.jit
def combine_new(OutPart, LsePart, Out, Lse, Q, KNew, VNew, K, V, Table, Seqlens, BatchIdx, Cos, Sin, Errors,
                q_batch_stride, q_head_stride, new_batch_stride, new_seq_stride, new_head_stride, page_stride,
                row_stride, head_stride, table_stride, cos_stride, num_splits, batch, heads, head_dim, new_keys,
                capacity, num_pages, rotary_dim, rotary_rows, scale,
                HEAD_DIM: fl.constexpr, HEAD_BLOCK: fl.constexpr, MAX_SPLITS: fl.constexpr, GROUP: fl.constexpr,
                NEW_N: fl.constexpr, PAGE_SIZE: fl.constexpr, BATCH_IDX: fl.constexpr, ROTARY: fl.constexpr,
                INTERLEAVED: fl.constexpr):
    hb, b = fl.program_id(0), fl.program_id(2)
    h0 = hb * HEAD_BLOCK
    kvh = h0 // GROUP
    old = Seqlens[b]
    fits = (old >= 0) & (old <= capacity - new_keys)        # (not old + new_keys <= capacity: it may wrap)
    fl.report(Errors, not fits, fl.where(old < 0, SEQLENS_ERROR, APPEND_ERROR) + b)
    new = b.to(fl.int64) * new_batch_stride + kvh * new_head_stride     # this kv head's new rows in KNew, VNew
    if h0 % GROUP == 0:                      # the kv head's first program appends its rows
        append_rows(KNew + new, VNew + new, new_seq_stride, K + kvh.to(fl.int64) * head_stride,
                    V + kvh.to(fl.int64) * head_stride, Table + b.to(fl.int64) * table_stride, BatchIdx, Cos, Sin,
                    Errors, b, 0, new_keys, 1, fl.where(fits, old, -1), page_stride, row_stride, num_pages, head_dim,
                    rotary_dim, cos_stride, HEAD_DIM, PAGE_SIZE, BATCH_IDX, ROTARY, INTERLEAVED, True)
    out_new, lse_new = attend_new(Q + b.to(fl.int64) * q_batch_stride + h0 * q_head_stride, KNew + new, VNew + new,
                                  Cos, Sin, Errors, b, old, fl.where(fits, new_keys, 0), q_head_stride, new_seq_stride,
                                  head_dim, cos_stride, rotary_dim, rotary_rows, scale, HEAD_BLOCK, NEW_N, HEAD_DIM,
                                  ROTARY, INTERLEAVED)
    fl.dependency_wait()                     # decode's partials from here on
    fl.launch_dependents()                   # (the next call's decode not before: measured faster)
    out, lse = split_partials(OutPart, LsePart, b, 0, h0, num_splits, batch, 1, heads, head_dim, HEAD_DIM,
                              HEAD_BLOCK, MAX_SPLITS)
    two = fl.arange(0, 2)[:, None]           # the cache's splits merged, and the new keys: two partials
    out, lse = fl.lse_combine(fl.where(two[:, :, None] == 0, out[None, :, :], out_new[None, :, :]),
                              fl.where(two == 0, lse[None, :], lse_new[None, :]))
    store_rows(Out, Lse, out, lse, b, 0, h0, q_batch_stride, 0, q_head_stride, 1, heads, head_dim)
