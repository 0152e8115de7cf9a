"""FlashAttention's tolerance rule on the CPU path, with numpy: the float64
reference, the same math in the input dtype (scores, probabilities and the
output rounded to it), and the check (semantics.md)."""
import math

import ml_dtypes
import numpy as np

NP_DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}


def gather(cache, table, seqlens, page_size):
    if table is None:
        return [cache[i, :n] for i, n in enumerate(seqlens)]
    out = []
    for i, n in enumerate(seqlens):
        pos = np.arange(n)
        out.append(cache[table[i][pos // page_size], pos % page_size])
    return out


def attention(q, keys, values, seqlens, causal, scale, dtype=None, softcap=0.0, fa_softcap=0.0,
              window=(-1, -1), alibi=None, capacity=1 << 30):
    """q (b, sq, h, d); keys/values: per sequence (n, hk, d). dtype=None:
    float64; else rounded to dtype where FlashAttention's reference is.
    softcap > 0: scores softcap * tanh(q.k / softcap), then scaled (the
    variant of kernels/README.md). FlashAttention's arguments:
    fa_softcap > 0: scores fa_softcap * tanh(scale * q.k / fa_softcap);
    window (left, right), negative: unbounded, causal making right 0;
    alibi (b, h) slopes: minus slope * |i + n - sq - j| (plus slope * (i + n
    - sq) when the call is causal, FlashAttention's bias there being slope *
    j). As FlashAttention: causal makes right 0, bounds >= capacity (the
    cache's rows) are unbounded, the call is causal iff the window is then
    (unbounded, 0), and a left-only window's right bound is the capacity."""
    left, right = (-1 if w < 0 or w >= capacity else w for w in window)
    if causal:
        right = 0
    fa_causal = left < 0 and right == 0
    if left >= 0 and right < 0:          # FlashAttention 2: a left-only window ends at the capacity
        right = capacity
    rnd = (lambda x: x.astype(np.float64)) if dtype is None else (
        lambda x: x.astype(np.float32).astype(dtype).astype(np.float64))
    b, sq, h, d = q.shape
    out, lse = np.zeros((b, sq, h, d)), np.full((b, h, sq), -np.inf)
    for i in range(b):
        n = int(seqlens[i])
        k, v = keys[i].astype(np.float64), values[i].astype(np.float64)
        group = h // k.shape[1]
        for head in range(h):
            if softcap:
                s = q[i, :, head].astype(np.float64) @ k[:, head // group].T
                s = rnd(softcap * np.tanh(s / softcap) * scale)
            elif fa_softcap:
                s = q[i, :, head].astype(np.float64) @ k[:, head // group].T
                s = rnd(fa_softcap * np.tanh(s * scale / fa_softcap))
            else:
                s = rnd((q[i, :, head].astype(np.float64) * scale) @ k[:, head // group].T)   # (sq, n)
            qpos = np.arange(sq)[:, None] + n - sq
            kpos = np.arange(n)[None, :]
            if alibi is not None:
                slope = float(alibi[i, head])
                s = s - slope * np.abs(qpos - kpos)
                if fa_causal:
                    s = s + slope * qpos
            visible = np.ones((sq, n), bool)
            if left >= 0:
                visible &= kpos >= qpos - left
            if right >= 0:
                visible &= kpos <= qpos + right
            s = np.where(visible, s, -np.inf)
            for t in range(sq):
                if n == 0 or not visible[t].any():
                    continue                   # no key: output 0, LSE -inf
                m = s[t][visible[t]].max()     # NaN when a score is (IEEE: inf - inf, NaN inputs)
                if m == -np.inf:
                    continue                   # every score -inf: no key either (FlashAttention's check)
                with np.errstate(invalid="ignore"):   # inf - inf: NaN, as IEEE (and the GPU) give
                    w = np.exp(s[t] - m)
                lse[i, head, t] = m + math.log(w.sum())
                out[i, t, head] = rnd(rnd(w / w.sum()) @ v[:, head // group])
    return out, lse


def check(out, ref, pt):
    err, base = np.abs(out.astype(np.float64) - ref), np.abs(pt - ref)
    ok = err.max() <= 2 * base.max() + 1e-5 and err.mean() <= 1.5 * base.mean() + 1e-7
    return ok, f"max {err.max():.3e} (limit {2 * base.max() + 1e-5:.3e}), mean {err.mean():.3e} " \
               f"(limit {1.5 * base.mean():.3e})"
