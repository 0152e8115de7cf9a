"""A kernel of conversions and integer operations on edge values (NaN, infinities, -0.0, ties, values past an
int's range, negative operands of // % >> <<, shifts past the width), whose every result docs/frontend.md defines
to the bit, and expected(): those bits by numpy and Python ints, independently of fakv. Shared by the CPU-path
test (test_dsl_semantics.py) and the GPU one (test/gpu/test_frontend_gpu.py): both paths against expected()."""
import numpy as np

import fakv
import fakv.language as fl

N = 64
FLOATS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -1.5, 2.5, -2.5, 0.5, -0.5, 127.5, 128.0, -128.5,
                   -129.0, 255.9, 256.0, 32767.5, 65504.0, 65519.0, 65520.0, 2147483520.0, 2147483648.0,
                   -2147483648.0, -2147483904.0, 3e9, -3e9, 1e20, -1e20, 1e-40, -1e-40, 0.1, 3.4e38, -3.4e38,
                   1.00390625, 1.01171875, 1.0078125, -1.00390625, 9.2233715e18, 9.223373e18, -9.223373e18,
                   6e-8, 3e-8, 5.9604645e-08, 1.1754944e-38, 1e-45, 16777217.0, -0.99999994, 0.99999994, 7.0,
                   -7.0, 100.0, 1e10, -1e10, 2.0 ** 24, 2.0 ** 31 - 64, -(2.0 ** 31) - 128, 1.5e-5, 12345.678,
                   -12345.678, 0.3333333, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25], np.float32)
INTS = np.array([0, 1, -1, 7, -7, 8, -8, 2 ** 31 - 1, -(2 ** 31), 12345, -12345, 255, 256, -129, 128, 127,
                 32767, -32768, 65535, 3, -3, 100, -100, 1 << 30, -(1 << 30), 17, -17, 5, -5, 2, -2, 9] * 2,
                np.int32)
DIVISORS = np.array([3, -3, 2, -2, 7, -7, 1, 5, 16, -16, 9, 4, -4, 11, 13, -13] * 4, np.int32)
SHIFTS = np.array([0, 1, 5, 31, 32, 33, 40, -1, 64, 16, 3, 30, 2, 7, 100, -32] * 4, np.int32)
# (what, dtype name): the outputs' order
OUTPUTS = [("to i8", "i8"), ("to i32", "i32"), ("to i64", "i64"), ("to f16", "f16"), ("to bf16", "bf16"),
           ("i32 ops", "i32"), ("i64 ops", "i64"), ("f32 ops", "f32"), ("truths", "i32")]
I32_OPS, I64_OPS, F32_OPS, TRUTHS = 7, 3, 6, 5


@fakv.jit
def edge_values(X, I, D, S, ToI8, ToI32, ToI64, ToF16, ToBF16, IntOps, LongOps, FloatOps, Truths, x0, i0,
                N: fl.constexpr):
    x = fl.load(X, (N,), (0,), (1,))
    i = fl.load(I, (N,), (0,), (1,))
    d = fl.load(D, (N,), (0,), (1,))
    s = fl.load(S, (N,), (0,), (1,))
    fl.store(ToI8, x.to(fl.int8), (0,), (1,))
    fl.store(ToI32, x.to(fl.int32), (0,), (1,))
    fl.store(ToI64, x.to(fl.int64), (0,), (1,))
    fl.store(ToF16, x.to(fl.float16), (0,), (1,))
    fl.store(ToBF16, x.to(fl.bfloat16), (0,), (1,))
    fl.store(IntOps, i // d, (0,), (1,))
    fl.store(IntOps, i % d, (N,), (1,))
    fl.store(IntOps, i << s, (2 * N,), (1,))
    fl.store(IntOps, i >> s, (3 * N,), (1,))
    fl.store(IntOps, i.to(fl.int8).to(fl.int32), (4 * N,), (1,))
    fl.store(IntOps, (i0 + i) // d, (5 * N,), (1,))
    fl.store(IntOps, i0 << s, (6 * N,), (1,))
    wide = i.to(fl.int64)
    fl.store(LongOps, wide * 3037000499, (0,), (1,))
    fl.store(LongOps, (wide << 33) // d.to(fl.int64), (N,), (1,))
    fl.store(LongOps, wide.to(fl.float32).to(fl.int64), (2 * N,), (1,))
    fl.store(FloatOps, fl.maximum(x, 0.0), (0,), (1,))
    fl.store(FloatOps, fl.minimum(x, -0.0), (N,), (1,))
    fl.store(FloatOps, x % 3.0, (2 * N,), (1,))
    fl.store(FloatOps, i.to(fl.float32), (3 * N,), (1,))
    fl.store(FloatOps, x.to(fl.bfloat16).to(fl.float32), (4 * N,), (1,))
    fl.store(FloatOps, fl.maximum(x, x0), (5 * N,), (1,))
    fl.store(Truths, (x != x).to(fl.int32), (0,), (1,))
    fl.store(Truths, (x < 1.0).to(fl.int32), (N,), (1,))
    fl.store(Truths, (x == x0).to(fl.int32), (2 * N,), (1,))
    fl.store(Truths, ((x >= -0.0) & (x <= 0.0)).to(fl.int32), (3 * N,), (1,))
    fl.store(Truths, (i < i0).to(fl.int32), (4 * N,), (1,))


def outputs(zeros):
    """Out arrays in OUTPUTS' order, made by zeros(size, dtype name)."""
    sizes = [N] * 5 + [N * I32_OPS, N * I64_OPS, N * F32_OPS, N * TRUTHS]
    return [zeros(n, dtype) for n, (_, dtype) in zip(sizes, OUTPUTS)]


INPUTS = (FLOATS, INTS, DIVISORS, SHIFTS)


def launch(arrays, outs):
    """edge_values on INPUTS as `arrays` (numpy or torch) into `outs`."""
    edge_values[(1,)](*arrays, *outs, float("nan"), -5, N=N)


def run_numpy():
    """edge_values launched on numpy arrays (the CPU path, or compiled only): its outputs, bf16 as its 16 bits."""
    import ml_dtypes
    dtypes = {"i8": np.int8, "i32": np.int32, "i64": np.int64, "f16": np.float16, "bf16": ml_dtypes.bfloat16,
              "f32": np.float32}
    outs = outputs(lambda n, dtype: np.zeros(n, dtypes[dtype]))
    launch(INPUTS, outs)
    return [o.view(np.uint16) if o.dtype == ml_dtypes.bfloat16 else o for o in outs]


def _bf16_bits(x):
    """float32 x rounded to bfloat16 (nearest even; NaN quiet), as its 16 bits (numpy alone)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded)


def _from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _to_int(x, bits):
    """Floats to a `bits`-bit int as docs/frontend.md says: toward 0, saturating, NaN 0."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [0 if v != v else hi if v >= 2.0 ** (bits - 1) else lo if v < -(2.0 ** (bits - 1)) else int(v)
            for v in x.astype(np.float64)]


def _wrap(v, bits):
    return ((v + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))


def _c_div(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _extreme(x, y, larger):
    """arith.maximumf / minimumf: NaN if either is, -0.0 below +0.0."""
    out = np.maximum(x, y) if larger else np.minimum(x, y)
    both_zero = (x == 0) & (y == 0)
    signed = np.where(np.signbit(x) & np.signbit(y), np.float32(-0.0), np.float32(0.0)) if larger else \
        np.where(np.signbit(x) | np.signbit(y), np.float32(-0.0), np.float32(0.0))
    return np.where(np.isnan(x) | np.isnan(y), np.float32(np.nan), np.where(both_zero, signed, out))


def expected():
    """What edge_values stores, in OUTPUTS' order (bf16 as its 16 bits), by numpy and Python ints."""
    x, i0, x0 = FLOATS, -5, np.float32(np.nan)
    ints, ds, ss = (list(map(int, a)) for a in (INTS, DIVISORS, SHIFTS))

    def shl(a, k, bits=32):
        return _wrap(a << k, bits) if 0 <= k < bits else 0

    def shr(a, k, bits=32):
        return a >> k if 0 <= k < bits else (-1 if a < 0 else 0)
    i32 = [[_c_div(a, b) for a, b in zip(ints, ds)], [a - _c_div(a, b) * b for a, b in zip(ints, ds)],
           [shl(a, k) for a, k in zip(ints, ss)], [shr(a, k) for a, k in zip(ints, ss)],
           [_wrap(a, 8) for a in ints], [_c_div(_wrap(i0 + a, 32), b) for a, b in zip(ints, ds)],
           [shl(i0, k) for k in ss]]
    i64 = [[_wrap(a * 3037000499, 64) for a in ints], [_c_div(_wrap(a << 33, 64), b) for a, b in zip(ints, ds)],
           [int(np.float32(a)) for a in ints]]
    with np.errstate(invalid="ignore", over="ignore"):
        f32 = [_extreme(x, np.float32(0.0), True), _extreme(x, np.float32(-0.0), False), np.fmod(x, np.float32(3)),
               INTS.astype(np.float32), _from_bf16_bits(_bf16_bits(x)), _extreme(x, x0, True)]
        truths = [x != x, x < 1, x == x0, (x >= 0) & (x <= 0), INTS < i0]
        return [np.array(_to_int(x, 8), np.int8), np.array(_to_int(x, 32), np.int32),
                np.array(_to_int(x, 64), np.int64), x.astype(np.float16), _bf16_bits(x),
                np.array(sum(i32, []), np.int32), np.array(sum(i64, []), np.int64),
                np.concatenate(f32).astype(np.float32), np.concatenate(truths).astype(np.int32)]


def differences(got):
    """The outputs (numpy, in OUTPUTS' order, bf16 as its 16 bits) that differ from expected(), bit for bit but
    for NaNs' payloads: [(what, index, got, expected)]."""
    found = []
    for (what, _), g, e in zip(OUTPUTS, got, expected()):
        g = np.asarray(g)
        if e.dtype.kind == "f":
            same = (np.isnan(g) & np.isnan(e)) | ((g == e) & (np.signbit(g) == np.signbit(e)))
        elif what == "to bf16":
            same = (g == e) | (np.isnan(_from_bf16_bits(g)) & np.isnan(_from_bf16_bits(e)))
        else:
            same = g == e
        found += [(what, int(k), g[k].item(), e[k].item()) for k in np.flatnonzero(~same)]
    return found
