"""The new keys and values of a call, appended to the KV cache in place, and
rotary embeddings (RoPE), in fakv: flash_attn_with_kvcache runs this before
decode.py when it is given `k`/`v` or `rotary_cos`/`rotary_sin`.

One program per (token t, query head h, sequence b). Key/value row t of kv
head h (h < kv_heads) goes to the cache at position Seqlens[b] + t, through
the block table or into cache row b (or BatchIdx[b]); its first rotary_dim
channels rotated at that position. Query row t of head h is rotated, at
position Seqlens[b] + t when Q_ROWS (causal or local calls) else at
Seqlens[b], into QOut, which decode.py reads instead of q. Rotation is in
f32, rounded once; interleaved (GPT-J) pairs channels (2k, 2k + 1), else
(GPT-NeoX) (k, k + rotary_dim / 2). Rows that would land past the cache's
capacity, or through a block-table entry outside it, are not written and
are reported; so is a query position past the rows of Cos / Sin.
"""
import fakv
import fakv.language as fl
from fakv.runtime import ERROR_ROWS, error_code

# Codes a program reports bad data with (fl.report; fakv.runtime.ERROR_KINDS), plus the batch row.
SEQLENS_ERROR, BLOCK_TABLE_ERROR, BATCH_IDX_ERROR, APPEND_ERROR, LEFTPAD_ERROR, ROTARY_ERROR = map(error_code, range(1, 7))


@fakv.jit
def copy_row(Src, Dst, Cos, Sin, Errors, pos, head_dim, rotary_dim, cos_stride,
             HEAD_DIM: fl.constexpr, ROTARY: fl.constexpr, INTERLEAVED: fl.constexpr):
    """Dst[c] = Src[c] for c < head_dim, the first rotary_dim channels rotated
    by the angles of position `pos`: rotated_rows with one row (`pos` is a
    row of Cos and Sin: the callers' checks)."""
    x = rotated_rows(Src, 0, 1, head_dim, Cos, Sin, pos, 0, cos_stride, rotary_dim, pos + 1, Errors, 0, 1, HEAD_DIM,
                     ROTARY, INTERLEAVED)
    fl.store(Dst, x, (0, 0), (0, 1), bounds=(1, head_dim))


@fakv.jit
def rotated_rows(X, row_stride, rows, head_dim, Cos, Sin, pos, pos_step, cos_stride, rotary_dim, angle_rows,
                 Errors, code, ROWS: fl.constexpr, HEAD_DIM: fl.constexpr, ROTARY: fl.constexpr,
                 INTERLEAVED: fl.constexpr):
    """Rows [0, rows) of X (rows `row_stride`
    apart; rows past `rows` and channels past head_dim read as zero), the
    first rotary_dim channels of row i rotated by the angles of position
    pos + i * pos_step, in f32 rounded once (not rotated unless ROTARY; 2:
    rotary_dim is HEAD_DIM).
    Positions outside the angle_rows rows of Cos / Sin are reported (`code`)
    and read row 0. Interleaved partners are the other channel of a pair in
    the same registers (sums over the pair); NeoX partners come from loads
    at column offsets of +/- rotary_dim / 2. No mask is needed."""
    x = fl.load(X, (ROWS, HEAD_DIM), (0, 0), (row_stride, 1), bounds=(rows, head_dim))
    if not ROTARY:
        return x
    inside = (pos >= 0) & (pos + (fl.minimum(rows, ROWS) - 1) * pos_step < angle_rows)
    fl.report(Errors, not inside, fl.where(pos < 0, SEQLENS_ERROR + code % ERROR_ROWS, code))   # (< 0: a length)
    pos, pos_step = fl.where(inside, pos, 0), fl.where(inside, pos_step, 0)
    half = rotary_dim // 2
    cos, sin = Cos + pos.to(fl.int64) * cos_stride, Sin + pos.to(fl.int64) * cos_stride
    a, f32 = pos_step * cos_stride, fl.float32
    if INTERLEAVED:     # element (i, k, j) is channel 2k + j, angle k; its partner 2k + 1 - j, sign 2j - 1
        cs = fl.load(cos, (ROWS, HEAD_DIM // 2), (0, 0), (a, 1), bounds=(rows, half), other=1.0).to(f32)
        sn = fl.load(sin, (ROWS, HEAD_DIM // 2), (0, 0), (a, 1), bounds=(rows, half)).to(f32)
        x3, j = fl.reshape(x, (ROWS, HEAD_DIM // 2, 2)).to(f32), fl.arange(0, 2)[None, None, :]
        # (selects, not products with 0 or 1: an infinite channel must not make its partner NaN, nor may a pair
        # past rotary_dim, which passes through)
        even, odd = fl.sum(fl.where(j == 0, x3, 0.0), axis=2), fl.sum(fl.where(j == 1, x3, 0.0), axis=2)
        partner = fl.where(j == 0, odd[:, :, None], even[:, :, None])
        rotated = x3 * cs[:, :, None] + partner * sn[:, :, None] * (j * 2 - 1).to(f32)
        rotated = fl.where(fl.arange(0, HEAD_DIM // 2)[None, :, None] < half, rotated, x3)
        return fl.reshape(rotated, (ROWS, HEAD_DIM)).to(x.dtype)
    if ROTARY == 2:     # rotary_dim == HEAD_DIM: element (i, j, k) is channel j * half + k, angle k, its partner
        shape, bounds = (ROWS, 2, HEAD_DIM // 2), (rows, 2, half)     # (1 - j) * half + k, sign 2j - 1
        cs = fl.load(cos, shape, (0, 0, 0), (a, 0, 1), bounds=bounds).to(f32)
        sn = fl.load(sin, shape, (0, 0, 0), (a, 0, 1), bounds=bounds).to(f32)
        partner = fl.load(X + half, shape, (0, 0, 0), (row_stride, -half, 1), bounds=bounds).to(f32)
        rotated = fl.reshape(x, shape).to(f32) * cs + partner * sn * (fl.arange(0, 2) * 2 - 1).to(f32)[None, :, None]
        return fl.reshape(rotated, (ROWS, HEAD_DIM)).to(x.dtype)
    # GPT-NeoX: channel c < half pairs with c + half (sign -1), c in [half, rotary_dim) with c - half (angle
    # c - half). Loads at column offsets +/- half select each side (offsets outside the bounds read 0, or 1).
    shape, back = (ROWS, HEAD_DIM), (0, -half)
    cs = fl.load(cos, shape, (0, 0), (a, 1), bounds=(rows, half), other=1.0).to(f32) * \
        fl.load(cos, shape, back, (a, 1), bounds=(rows, half), other=1.0).to(f32)
    lo = fl.load(sin, shape, (0, 0), (a, 1), bounds=(rows, half)).to(f32) * \
        fl.load(X, shape, (0, half), (row_stride, 1), bounds=(rows, rotary_dim)).to(f32)
    hi = fl.load(sin, shape, back, (a, 1), bounds=(rows, half)).to(f32) * \
        fl.load(X, shape, back, (row_stride, 1), bounds=(rows, half)).to(f32)
    return (x.to(f32) * cs - lo + hi).to(x.dtype)


@fakv.jit
def new_rows(t, end, KNew, VNew, stride, head_dim, Cos, Sin, pos, cos_stride, rotary_dim, angle_rows, Errors, code,
             ROWS: fl.constexpr, HEAD_DIM: fl.constexpr, ROTARY: fl.constexpr, INTERLEAVED: fl.constexpr):
    """New keys and values t, t + 1, ... < end (t < end), ROWS rows (those
    past `end` zero), the keys rotated at positions pos + t + i, 16 rows at
    a time (registers; pieces wholly past `end` are not loaded)."""
    rows = end - t
    k = rotated_rows(KNew + t * stride, stride, rows, head_dim, Cos, Sin, pos + t, 1, cos_stride, rotary_dim,
                     angle_rows, Errors, code, 16, HEAD_DIM, ROTARY, INTERLEAVED)
    v = fl.load(VNew + t * stride, (ROWS, HEAD_DIM), (0, 0), (stride, 1), bounds=(rows, head_dim))
    if ROWS == 16:
        return k, v
    slot = fl.arange(0, ROWS // 16)[:, None, None]       # piece i of ROWS // 16 in a 3-D tile
    k = fl.where(slot == 0, fl.expand_dims(k, 0), fl.zeros((ROWS // 16, 16, HEAD_DIM), k.dtype))
    for i in fl.static_range(1, ROWS // 16):
        if i * 16 < rows:
            u = t + i * 16
            k = fl.where(slot == i, fl.expand_dims(rotated_rows(
                KNew + u * stride, stride, end - u, head_dim, Cos, Sin, pos + u, 1, cos_stride, rotary_dim, angle_rows,
                Errors, code, 16, HEAD_DIM, ROTARY, INTERLEAVED), 0), k)
    return fl.reshape(k, (ROWS, HEAD_DIM)), v


@fakv.jit
def append_rows(KNew, VNew, new_stride, K, V, table, BatchIdx, Cos, Sin, Errors, b, first, last, step, seqlen,
                page_stride, row_stride, num_pages, head_dim, rotary_dim, cos_stride,
                HEAD_DIM: fl.constexpr, PAGE_SIZE: fl.constexpr, BATCH_IDX: fl.constexpr, ROTARY: fl.constexpr,
                INTERLEAVED: fl.constexpr, ROWS_FIRST: fl.constexpr):
    """New rows t = first, first + step, ... < last of one kv head (KNew,
    VNew: row 0 of sequence b; K, V: the caches at that head) to the cache
    at position seqlen + t (the keys rotated there), through the block-table
    row `table` or into cache row b (BatchIdx[b]). Nothing is written when
    seqlen < 0 (a length already reported), nor through a block-table entry
    outside [0, num_pages) (reported). ROWS_FIRST: a row is loaded and
    rotated before its page is looked up (the loads in parallel: the append
    kernel, b8 s8192 +6.9 -> +5.5 %, H200); else after (decode appending:
    0.1-0.3 us faster so)."""
    for t in fl.range(first, fl.where(seqlen >= 0, last, first), step):
        pos = seqlen + t
        if ROWS_FIRST:
            k = rotated_rows(KNew + t * new_stride, 0, 1, head_dim, Cos, Sin, pos, 0, cos_stride, rotary_dim, pos + 1,
                             Errors, 0, 1, HEAD_DIM, ROTARY, INTERLEAVED)
            v = fl.load(VNew + t * new_stride, (1, HEAD_DIM), (0, 0), (0, 1), bounds=(1, head_dim))
        page, offset = b, pos
        if BATCH_IDX:
            page = BatchIdx[b]
        if PAGE_SIZE:
            page, offset = table[pos // PAGE_SIZE], pos % PAGE_SIZE
        inside = (page >= 0) & (page < num_pages)
        fl.report(Errors, not inside, (BLOCK_TABLE_ERROR if PAGE_SIZE else BATCH_IDX_ERROR) + b)
        if inside:
            row = page.to(fl.int64) * page_stride + offset.to(fl.int64) * row_stride
            if ROWS_FIRST:
                fl.store(K + row, k, (0, 0), (0, 1), bounds=(1, head_dim))
                fl.store(V + row, v, (0, 0), (0, 1), bounds=(1, head_dim))
            else:
                copy_row(KNew + t * new_stride, K + row, Cos, Sin, Errors, pos, head_dim, rotary_dim, cos_stride,
                         HEAD_DIM, ROTARY, INTERLEAVED)
                copy_row(VNew + t * new_stride, V + row, Cos, Sin, Errors, pos, head_dim, rotary_dim, cos_stride,
                         HEAD_DIM, False, INTERLEAVED)


@fakv.jit
def append(Q, KNew, VNew, K, V, QOut, Table, Seqlens, BatchIdx, Cos, Sin, Errors,
           q_batch_stride, q_seq_stride, q_head_stride, qo_batch_stride, qo_seq_stride, qo_head_stride,
           new_batch_stride, new_seq_stride, new_head_stride,
           page_stride, row_stride, head_stride, table_stride, cos_stride,
           seqlen_q, seqlen_new, kv_heads, head_dim, rotary_dim, page_size, num_pages, capacity, rotary_rows,
           HEAD_DIM: fl.constexpr, PAGE_SIZE: fl.constexpr, BATCH_IDX: fl.constexpr, APPEND: fl.constexpr,
           ROTARY: fl.constexpr, INTERLEAVED: fl.constexpr, Q_ROWS: fl.constexpr):
    t, h, b = fl.program_id(0), fl.program_id(1), fl.program_id(2)
    seqlen = Seqlens[b]
    if ROTARY:
        if t < seqlen_q:
            pos = seqlen
            if Q_ROWS:
                pos = seqlen + t
            inside = (pos >= 0) & (pos < rotary_rows)        # a row of Cos / Sin: else reported, row 0 read
            fl.report(Errors, not inside, fl.where(pos < 0, SEQLENS_ERROR, ROTARY_ERROR) + b)
            copy_row(Q + b.to(fl.int64) * q_batch_stride + t * q_seq_stride + h * q_head_stride,
                     QOut + b.to(fl.int64) * qo_batch_stride + t * qo_seq_stride + h * qo_head_stride,
                     Cos, Sin, Errors, fl.where(inside, pos, 0), head_dim, rotary_dim, cos_stride, HEAD_DIM, ROTARY,
                     INTERLEAVED)
    if APPEND:
        if h < kv_heads:
            fits = (seqlen >= 0) & (seqlen <= capacity - seqlen_new)      # (seqlen + seqlen_new may wrap)
            fl.report(Errors, not fits, fl.where(seqlen < 0, SEQLENS_ERROR, APPEND_ERROR) + b)
            new = b.to(fl.int64) * new_batch_stride + h * new_head_stride
            append_rows(KNew + new, VNew + new, new_seq_stride, K + h.to(fl.int64) * head_stride,
                        V + h.to(fl.int64) * head_stride, Table + b.to(fl.int64) * table_stride, BatchIdx, Cos,
                        Sin, Errors, b, t, fl.minimum(t + 1, seqlen_new), 1, fl.where(fits, seqlen, -1),
                        page_stride, row_stride, num_pages, head_dim, rotary_dim, cos_stride, HEAD_DIM, PAGE_SIZE,
                        BATCH_IDX, ROTARY, INTERLEAVED, True)
