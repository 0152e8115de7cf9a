#!/usr/bin/env python3
"""Expected outputs of the CPU execution tests (test/cpu/*.mlir), computed
independently with numpy in float64 from the same inputs.

    .venv/bin/python test/cpu/reference.py            # rewrites test/cpu/Inputs/*.expected
    .venv/bin/python test/cpu/reference.py --check    # names any that differ (CI's test)

Each test here mirrors one .mlir file: same shapes, same input seeds (the
hash in Inputs/harness.mlir), and the outputs in the order that file prints
them, each with the tolerance it is checked at.
"""
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = {}

F32_ATOL = 1e-5


def test(fn):
    TESTS[fn.__name__] = fn
    return fn


def hashed(n, seed):
    """Inputs/harness.mlir's fill_*: k/256, k in [-128, 128)."""
    i = np.arange(n, dtype=np.uint64)
    h = (i * np.uint64(2654435761) + np.uint64(seed * 40503 + 12345)) & np.uint64(0xFFFFFFFF)
    k = ((h >> np.uint64(16)) & np.uint64(255)).astype(np.int64) - 128
    return k.astype(np.float64) / 256.0


def round_bf16(x):
    """Round float32 values to bfloat16 (nearest even), returned as float64."""
    b = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    b = (b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    return b.astype(np.uint32).view(np.float32).astype(np.float64)


def round_to(x, dtype):
    if dtype == "bf16":
        return round_bf16(x)
    if dtype == "f16":
        return np.asarray(x, dtype=np.float32).astype(np.float16).astype(np.float64)
    return np.asarray(x, dtype=np.float32).astype(np.float64)


@test
def construction():
    x = hashed(4, 1)
    t3 = hashed(24, 2).reshape(2, 3, 4)
    b = hashed(8, 3)
    x3 = (x.astype(np.float32) / np.float32(3)).astype(np.float32)
    return [
        ("arange", np.arange(3, 11), 0),
        ("splat", np.full(6, 1.5), 0),
        ("broadcast_col", np.repeat(x[:, None], 3, axis=1), 0),
        ("broadcast_row", np.repeat(x[None, :], 2, axis=0), 0),
        ("reshape_colmajor", t3.reshape(6, 4).T, 0),
        ("cast_bf16_f32", b, 0),
        ("cast_f32_bf16", round_bf16(x3), 0),
        ("cast_f32_f16_bf16", round_bf16(round_to(x3, "f16")), 0),
    ]


@test
def memory():
    mat = hashed(30, 4).reshape(5, 6)
    ints = np.array([3, 0, 4, -1, 10, 20, 30, 40])
    cache = hashed(320, 5)
    # load 4x8 at (1, 2) with bounds (5, 6), other -7
    o0 = np.full((4, 8), -7.0)
    for i in range(4):
        for j in range(8):
            r, c = 1 + i, 2 + j
            if r < 5 and c < 6:
                o0[i, j] = mat[r, c]
    o1 = np.zeros((3, 4))
    o1[1:, :] = mat[0:2, 0:4]
    row2 = mat.reshape(-1)[2:8]
    o2 = np.where(np.arange(6) % 2 == 0, row2, 0.0)
    o3 = np.full((3, 4), -1.0)
    o3[1:3, 1:3] = mat[0:2, 0:2]
    o4 = np.where(np.arange(6) % 2 == 0, mat.reshape(-1)[0:6], -1.0)
    o5 = [ints[4 + 3]]
    paged = cache.reshape(5, 4, 2, 8)
    o6 = np.zeros((8, 8))
    for i in range(8):
        r = 4 + i
        if r < 9:
            pos = r + 2
            o6[i] = paged[ints[pos // 4], pos % 4, 1]
    contiguous = cache[:256].reshape(2, 8, 2, 8)
    o7 = np.zeros((8, 8))
    for i in range(6):
        o7[i] = contiguous[1, i + 1, 0]
    o8 = np.zeros((8, 8))
    for i in range(7):                          # (row 7 + leftpad 1 is past the sequence's 8 rows)
        o8[i] = contiguous[0, i + 1, 0]
    return [("load_bounds_other", o0, 0), ("load_negative_offset", o1, 0),
            ("load_mask", o2, 0), ("store_bounds", o3, 0), ("store_mask", o4, 0),
            ("addptr_load_scalar", o5, 0), ("paged_load_table", o6, 0),
            ("paged_load_contiguous", o7, 0), ("paged_load_contiguous_past_the_end", o8, 0)]


@test
def dot():
    A = hashed(32, 6).reshape(4, 8)
    B = hashed(40, 7).reshape(8, 5)
    C = hashed(20, 8).reshape(4, 5)
    r = C + A @ B
    # r1 reads B transposed from B's own buffer: B^T (5x8) with strides (1, 5)
    bt = hashed(40, 7).reshape(8, 5).T          # element (n, k) = buffer[k*5 + n]
    r1 = C + A @ bt.T
    at = hashed(32, 6).reshape(4, 8).T          # A^T read with strides (1, 8)
    r2 = C + at.T @ B
    r3 = C + at.T @ bt.T
    out = np.concatenate([r, r1, r2, r3, r]).reshape(-1)
    return [("dot_all", out, F32_ATOL)]


@test
def reduce():
    x = np.full((4, 6), -np.inf)
    x[:3] = hashed(18, 20).reshape(3, 6)
    out = np.concatenate([x.sum(1), x.sum(0), x.max(1), x.min(0)])
    return [("reduce_all", out, F32_ATOL)]


def online_softmax_ref(scores, m0, l0, scale):
    """The fakv.online_softmax contract (dialect/FakvOps.td) in float64."""
    t = scale * scores
    m1 = np.maximum(m0, t.max(1))
    with np.errstate(invalid="ignore"):
        p = np.where(np.isneginf(m1)[:, None], 0.0, np.exp(t - m1[:, None]))
        alpha = np.where(np.isneginf(m1), 1.0, np.exp(m0 - m1))
    l1 = alpha * l0 + p.sum(1)
    return m1, l1, p, alpha


@test
def online_softmax():
    s = hashed(24, 21).reshape(4, 6)
    s[2] = -np.inf
    m0 = hashed(4, 22)
    m0[[0, 2]] = -np.inf
    l0 = hashed(4, 23)
    m1, l1, p, alpha = online_softmax_ref(s, m0, l0, 1.75)
    return [("online_softmax", np.concatenate([m1, l1, p.reshape(-1), alpha]), F32_ATOL)]


def lse_combine_ref(parts, lses):
    """fakv.lse_combine: parts (S, R, D), lses (S, R) -> out (R, D), lse (R)."""
    S, R, D = parts.shape
    out, lse = np.zeros((R, D)), np.full(R, -np.inf)
    for r in range(R):
        m = lses[:, r].max()
        if m == -np.inf:
            continue
        w = np.exp(lses[:, r] - m)
        lse[r] = m + np.log(w.sum())
        for s in range(S):
            if w[s] > 0:
                out[r] += (w[s] / w.sum()) * parts[s, r]
    return out, lse


@test
def lse_combine():
    parts = hashed(36, 24).reshape(3, 3, 4)
    parts[1, 0, :] = np.nan
    ninf = -np.inf
    lses = np.array([[0.5, -3.0, ninf], [ninf, 2.0, ninf], [1.25, 0.0, ninf]])
    out, lse = lse_combine_ref(parts, lses)
    return [("lse_combine", np.concatenate([out.reshape(-1), lse]), F32_ATOL)]


@test
def score_modifiers():
    s = hashed(24, 25).reshape(4, 6)
    slopes = hashed(4, 26)
    rows, cols, off = np.arange(2, 6)[:, None], np.arange(6)[None, :], 1
    q = rows + off
    ninf = -np.inf
    length = np.where(cols < 5, s, ninf)
    causal = np.where(cols <= q, s, ninf)
    window = np.where((cols >= q - 2) & (cols <= q + 1), s, ninf)
    with np.errstate(invalid="ignore"):
        softcap = np.where(np.isneginf(length), ninf, 0.3 * np.tanh(length / 0.3))
    alibi = s - slopes[:, None] * np.abs(q - cols)
    own = np.where((cols >= q) & (cols <= q + 1), s, ninf)
    out = np.concatenate([t.reshape(-1) for t in (length, causal, window, causal, softcap, alibi, own)])
    return [("score_modifiers", out, F32_ATOL)]


def rotary_ref(x, cos, sin, interleaved):
    """fakv.rotary in float32 arithmetic, as the op computes it."""
    x = x.astype(np.float32)
    cos, sin = cos.astype(np.float32), sin.astype(np.float32)
    out = x.copy()
    half = cos.shape[1]
    for k in range(half):
        a, b = (2 * k, 2 * k + 1) if interleaved else (k, k + half)
        out[:, a] = x[:, a] * cos[:, k] - x[:, b] * sin[:, k]
        out[:, b] = x[:, a] * sin[:, k] + x[:, b] * cos[:, k]
    return out.astype(np.float64)


@test
def rotary():
    x = hashed(24, 27).reshape(3, 8)
    cos = hashed(6, 28).reshape(3, 2)
    sin = hashed(6, 29).reshape(3, 2)
    inter, half = rotary_ref(x, cos, sin, True), rotary_ref(x, cos, sin, False)
    return [("rotary_bf16", round_bf16(np.concatenate([inter, half])), 0),
            ("rotary_f32", np.concatenate([inter, half]), F32_ATOL)]


@test
def grid():
    out = np.zeros(12)
    for z in range(2):
        for y in range(2):
            for x in range(3):
                out[(z * 2 + y) * 3 + x] = x + 10 * y + 100 * z + 1000 * (3 + 20 + 200) + 0.5
    return [("grid", out, 0)]


def attention_ref(q, k_cache, v_cache, table, seqlens, causal, scale):
    """FlashAttention's flash_attn_with_kvcache in float64, paged cache.

    q (b, sq, h, d); caches (pages, page_size, hk, d); table (b, max_pages).
    Returns out (b, sq, h, d) and lse (b, h, sq); rows with no visible key
    give 0 and -inf."""
    b, sq, h, d = q.shape
    page_size, hk = k_cache.shape[1], k_cache.shape[2]
    group = h // hk
    out, lse = np.zeros_like(q), np.full((b, h, sq), -np.inf)
    for i in range(b):
        n = seqlens[i]
        pos = np.arange(n)
        pages = table[i][pos // page_size]
        K, V = k_cache[pages, pos % page_size], v_cache[pages, pos % page_size]
        for head in range(h):
            kvh = head // group
            for t in range(sq):
                visible = pos <= t + n - sq if causal else np.ones(n, bool)
                if not visible.any():
                    continue
                s = scale * K[visible, kvh] @ q[i, t, head]
                m = s.max()
                w = np.exp(s - m)
                lse[i, head, t] = m + np.log(w.sum())
                out[i, t, head] = (w / w.sum()) @ V[visible, kvh]
    return out, lse


# Output tolerance per element type: about one unit roundoff of the type
# (outputs are below 0.5 in magnitude; P is rounded to the type before P.V and
# the output once more). The LSE is computed in f32 from f32 probabilities.
OUT_ATOL = {"f32": F32_ATOL, "f16": 5e-4, "bf16": 4e-3}


def decode_case(batch, sq, heads, kv_heads, page_size, num_pages, table, seqlens, causal):
    d = 64
    q = hashed(batch * sq * heads * d, 31).reshape(batch, sq, heads, d)
    k = hashed(num_pages * page_size * kv_heads * d, 32).reshape(num_pages, page_size, kv_heads, d)
    v = hashed(num_pages * page_size * kv_heads * d, 33).reshape(num_pages, page_size, kv_heads, d)
    out, lse = attention_ref(q, k, v, np.array(table), seqlens, causal, 1 / math.sqrt(d))
    cases = {}
    for dtype, atol in OUT_ATOL.items():
        arrays = []
        for how in ("1split", "3splits"):
            arrays += [(f"out_{how}", out, atol), (f"lse_{how}", lse, F32_ATOL)]
        cases[dtype] = arrays
    return cases


def decode_tests(name, **config):
    for dtype, arrays in decode_case(**config).items():
        TESTS[f"{name}_{dtype}"] = (lambda a=arrays: a)


decode_tests("decode_gqa_paged_causal", batch=2, sq=2, heads=8, kv_heads=2, page_size=16,
             num_pages=10, table=[[7, 2, 9, -1], [3, 8, 1, 5]], seqlens=[37, 50], causal=True)
decode_tests("decode_mqa_contiguous", batch=3, sq=1, heads=4, kv_heads=1, page_size=64,
             num_pages=3, table=[[0], [1], [2]], seqlens=[1, 64, 41], causal=False)


def render(name, arrays):
    """An .expected file's text: each output with its label, tolerance and size, eight values a line."""
    lines = [f"## generated by test/cpu/reference.py ({name}); do not edit\n"]
    for label, arr, atol in arrays:
        flat = np.asarray(arr, dtype=np.float64).reshape(-1)
        lines.append(f"# {label} atol={atol:g} n={flat.size}\n")
        vals = ["nan" if math.isnan(v) else ("inf" if v == math.inf else ("-inf" if v == -math.inf else repr(float(v)))) for v in flat]
        for i in range(0, len(vals), 8):
            lines.append(" ".join(vals[i:i + 8]) + "\n")
    return "".join(lines)


def main(argv):
    """Rewrites Inputs/*.expected; with --check, writes nothing and names those that differ from what this
    file computes (exit 1)."""
    stale = []
    for name, fn in TESTS.items():
        path = os.path.join(HERE, "Inputs", name + ".expected")
        text = render(name, fn())
        if "--check" in argv:
            with open(path) as f:
                if f.read() != text:
                    stale.append(path)
        else:
            with open(path, "w") as f:
                f.write(text)
            print("wrote", name)
    if stale:
        print("stale (run test/cpu/reference.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
