"""Random kernels of what the GPU lowering's dot takes (one warpgroup's wgmma: M <= 64 rows, f16 / bf16 operands
in 64-column panels, B transposed or not), or of a loaded tile of any power-of-two shape alone, with loops
carrying the result, elementwise math, row and column reductions, a second dot of the result cast back to 16 bits,
and masked loads and stores: their source and a float64 numpy reference. Shared by the CPU-path test
(test_dsl_fuzz.py: the CPU path against numpy, each compiled for sm_90a) and the GPU one
(test/gpu/test_frontend_gpu.py: the GPU against numpy)."""
import importlib.util
from pathlib import Path

import numpy as np

DSL = {"f16": "fl.float16", "bf16": "fl.bfloat16"}
# (DSL, numpy) forms of the elementwise step after the dot
ELEMENTWISE = [("fl.exp(s * 0.01)", "np.exp(s * 0.01)"), ("fl.maximum(s, 0.0)", "np.maximum(s, 0.0)"),
               ("s * alpha", "s * alpha"), ("fl.where(s > 0.0, s, s * 0.5)", "np.where(s > 0, s, s * 0.5)"),
               ("s - 1.0", "s - 1.0"), ("fl.abs(s)", "np.abs(s)")]


def case(seed):
    """The random choices of kernel `seed`: a dict (shapes M K N P, dtype, which steps)."""
    rng = np.random.default_rng(seed)
    c = dict(M=int(rng.choice([16, 32, 64])), K=int(rng.choice([64, 128])), dtype=str(rng.choice(["f16", "bf16"])),
             trans_b=bool(rng.integers(0, 2)), acc=bool(rng.integers(0, 2)), loop=bool(rng.integers(0, 2)),
             elementwise=int(rng.integers(0, len(ELEMENTWISE))),
             reduce=str(rng.choice(["none", "row max", "column sum", "to rows"])), second=bool(rng.integers(0, 2)),
             P=int(rng.choice([64, 128])), seed=seed)
    # B's rows are whole 64-column panels unless transposed; so is the second dot's A (the result, N columns)
    c["N"] = int(rng.choice([16, 32, 64, 128] if c["trans_b"] and not c["second"] else [64, 128]))
    c["dot"] = bool(rng.integers(0, 3))
    if not c["dot"]:        # C's tile alone, of any power-of-two shape (fewer elements than threads included)
        c.update(M=int(2 ** rng.integers(0, 8)), N=int(2 ** rng.integers(0, 9)), second=False, acc=True)
    c["m"], c["n"] = (max(0, c[x] - int(rng.integers(0, 4))) for x in "MN")
    c["alpha"] = float(rng.choice([0.5, -1.25, 2.0]))
    # A, C and Out: rows apart by their width plus a pad, from an element past the buffer's (aligned) start; C
    # stored by rows or by columns, read within bounds or under a mask (elements outside it 0.5)
    c["c_by_columns"], c["c_mask"] = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
    pad = lambda: int(rng.choice([0, 0, 1, 3, 8]))          # noqa: E731
    width = 1 if c["reduce"] == "to rows" else c["P"] if c["second"] else c["N"]
    c["lda"], c["ldc"], c["ldo"] = c["K"] + pad(), (c["M"] if c["c_by_columns"] else c["N"]) + pad(), width + pad()
    c["starts"] = [int(rng.choice([0, 0, 1, 2, 4])) for _ in range(3)]
    return c


def source(c):
    """The kernel's source: k(A, B, C, V, Out, m, n, alpha, ...) over one tile."""
    b_shape, b_bounds = ("(N, K)", "(n, K)") if c["trans_b"] else ("(K, N)", "(K, n)")
    dot = f"fl.dot(a, b{', acc=c' if c['acc'] else ''}{', trans_b=True' if c['trans_b'] else ''})"
    if not c["dot"]:
        dot = "c * 0.75 + 0.25"
    lines = ["import fakv", "import fakv.language as fl", "", "", "@fakv.jit",
             "def k(A, B, C, V, Out, m, n, alpha, lda, ldc, ldo, M: fl.constexpr, K: fl.constexpr, "
             "N: fl.constexpr, P: fl.constexpr):",
             "    a = fl.load(A, (M, K), (0, 0), (lda, 1), bounds=(m, K))",
             f"    b = fl.load(B, {b_shape}, (0, 0), ({b_shape[4]}, 1), bounds={b_bounds})"]
    strides = "(1, ldc)" if c["c_by_columns"] else "(ldc, 1)"
    if c["c_mask"]:
        lines += [f"    c = fl.load(C, (M, N), (0, 0), {strides}, "
                  "mask=(fl.arange(0, M)[:, None] < m) & (fl.arange(0, N)[None, :] < n), other=0.5)"]
    else:
        lines += [f"    c = fl.load(C, (M, N), (0, 0), {strides}, bounds=(m, n))"]
    if c["loop"]:
        lines += ["    s = fl.zeros((M, N))", "    for i in fl.range(0, 2):", f"        s = s * 0.5 + {dot}"]
    else:
        lines += [f"    s = {dot}"]
    lines += [f"    s = {ELEMENTWISE[c['elementwise']][0]}"]
    if c["reduce"] == "row max":
        lines += ["    s = s - fl.expand_dims(fl.max(s, 1), 1)"]
    elif c["reduce"] == "column sum":
        lines += ["    s = s + fl.expand_dims(fl.sum(s, 0), 0) * 0.01"]
    if c["second"]:
        lines += ["    v = fl.load(V, (N, P), (0, 0), (P, 1), bounds=(n, P))",
                  f"    s = fl.dot(s.to({DSL[c['dtype']]}), v)"]
    if c["reduce"] == "to rows":
        lines += ["    fl.store(Out, fl.sum(s, 1), (0,), (ldo,), bounds=(m,))"]
    else:
        lines += [f"    fl.store(Out, s, (0, 0), (ldo, 1), bounds=(m, {'P' if c['second'] else 'n'}))"]
    return "\n".join(lines) + "\n"


GARBAGE = 64.0          # what A, C and Out hold outside their matrices (Out: -7 in them too)


def _flat(c, which, rows, cols, fill):
    """A buffer of `which` (0: A, 1: C, 2: Out): GARBAGE, its (rows, cols) matrix (by columns for C when
    c_by_columns) at its start, rows lda / ldc / ldo apart, filled by fill(shape)."""
    ld, start = c[("lda", "ldc", "ldo")[which]], c["starts"][which]
    by_columns = which == 1 and c["c_by_columns"]
    outer, inner = (cols, rows) if by_columns else (rows, cols)
    buffer = np.full(start + outer * ld, GARBAGE, np.float32)
    matrix = buffer[start:].reshape(outer, ld)[:, :inner]
    matrix[...] = fill((outer, inner))
    return buffer


def matrix(c, which, buffer):
    """The matrix of `which` in its buffer (a view; numpy)."""
    rows = c["M"]
    cols = (c["K"], c["N"], c["P"] if c["second"] else c["N"])[which] if which != 2 or c["reduce"] != "to rows" else 1
    ld, start = c[("lda", "ldc", "ldo")[which]], c["starts"][which]
    outer, inner = (cols, rows) if which == 1 and c["c_by_columns"] else (rows, cols)
    view = buffer[start:start + outer * ld].reshape(outer, ld)[:, :inner]
    return view.T if which == 1 and c["c_by_columns"] else view


def inputs(c):
    """float32 numpy inputs (A, B, C, V, Out): multiples of 1/8 in [-1, 1), exact in 16 bits (A, B and V are the
    kernel's 16-bit operands: as_16_bits); A, C and Out flat buffers (matrix() finds their matrices), Out's -7."""
    rng = np.random.default_rng(1000 + c["seed"])

    def r(shape):
        return (rng.integers(-8, 8, shape) / 8).astype(np.float32)
    out_cols = 1 if c["reduce"] == "to rows" else c["P"] if c["second"] else c["N"]
    return (_flat(c, 0, c["M"], c["K"], r), r((c["N"], c["K"]) if c["trans_b"] else (c["K"], c["N"])),
            _flat(c, 1, c["M"], c["N"], r), r((c["N"], c["P"])),
            _flat(c, 2, c["M"], out_cols, lambda shape: np.full(shape, -7.0, np.float32)))


def numpy_16_bits(dtype):
    """numpy's type of "f16" / "bf16" (ml_dtypes for the latter: a CPU-side dependency, not the GPU machine's)."""
    if dtype == "f16":
        return np.float16
    import ml_dtypes
    return ml_dtypes.bfloat16


def rounded_to_16_bits(x, dtype):
    """x (float64) rounded to f16 or bf16 (through float32, to nearest even, as the kernel's f32 is), as float64:
    numpy alone."""
    if dtype == "f16":
        return x.astype(np.float32).astype(np.float16).astype(np.float64)
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def as_16_bits(c, arrays, convert=None):
    """inputs(c) with A, B and V in the kernel's 16-bit type: convert(array, dtype name), numpy's by default."""
    convert = convert or (lambda x, dtype: x.astype(numpy_16_bits(dtype)))
    return [convert(x, c["dtype"]) if i in (0, 1, 3) else x for i, x in enumerate(arrays)]


def reference(c, arrays):
    """(what Out's matrix should hold, float64, NaN where it keeps its -7; a bound on each element's error), from
    the float32 inputs."""
    m, n = c["m"], c["n"]
    a, b, cc, v = (x.astype(np.float64) for x in (matrix(c, 0, arrays[0]), arrays[1], matrix(c, 1, arrays[2]),
                                                  arrays[3]))
    a[m:], v[n:] = 0, 0
    cc[m:], cc[:, n:] = (0.5 if c["c_mask"] else 0), (0.5 if c["c_mask"] else 0)
    if c["trans_b"]:
        b[n:] = 0
        b = b.T
    else:
        b[:, n:] = 0
    if c["dot"]:
        once, size = a @ b + (cc if c["acc"] else 0), np.abs(a) @ np.abs(b) + np.abs(cc) * c["acc"]
    else:
        once, size = cc * 0.75 + 0.25, np.abs(cc) + 0.25
    s = once * 1.5 if c["loop"] else once          # 0.5 * (0.5 * 0 + d) + d
    alpha = c["alpha"]
    s = eval(ELEMENTWISE[c["elementwise"]][1], {"np": np, "s": s, "alpha": alpha})  # noqa: S307 (our own text)
    size = (np.abs(s) + size * (1.5 * abs(alpha) + 1)) * 1e-5
    if c["reduce"] == "row max":
        s = s - s.max(1, keepdims=True)
        size = size + size.max(1, keepdims=True) + np.abs(s) * 1e-6
    elif c["reduce"] == "column sum":
        size = size + (size.sum(0, keepdims=True) + np.abs(s).sum(0, keepdims=True) * 1e-6) * 0.01
        s = s + s.sum(0, keepdims=True) * 0.01
    if c["second"]:
        # the result rounded to 16 bits: an element whose error bound crosses a rounding boundary may round
        # either way (only those: a cast rounding toward zero is caught)
        rounded = rounded_to_16_bits(s, c["dtype"])
        dev = np.maximum(np.abs(rounded_to_16_bits(s - size, c["dtype"]) - rounded),
                         np.abs(rounded_to_16_bits(s + size, c["dtype"]) - rounded))
        size = dev @ np.abs(v) + np.abs(rounded) @ np.abs(v) * 1e-6
        s = rounded @ v
    if c["reduce"] == "to rows":
        want, size = s.sum(1, keepdims=True), np.abs(s).sum(1, keepdims=True) * 1e-6 + size.sum(1, keepdims=True)
        want[m:] = np.nan
        return want, size
    want = s.copy()
    want[m:] = np.nan
    want[:, (c["P"] if c["second"] else n):] = np.nan
    return want, size + 1e-6


def check(c, buffer, want, size):
    """Asserts Out's buffer as the launch left it (numpy) holds the reference in its matrix's bounds, and
    nothing new elsewhere."""
    out = matrix(c, 2, buffer).astype(np.float64)
    outside = np.ones(buffer.shape, bool)
    matrix(c, 2, outside)[...] = False
    assert (buffer[outside] == GARBAGE).all(), f"{c}: stored outside the matrix"
    kept = np.isnan(want)
    assert (out[kept] == -7.0).all(), f"{c}: stored outside the bounds"
    err = np.abs(out[~kept] - want[~kept])
    if not err.size:
        return
    worst = int(np.argmax(err / size[~kept]))
    assert (err <= size[~kept]).all(), (f"{c}:\n{source(c)}\nworst {out[~kept][worst]} against "
                                        f"{want[~kept][worst]} (bound {size[~kept][worst]})")


def load(folder, c):
    """The kernel of case c, written into `folder` and imported: its @fakv.jit function."""
    name = f"dot_fuzz_{c['seed']}"
    path = Path(folder) / f"{name}.py"
    path.write_text(source(c))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.k


def run_numpy(folder, c):
    """Case c's kernel (written into `folder`) launched on numpy arrays: (inputs(c), the operands it ran on:
    Out's buffer last)."""
    arrays = inputs(c)
    operands = as_16_bits(c, arrays)
    launch(load(folder, c), c, *operands)
    return arrays, operands


def launch(kernel, c, a, b, cc, v, out):
    """Launches case c's kernel on these arrays (numpy or torch: A, C and Out from their starts), one program."""
    a, cc, out = (x[start:] for x, start in zip((a, cc, out), c["starts"]))
    kernel[(1,)](a, b, cc, v, out, c["m"], c["n"], c["alpha"], c["lda"], c["ldc"], c["ldo"], M=c["M"], K=c["K"],
                 N=c["N"], P=c["P"])
