"""A seeded fuzzer of flash_attn_with_kvcache on the CPU path (issue 10):
random shapes, dtypes, options, memory layouts (views with strided and
reversed dimensions), NaN/inf and values near fp16's range, against the
float64 reference (kvcache_ref.py); and random single mistakes in a valid
call, each of which must raise an error naming the argument. Every input
gives the right answer or such an error: no crash, no silent garbage.
Deterministic (seeded); FUZZ_CASES=N runs more."""
import os

import numpy as np
import pytest

import fakv
from attention_ref import NP_DTYPES
from kvcache_ref import check, dense, kvcache_reference

N_VALID = int(os.environ.get("FUZZ_CASES", 48))
N_MISTAKES = int(os.environ.get("FUZZ_CASES", 48))


def view(rng, a, reverse_ok=True):
    """`a`'s values in a random memory layout: as is, inside a larger array
    (strided), or with its first dimension reversed."""
    kind = rng.integers(0, 3 if reverse_ok else 2)
    if kind == 1:                                   # every dim padded: strided in all but the last
        big = np.zeros(tuple(n + int(rng.integers(0, 3)) for n in a.shape[:-1]) + a.shape[-1:], a.dtype)
        big[tuple(slice(0, n) for n in a.shape)] = a
        return big[tuple(slice(0, n) for n in a.shape)]
    if kind == 2:
        return np.ascontiguousarray(a[::-1])[::-1]
    return a


def random_call(rng):
    """A valid call's arguments (numpy, various layouts)."""
    dtype = NP_DTYPES[str(rng.choice(["f16", "bf16"]))]
    b, sq = int(rng.integers(1, 4)), int(rng.integers(1, 5))
    hk = int(rng.choice([1, 2]))
    h = hk * int(rng.choice([1, 2, 4]))
    d = int(rng.choice([16, 40, 64, 72, 128]))
    paged = bool(rng.integers(0, 2))
    new = int(rng.choice([0, 0, 1, 2]))
    mag = float(rng.choice([1.0, 1.0, 8.0]))           # 8: scores in the thousands
    vmag = float(rng.choice([1.0, 1.0, 5000.0]))       # 5000: outputs near fp16's range
    rnd = lambda *s, m=1.0: (rng.standard_normal(s) * m).astype(dtype)  # noqa: E731
    if paged:
        page = int(rng.choice([1, 8, 16, 64]))
        per_seq = int(rng.integers(1, 5)) * (64 // page if page < 64 else 1)
        pages = b * per_seq + int(rng.integers(0, 4))
        kc, vc = rnd(pages, page, hk, d, m=mag), rnd(pages, page, hk, d, m=vmag)
        table = view(rng, rng.permutation(pages)[:b * per_seq].astype(np.int32).reshape(b, per_seq))
        if rng.random() < 0.25:                         # strided along its last dimension: copied (FlashAttention)
            table = np.asfortranarray(table)
        capacity = per_seq * page
    else:
        capacity = int(rng.integers(8, 97))
        rows = b + int(rng.integers(0, 2))
        kc, vc = rnd(rows, capacity, hk, d, m=mag), rnd(rows, capacity, hk, d, m=vmag)
        table = None
    seqlens = rng.integers(0, capacity - new + 1, b).astype(np.int32)
    q = rnd(b, sq, h, d, m=mag)
    if rng.random() < 0.2:                              # NaN / inf in a query row
        q[rng.integers(0, b), rng.integers(0, sq), rng.integers(0, h), rng.integers(0, d)] = \
            rng.choice([np.nan, np.inf, -np.inf])
    args = dict(q=view(rng, q), k_cache=kc, v_cache=vc, cache_seqlens=seqlens, block_table=table,
                causal=bool(rng.integers(0, 2)), num_splits=int(rng.choice([0, 1, 3])))
    if rng.random() < 0.3:
        args["window_size"] = tuple(int(x) for x in rng.integers(-1, capacity + 2, 2))
    if rng.random() < 0.2:
        args["softcap"] = float(rng.choice([5.0, 30.0]))
    if rng.random() < 0.2:
        args["alibi_slopes"] = (rng.random((b, h)) * 0.3).astype(np.float32)
    if rng.random() < 0.15:
        args["softmax_scale"] = float(rng.choice([0.0, -0.1, 0.5]))
    if rng.random() < 0.2:
        args["cache_leftpad"] = np.array([rng.integers(0, n + new + 1) for n in seqlens], np.int32)
    if not paged and rng.random() < 0.2:
        args["cache_batch_idx"] = rng.permutation(kc.shape[0])[:b].astype(np.int32)
    if new:
        args["k"], args["v"] = view(rng, rnd(b, new, hk, d, m=mag)), view(rng, rnd(b, new, hk, d, m=vmag))
        if rng.random() < 0.5:                       # q rotated at seqlens + i: within cos's rows
            args["cache_seqlens"] = np.minimum(seqlens, capacity - sq).astype(np.int32)
            rot = 2 * int(rng.integers(1, d // 2 + 1))
            angle = rng.random((capacity, rot // 2)) * 2 * np.pi
            args["rotary_cos"], args["rotary_sin"] = np.cos(angle).astype(dtype), np.sin(angle).astype(dtype)
            args["rotary_interleaved"] = bool(rng.integers(0, 2))
    return args


def reference(a):
    d = a["q"].shape[-1]
    scale = a.get("softmax_scale")
    return kvcache_reference(
        a["q"], a["k_cache"], a["v_cache"], a["cache_seqlens"], k=a.get("k"), v=a.get("v"),
        cos=a.get("rotary_cos"), sin=a.get("rotary_sin"), leftpad=a.get("cache_leftpad"), table=a["block_table"],
        batch_idx=a.get("cache_batch_idx"), causal=a["causal"], window=a.get("window_size", (-1, -1)),
        interleaved=a.get("rotary_interleaved", True), alibi=a.get("alibi_slopes"), softcap=a.get("softcap", 0.0),
        scale=1 / np.sqrt(d) if scale is None else scale)


# Seeds past the default range that found bugs, kept: 175, an infinite query channel made its interleaved rotary
# partner (and a pair past rotary_dim) NaN where FlashAttention's rotary keeps it finite (session 43).
FOUND = [175]


@pytest.mark.parametrize("seed", list(range(N_VALID)) + [s for s in FOUND if s >= N_VALID])
def test_random_valid_calls(seed):
    rng = np.random.default_rng(1000 + seed)
    a = random_call(rng)
    ref_out, ref_pt, ref_lse, k_ref, v_ref = reference(a)
    out, lse = fakv.flash_attn_with_kvcache(**a, return_softmax_lse=True)
    out = out.astype(np.float64)
    nan = np.isnan(ref_out)
    assert np.array_equal(np.isnan(out), nan), "NaN where the reference has none (or the other way)"
    ok, msg = check(np.where(nan, 0, out), np.where(nan, 0, ref_out), np.where(nan, 0, ref_pt),
                    alibi="alibi_slopes" in a)
    assert ok, msg
    finite = np.isfinite(ref_lse)
    assert np.array_equal(np.isposinf(lse), np.isposinf(ref_lse)) and np.array_equal(np.isnan(lse), np.isnan(ref_lse))
    assert np.allclose(lse[finite], ref_lse[finite], rtol=1e-5, atol=2e-3)
    if "k" in a:                                       # the appended rows, in place
        for i in range(out.shape[0]):
            row = i if a.get("cache_batch_idx") is None else int(a["cache_batch_idx"][i])
            assert np.array_equal(dense(a["v_cache"], a["block_table"], a["k_cache"].shape[1], row), v_ref[i])
            got = dense(a["k_cache"], a["block_table"], a["k_cache"].shape[1], row).astype(np.float32)
            assert np.allclose(got, k_ref[i].astype(np.float32), rtol=1e-2, atol=1e-2)


def _set(name, value):
    return lambda a: dict(a, **{name: value})


def _table(f):
    def change(a):
        t = None if a["block_table"] is None else f(a["block_table"])
        return None if t is None else dict(a, block_table=t)
    return change


def _used_table(f):
    """A change of the block table's entries: a mistake only when a sequence
    has keys (cache_seqlens all 0 read no entry, and that is no error)."""
    change = _table(f)
    return lambda a: change(a) if np.max(a["cache_seqlens"]) > 0 else None


# (what goes wrong, the change, words the message must hold: the host's own for bad data, which the
# kernels' reports of the same data do not hold)
MISTAKES = [
    ("q in float32", lambda a: dict(a, q=a["q"].astype(np.float32)), "`q` must be float16 or bfloat16"),
    ("q 3-D", lambda a: dict(a, q=a["q"][0]), "`q` must be 4-D"),
    ("caches of another dtype", lambda a: dict(a, k_cache=a["k_cache"].astype(np.float32),
                                               v_cache=a["v_cache"].astype(np.float32)), "`k_cache` must be"),
    ("v_cache shorter", lambda a: dict(a, v_cache=a["v_cache"][:, :-1] if a["v_cache"].shape[1] > 1 else
                                       a["v_cache"][:, :, :, :-1]), "v_cache"),
    ("reversed caches", lambda a: dict(a, k_cache=a["k_cache"][:, ::-1], v_cache=a["v_cache"][:, ::-1])
     if a["k_cache"].shape[1] > 1 else None, "negative stride"),
    ("heads not a multiple", lambda a: dict(a, q=np.concatenate([a["q"], a["q"][:, :, :1]], 2))
     if a["k_cache"].shape[2] > 1 else None, "must be a multiple of kv heads"),
    ("seqlens int64", lambda a: dict(a, cache_seqlens=a["cache_seqlens"].astype(np.int64)), "`cache_seqlens`"),
    ("seqlens too long", lambda a: dict(a, cache_seqlens=a["cache_seqlens"] + 10**4), "cache_seqlens["),
    ("seqlens negative", lambda a: dict(a, cache_seqlens=a["cache_seqlens"] - 10**4),
     "cache_seqlens must not be negative"),
    ("seqlens of another batch", lambda a: dict(a, cache_seqlens=np.zeros(a["q"].shape[0] + 1, np.int32)),
     "`cache_seqlens` must have shape"),
    ("block table int64", _table(lambda t: t.astype(np.int64)), "`block_table`"),
    ("block table entry past the cache", _used_table(lambda t: t + 10**5), "block_table entries used by"),
    ("block table negative entry", _used_table(lambda t: t - 10**5), "block_table entries used by"),
    ("window of three", _set("window_size", (1, 2, 3)), "`window_size`"),
    ("alibi slopes of another shape", _set("alibi_slopes", np.zeros(3, np.float32)), "`alibi_slopes`"),
    ("softcap negative", _set("softcap", -1.0), "softcap"),
    ("softmax_scale NaN", _set("softmax_scale", float("nan")), "`softmax_scale` must be finite"),
    ("softmax_scale a string", _set("softmax_scale", "abc"), "`softmax_scale`"),
    ("num_splits a float", _set("num_splits", 2.5), "`num_splits`"),
    ("k without v", lambda a: dict(a, k=np.zeros((a["q"].shape[0], 1) + a["k_cache"].shape[2:], a["q"].dtype),
                                   v=None), "`k` and `v` are given together"),
    ("rotary without k", lambda a: None if "k" in a else dict(
        a, rotary_cos=np.zeros((10**4, 4), a["q"].dtype), rotary_sin=np.zeros((10**4, 4), a["q"].dtype)),
     "give `k` and `v` too"),
    ("leftpad past the keys", lambda a: dict(a, cache_leftpad=np.full(a["q"].shape[0], 10**4, np.int32)),
     "cache_leftpad["),
    # (rotary_cos keeps the capacity's rows, FlashAttention's rule; q's positions pass them where more queries
    # than new keys sit at the end of a full cache)
    ("rotary rows short of q's positions", lambda a: None if "rotary_cos" not in a or a["q"].shape[1] <= a[
        "k"].shape[1] else dict(a, causal=True, cache_leftpad=None, cache_seqlens=np.full(
            a["q"].shape[0], a["rotary_cos"].shape[0] - a["k"].shape[1], np.int32)), "q is rotated at positions"),
    ("batch_idx past the block table", lambda a: None if a["block_table"] is None else dict(
        a, cache_batch_idx=np.full(a["q"].shape[0], a["block_table"].shape[0], np.int32)),
     "cache_batch_idx entries must be in"),
    ("batch_idx past the cache", lambda a: None if a["block_table"] is not None else dict(
        a, cache_batch_idx=np.full(a["q"].shape[0], 10**4, np.int32)),
     "cache_batch_idx entries must be in"),
]


@pytest.mark.parametrize("seed", range(N_MISTAKES))
def test_random_mistakes_are_named(seed):
    rng = np.random.default_rng(5000 + seed)
    order = rng.permutation(len(MISTAKES))
    a = random_call(rng)
    for i in order:                                   # the first mistake that applies to this call
        what, change, words = MISTAKES[i]
        bad = change(a)
        if bad is not None:
            break
    bad = {k: v for k, v in bad.items() if v is not None}
    with pytest.raises(ValueError) as e:
        fakv.flash_attn_with_kvcache(**bad)
    assert words in str(e.value), f"{what}: {e.value}"


@pytest.mark.parametrize("what", [m[0] for m in MISTAKES])
def test_each_mistake_is_named(what):
    """Every mistake of the list, on the first random valid call it applies
    to (the random draw above leaves some out with the default seeds)."""
    _, change, words = next(m for m in MISTAKES if m[0] == what)
    for seed in range(200):
        bad = change(random_call(np.random.default_rng(9000 + seed)))
        if bad is not None:
            break
    assert bad is not None, f"{what}: applies to none of 200 random calls"
    with pytest.raises(ValueError) as e:
        fakv.flash_attn_with_kvcache(**{k: v for k, v in bad.items() if v is not None})
    assert words in str(e.value), f"{what}: {e.value}"
