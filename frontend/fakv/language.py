"""fakv.language: the tile operations a @fakv.jit kernel is written with.

    import fakv.language as fl

Every function here emits fakv IR when the kernel is compiled; called from
plain Python it raises. Tiles are values of static shape (tile sizes are
constexpr); integer scalars are i32 unless they come from i64 arguments.
The ops and their exact semantics are those of the fakv dialect
(docs/dialect.md).
"""
import builtins
import functools
import math
import numbers

from . import semantic as sem
from . import floats
from .ir import FakvTypeError, PtrType, ScalarType, TileType

# Element types, by their MLIR names (torch dtypes map onto them in signature.py).
float32, float16, bfloat16 = "f32", "f16", "bf16"
int1, int8, int32, int64 = "i1", "i8", "i32", "i64"


class constexpr:
    """Annotation of a kernel parameter known when the kernel is compiled
    (tile sizes, flags): `BLOCK_N: fl.constexpr`."""

    def __init__(self, value=None):
        self.value = value

    def __repr__(self):
        return f"constexpr({self.value!r})"


def builtin(fn):
    @functools.wraps(fn)
    def wrapper(*args, _b=None, **kwargs):
        if _b is None:
            raise RuntimeError(f"fakv.language.{fn.__name__} can only be called inside a @fakv.jit kernel")
        return fn(_b, *args, **kwargs)

    wrapper.__fakv_builtin__ = True
    return wrapper


def _i32(b, x):
    """An i32 operand (offsets, indices, lengths): i1 and i8 widen; an i64 value or a number past int32 is
    refused (cut to 32 bits it would address other elements): convert it with `.to(fl.int32)` where it fits."""
    if sem.is_tile(x):
        raise FakvTypeError(f"an i32 scalar operand (an offset, index or length) got a tile {x.type!r}")
    if sem.is_value(x) and sem.dtype_of(x) == "i64" or (isinstance(x, int) and not -2**31 <= x < 2**31):
        raise FakvTypeError(f"an i32 operand (an offset, index or length) got {'an i64 value' if sem.is_value(x) else x}"
                            f"; convert it with .to(fl.int32) where it fits")
    _no_float(x, "an i32 operand (an offset, index or length)")
    return sem.convert(b, sem.to_value(b, x, "i32"), "i32")


def _no_float(x, what):
    """Offsets, indices, lengths and strides are integers: a float is refused (it was truncated silently)."""
    if isinstance(x, float) or sem.is_value(x) and sem.dtype_of(x) in sem.FLOATS:
        raise FakvTypeError(f"{what} got a float ({f'an {sem.dtype_of(x)} value' if sem.is_value(x) else x}); "
                            f"convert it with .to(fl.int32) if truncating is meant")


def _i64(b, x):
    _no_float(x, "an i64 operand (a stride)")
    return sem.convert(b, sem.to_value(b, x, "i64"), "i64")


def _f32(b, x):
    return sem.convert(b, sem.to_value(b, x, "f32"), "f32")


def _tile(x, what):
    if not sem.is_tile(x):
        if sem.is_value(x) and isinstance(x.type, ScalarType) or isinstance(x, (int, float)):
            kind = f"a scalar of type {sem.dtype_of(x)}" if sem.is_value(x) else repr(x)
            raise FakvTypeError(f"{what} must be a tile, got {kind}: a tile of it is fl.full(shape, x)")
        raise FakvTypeError(f"{what} must be a tile, got {x!r}")
    return x


def _ptr(x, what):
    if not (sem.is_value(x) and isinstance(x.type, PtrType)):
        raise FakvTypeError(f"{what} must be a pointer (a tensor argument), got {x!r}")
    return x


MAX_TILE_ELEMENTS = 1 << 24      # fakv's bound on one tile (the dialect's kMaxTileElements)


def _const(x, what):
    """A compile-time integer argument (a literal or an fl.constexpr)."""
    if sem.is_value(x) or isinstance(x, bool) or not isinstance(x, numbers.Integral):
        got = "a runtime value" if sem.is_value(x) else repr(x)
        raise FakvTypeError(f"{what} must be a compile-time integer (a literal or an fl.constexpr "
                            f"parameter), got {got}")
    return int(x)


def _scalar(x, what):
    """A scalar operand: a tile is refused by name (the op's text took it for a scalar: a parse error)."""
    if sem.is_tile(x):
        raise FakvTypeError(f"{what} is a scalar, got a tile {x.type!r}")
    return x


def _flag(x, what):
    """A compile-time truth value (a literal, an fl.constexpr, a Python expression of them): a run-time value
    was true as a Python object whatever it held (`trans_b=n > 0` with n = 0 transposed)."""
    if sem.is_value(x):
        raise FakvTypeError(f"{what} must be known at compile time (a literal or an fl.constexpr parameter), got "
                            f"a runtime value")
    return bool(x)


def _shape(shape, what="a tile's shape"):
    """A tile shape: compile-time dimensions, each >= 1, at most 2^24 elements."""
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    dims = tuple(_const(s, f"{what}'s dimensions") for s in shape)
    if any(d < 1 for d in dims):
        raise FakvTypeError(f"{what} {dims} must have dimensions of at least 1")
    if math.prod(dims) > MAX_TILE_ELEMENTS:
        raise FakvTypeError(f"{what} {dims} holds more than {MAX_TILE_ELEMENTS} elements (2^24), "
                            f"fakv's limit for one tile")
    return dims


def _names(vals):
    return ", ".join(v.name for v in vals)


# ---- program structure ------------------------------------------------------

def _axis(axis):
    axis = _const(axis, "the grid axis")
    if axis not in (0, 1, 2):
        raise FakvTypeError(f"the grid axis must be 0, 1 or 2, got {axis}")
    return axis


@builtin
def program_id(b, axis):
    """This program's index along grid axis 0, 1 or 2 (an i32 scalar)."""
    return b.op1(f"fakv.program_id {_axis(axis)}", ScalarType("i32"), "pid")


@builtin
def num_programs(b, axis):
    """The grid's extent along axis 0, 1 or 2 (an i32 scalar)."""
    return b.op1(f"fakv.num_programs {_axis(axis)}", ScalarType("i32"), "np")


# ---- tile construction --------------------------------------------------------

@builtin
def arange(b, start, end):
    """The i32 tile [start, start + 1, ..., end - 1]; start and end compile-time ints, 0 <= start < end < 2**31
    (for negative positions: fl.arange(0, n) - k)."""
    start, end = _const(start, "arange's start"), _const(end, "arange's end")
    if start < 0 or end >= 2**31:           # (the op holds them as unsigned i32: -2 read as 4294967294)
        raise FakvTypeError(f"arange({start}, {end}): its bounds are 0 <= start < end < 2**31 (for negative "
                            f"positions, subtract from fl.arange(0, n))")
    (n,) = _shape((end - start,), f"arange({start}, {end})")
    return b.op1(f"fakv.arange {start} to {end} : tensor<{n}xi32>", TileType((n,), "i32"), "r")


def _dtype(dtype):
    """A dtype name the kernels have (fl.float32, "bf16", ...)."""
    if dtype not in (int1, int8, int32, int64, float16, bfloat16, float32):
        raise FakvTypeError(f"dtype must be one of fl.int1, int8, int32, int64, float16, bfloat16, float32 "
                            f"(or their names \"i1\", \"i8\", \"i32\", \"i64\", \"f16\", \"bf16\", \"f32\"), "
                            f"got {dtype!r}")
    return dtype


@builtin
def full(b, shape, value, dtype=float32):
    """A tile of `shape` (compile-time) holding `value` (a number or a run-time scalar) everywhere, of `dtype`:
    float32 unless given, whatever `value`'s type (an integer is converted: exact up to 2**24; pass
    dtype=fl.int32 to keep a larger one)."""
    dtype = _dtype(dtype)
    v = sem.convert(b, sem.to_value(b, value, dtype), dtype)
    return sem.broadcast_to(b, v, _shape(shape))


@builtin
def zeros(b, shape, dtype=float32):
    """full(shape, 0, dtype)."""
    return full(shape, 0, dtype, _b=b)


@builtin
def broadcast_to(b, x, shape):
    """x (a scalar or tile) broadcast to `shape`, numpy's rules."""
    return sem.broadcast_to(b, sem.to_value(b, x), _shape(shape))


@builtin
def expand_dims(b, x, axis):
    """x with a dimension of 1 inserted at `axis` (x[:, None] is expand_dims(x, 1))."""
    x = _tile(x, "expand_dims' operand")
    rank = len(x.type.shape)
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank - 1 <= axis <= rank:
        raise FakvTypeError(f"expand_dims' axis must be a compile-time int in [{-rank - 1}, {rank}] for a tile of "
                            f"rank {rank}, got {axis!r}")
    return sem.expand_dims(b, x, axis)


@builtin
def reshape(b, x, shape):
    """x's elements, in row-major order, as a tile of `shape` (the same number of elements)."""
    x = _tile(x, "reshape's operand")
    t = TileType(_shape(shape), x.type.dtype)
    return b.op1(f"fakv.reshape {x.name} : {x.type.mlir()} -> {t.mlir()}", t)


@builtin
def cast(b, x, dtype):
    """x converted to `dtype` (x.to(dtype)): floats round to nearest even, floats to ints truncate (toward 0;
    past the int's range they saturate and NaN gives 0, on the CPU path as on the GPU), a truth value is x != 0."""
    x = sem.to_value(b, x)
    if isinstance(x.type, PtrType):     # (MLIR's sitofp refused a pointer, naming none of the kernel's code)
        raise FakvTypeError(f"`.to` converts numbers and tiles; a pointer ({x.type.mlir()}) is not converted "
                            f"(offsets are added to it)")
    return sem.convert(b, x, _dtype(dtype))


@builtin
def where(b, cond, x, y):
    """x where cond (a truth value, nonzero) else y, elementwise; scalars and tiles broadcast."""
    return sem.select(b, cond, x, y)


@builtin
def maximum(b, x, y):
    """The elementwise larger of x and y (of two Python numbers: folded, as the run-time op gives it)."""
    if not sem.is_value(x) and not sem.is_value(y):      # two Python numbers: folded
        return _folded_extremum(x, y, larger=True)
    return sem.binary(b, "max", x, y)


@builtin
def minimum(b, x, y):
    """The elementwise smaller of x and y (of two Python numbers: folded, as the run-time op gives it)."""
    if not sem.is_value(x) and not sem.is_value(y):
        return _folded_extremum(x, y, larger=False)
    return sem.binary(b, "min", x, y)


def _folded_extremum(x, y, larger):
    """maximum / minimum of two Python numbers as the run-time ops (and numpy) give them: NaN if either is,
    +0.0 the larger of the two zeros, a float if either is one (builtins.max kept whichever came first:
    maximum(1.0, nan) folded to 1.0, maximum(-0.0, 0.0) to -0.0)."""
    if isinstance(x, float) or isinstance(y, float):
        x, y = float(x), float(y)
        if x != x or y != y:
            return float("nan")
        if x == y == 0.0:               # (signed zeros: +0.0 is the larger, -0.0 the smaller)
            return x if (math.copysign(1, x) > 0) == larger else y
    return builtins.max(x, y) if larger else builtins.min(x, y)


def _math(name):
    @builtin
    def op(b, x):
        return sem.math_unary(b, name, x)

    op.__name__ = name
    op.__doc__ = f"math.{name} of a float scalar or tile, elementwise (integers are converted to f32 first)."
    return op


exp, exp2, log, log2, sqrt, rsqrt, tanh, abs_f = (
    _math("exp"), _math("exp2"), _math("log"), _math("log2"), _math("sqrt"), _math("rsqrt"),
    _math("tanh"), _math("absf"))


@builtin
def abs(b, x):  # noqa: A001  (fl.abs; Python's abs() of a kernel value comes here too)
    """|x| of a scalar or tile, in its own type (integers too; abs_f: in float)."""
    if not sem.is_value(x):
        return builtins.abs(x)
    if sem.dtype_of(x) in sem.FLOATS:
        return sem.math_unary(b, "absf", x)
    x = sem.convert(b, x, "i32") if sem.dtype_of(x) == "i1" else x
    return b.op1(f"math.absi {x.name} : {x.type.mlir()}", x.type)


# ---- memory ------------------------------------------------------------------------

def _strided(b, offsets, strides, bounds):
    for what, xs in (("offsets", offsets), ("strides", strides), ("bounds", bounds)):
        if (xs is None and what != "bounds") or isinstance(xs, (numbers.Number, str)) or sem.is_value(xs):
            raise FakvTypeError(f"load/store take {what} as a tuple, one per dimension ((x,) for a 1-D tile), "
                                f"got {xs!r}")
    offsets = [_i32(b, o) for o in offsets]
    strides = [_i64(b, s) for s in strides]
    bounds = [_i32(b, x) for x in bounds] if bounds is not None else []
    if len(strides) != len(offsets) or (bounds and len(bounds) != len(offsets)):
        raise FakvTypeError("load/store need one offset, one stride (and one bound) per dimension")
    text = f"[{_names(offsets)}] strides [{_names(strides)}]"
    if bounds:
        text += f" bounds [{_names(bounds)}]"
    return text


@builtin
def load(b, ptr, shape, offsets, strides, bounds=None, mask=None, other=None):
    """The tile of `shape` at ptr[sum((offsets[d] + i_d) * strides[d])]; elements
    outside `bounds` (or where `mask` is false) are `other` (default 0)."""
    ptr = _ptr(ptr, "load's pointer")
    t = TileType(_shape(shape, "load's shape"), ptr.type.dtype)
    text = f"fakv.load {ptr.name}" + _strided(b, offsets, strides, bounds)
    if mask is not None:
        mask = sem.broadcast_to(b, sem.convert(b, sem.to_value(b, mask, "i1"), "i1"), t.shape)
        text += f" mask {mask.name}"
    if other is not None:
        if sem.is_value(other) and not isinstance(other.type, ScalarType):
            raise FakvTypeError(f"load's `other` is one value for every element outside the bounds or mask: a "
                                f"number or a scalar, got {other.type!r} (for a tile of them, fl.where after)")
        other = sem.convert(b, sem.to_value(b, other, t.dtype), t.dtype)
        text += f" other {other.name}"
    return b.op1(text + f" : {ptr.type.mlir()} -> {t.mlir()}", t)


@builtin
def store(b, ptr, value, offsets, strides, bounds=None, mask=None):
    """Writes the tile `value` (converted to ptr's element type) to ptr[sum((offsets[d] + i_d) * strides[d])];
    elements outside `bounds` (per dimension, from 0) or where `mask` is false are not written."""
    ptr = _ptr(ptr, "store's pointer")
    value = sem.convert(b, _tile(value, "the stored value"), ptr.type.dtype)
    text = f"fakv.store {value.name}, {ptr.name}" + _strided(b, offsets, strides, bounds)
    if mask is not None:
        mask = sem.broadcast_to(b, sem.convert(b, sem.to_value(b, mask, "i1"), "i1"), value.type.shape)
        text += f" mask {mask.name}"
    b.op(text + f" : {value.type.mlir()}, {ptr.type.mlir()}")


@builtin
def load_scalar(b, ptr, index):
    """ptr[index] as a scalar (an i32 index)."""
    ptr = _ptr(ptr, "load_scalar's pointer")
    i = _i32(b, index)
    return b.op1(f"fakv.load_scalar {ptr.name}[{i.name}] : {ptr.type.mlir()} -> {ptr.type.dtype}",
                 ScalarType(ptr.type.dtype))


@builtin
def atomic_add(b, ptr, index, value):
    """ptr[index] += value (int32) once for the program, atomically, with
    acquire-release order at device scope; returns the value before, to
    every thread of the program."""
    ptr = _ptr(ptr, "atomic_add's pointer")
    if ptr.type.dtype != "i32":
        raise FakvTypeError(f"atomic_add adds to an int32 array, not {ptr.type.dtype}")
    _no_float(value, "atomic_add's value (int32: fakv has no float atomics)")
    i, v = _i32(b, index), _i32(b, value)
    return b.op1(f"fakv.atomic_add {ptr.name}[{i.name}], {v.name} : {ptr.type.mlir()}", ScalarType("i32"))


@builtin
def dependency_wait(b):
    """Wait until the kernels this one was launched behind (programmatically,
    on the GPU) have finished and their writes are visible. Before it, read
    only what they do not write (the call's inputs) and write only what they
    do not read; a kernel without it waits at its top. Once a kernel, not in
    a loop or branch (not checked: the kernel's to keep). Nothing on the CPU."""
    b.op("fakv.dependency_wait")


@builtin
def launch_dependents(b):
    """Let the kernel launched behind this one (programmatically, on the GPU)
    be scheduled once every program has passed here; a kernel without it
    does so at its top, after its wait. Once a kernel, not in a loop or
    branch (not checked). Nothing on the CPU."""
    b.op("fakv.launch_dependents")


@builtin
def report(b, error, cond, code):
    """Bad data: when `cond` holds, store the int32 `code` to error[0] (the
    host reads it after the launch). A kernel masks what it reports."""
    error = _ptr(error, "report's error pointer")
    if error.type.dtype != "i32":
        raise FakvTypeError(f"report's error pointer must point to int32, got {error.type.dtype}")
    cond = sem.convert(b, sem.to_value(b, cond, "i1"), "i1")
    if isinstance(cond.type, TileType):
        raise FakvTypeError("report's condition must be a scalar")
    code = _i32(b, code)
    b.op(f"fakv.report {error.name}, {cond.name}, {code.name} : {error.type.mlir()}")


@builtin
def paged_load(b, cache, head, row, rows, head_dim, valid, page_size, num_pages, strides,
               table=None, page=None, leftpad=None, channels=None, report=None):
    """Rows [row, row + rows) of kv head `head` (a rows x head_dim tile) through
    the block-table row `table` (or, for a contiguous cache, cache row `page`);
    rows past `valid` (and channels past `channels`) are zero. strides = (page,
    row, head) in elements. A page outside [0, num_pages) reads as zeros; with
    report=(error, code), `code` is also stored to error[0]. row + leftpad must not be negative (clamp a
    window's start at 0): the CPU path reads such rows as zeros, the GPU's reads are undefined."""
    cache = _ptr(cache, "paged_load's cache")
    if (table is None) == (page is None):
        raise FakvTypeError("paged_load takes exactly one of table= (paged cache) and page= (contiguous)")
    t = TileType(_shape((rows, head_dim), "paged_load's tile (rows, head_dim)"), cache.type.dtype)
    pad = 0 if leftpad is None else leftpad
    if isinstance(row, int) and isinstance(pad, int) and row + pad < 0:
        raise FakvTypeError(f"paged_load's row + leftpad is a key position, >= 0; got {row} + {pad}")
    head, row, valid = _i32(b, head), _i32(b, row), _i32(b, valid)
    text = f"fakv.paged_load {cache.name}[{head.name}, {row.name}]"
    if table is not None:
        text += f" table {_ptr(table, 'the block table').name}"
    else:
        text += f" page {_i32(b, page).name}"
    text += f" valid {valid.name}"
    if leftpad is not None:
        text += f" leftpad {_i32(b, leftpad).name}"
    if channels is not None:
        text += f" channels {_i32(b, channels).name}"
    ps, np_ = _i32(b, page_size), _i32(b, num_pages)
    sp, sr, sh = (_i64(b, s) for s in strides)
    text += f" page_size {ps.name} num_pages {np_.name} strides [{sp.name}, {sr.name}, {sh.name}]"
    if report is not None:
        error, code = report
        error = _ptr(error, "paged_load's report pointer")
        text += f" report {error.name}, {_i32(b, code).name}"
    return b.op1(text + f" : {cache.type.mlir()} -> {t.mlir()}", t)


# ---- matmul, softmax, combine ---------------------------------------------------------

@builtin
def dot(b, x, y, acc=None, trans_a=False, trans_b=False):
    """x @ y (x.T / y.T with trans_a / trans_b) plus acc (default 0), in f32: 2-D tiles (M, K) and (K, N)."""
    x, y = _tile(x, "dot's a"), _tile(y, "dot's b")
    if len(x.type.shape) != 2 or len(y.type.shape) != 2:
        raise FakvTypeError(f"fl.dot takes 2-D tiles, (M, K) and (K, N), got {x.type!r} and {y.type!r}")
    trans_a, trans_b = _flag(trans_a, "dot's trans_a"), _flag(trans_b, "dot's trans_b")
    m = x.type.shape[1] if trans_a else x.type.shape[0]
    n = y.type.shape[0] if trans_b else y.type.shape[1]
    acc = sem.broadcast_to(b, sem.to_value(b, 0.0 if acc is None else acc, "f32"), (m, n))
    acc = sem.convert(b, acc, "f32")
    attrs = [a for a, on in (("transpose_a", trans_a), ("transpose_b", trans_b)) if on]
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    return b.op1(f"fakv.dot {x.name}, {y.name}, {acc.name}{attr} : {x.type.mlir()}, {y.type.mlir()} "
                 f"-> {acc.type.mlir()}", acc.type)


@builtin
def online_softmax(b, scores, row_max, row_sum, scale=None):
    """One online-softmax step: returns (new_max, new_sum, probs, alpha)."""
    scores, row_max, row_sum = (_tile(v, "online_softmax operand") for v in (scores, row_max, row_sum))
    if row_sum.type != row_max.type:      # (the op's text names one type for both: MLIR's parse error, no line)
        raise FakvTypeError(f"online_softmax's row_sum must be a tile like row_max ({row_max.type!r}), got "
                            f"{row_sum.type!r}")
    text = f"fakv.online_softmax {scores.name}, {row_max.name}, {row_sum.name}"
    if scale is not None:
        scale = _f32(b, _scalar(scale, "online_softmax's scale"))
        text += f" scale {scale.name}"
    return tuple(b.op(text + f" : {scores.type.mlir()}, {row_max.type.mlir()}",
                      [row_max.type, row_max.type, scores.type, row_max.type]))


@builtin
def lse_combine(b, partials, lses):
    """Merges split-KV partial outputs (S, R, D) by their log-sum-exps (S, R): returns (out (R, D), lse (R,)),
    a split of LSE -inf weighing nothing, a row whose every split has LSE -inf giving 0 and LSE -inf."""
    partials, lses = _tile(partials, "partials"), _tile(lses, "lses")
    if len(partials.type.shape) != 3 or len(lses.type.shape) != 2:
        raise FakvTypeError(f"lse_combine takes partials (splits, rows, d) and lses (splits, rows), got "
                            f"{list(partials.type.shape)} and {list(lses.type.shape)}")
    s, r, d = partials.type.shape
    out, lse = TileType((r, d), "f32"), TileType((r,), "f32")
    return tuple(b.op(f"fakv.lse_combine {partials.name}, {lses.name} : {partials.type.mlir()}, "
                      f"{lses.type.mlir()} -> {out.mlir()}, {lse.mlir()}", [out, lse]))


@builtin
def cluster_gather(b, xs, size, scatter=None):
    """Every program of a cluster gets every program's tiles: the programs run in clusters of `size` (2 to 8, a
    compile-time integer) consecutive programs on grid axis 2, and for each tile of `xs` (one tile, or a tuple)
    the result has its shape with a last dimension of `size`, [..., r] the tile of the cluster's r-th program
    (program_id(2) % size == r). Each program of a cluster must reach it once (not in a loop): it waits for the
    others. GPU only (a thread-block cluster, through distributed shared memory); num_programs(2) must be a
    multiple of `size`. `scatter` (a bool, or one per tile) shares a tile out instead: its last dimension in
    `size` slices, program r gets slice r of every program's tile, [..., j, r] (each element sent once)."""
    one = not isinstance(xs, (tuple, list))
    xs = [_tile(x, "cluster_gather's operand") for x in ([xs] if one else xs)]
    size = _const(size, "cluster_gather's size")
    scatter = [_flag(scatter, "cluster_gather's scatter")] * len(xs) if not isinstance(scatter, (tuple, list)) \
        else [_flag(s, "cluster_gather's scatter") for s in scatter]
    if len(scatter) != len(xs):
        raise FakvTypeError(f"cluster_gather: `scatter` marks each of the {len(xs)} tiles, got {len(scatter)}")
    if not 2 <= size <= 8:
        raise FakvTypeError(f"cluster_gather: a cluster has 2 to 8 programs, got {size}")
    for x in xs:
        if x.type.dtype not in ("f32", "i32"):
            raise FakvTypeError(f"cluster_gather gathers f32 or i32 tiles, got {x.type.dtype}")
    for x, s in zip(xs, scatter):
        if s and (not x.type.shape or x.type.shape[-1] % size):
            raise FakvTypeError(f"cluster_gather shares out a tile's last dimension in {size} slices: "
                                f"{list(x.type.shape)} has no such dimension")
    res = [TileType((x.type.shape[:-1] + (x.type.shape[-1] // size,) if s else x.type.shape) + (size,),
                    x.type.dtype) for x, s in zip(xs, scatter)]
    attr = f" {{scatter = array<i1: {', '.join('true' if s else 'false' for s in scatter)}>}}" if any(scatter) else ""
    out = b.op(f"fakv.cluster_gather({', '.join(x.name for x in xs)}) size {size}{attr} : "
               f"{', '.join(x.type.mlir() for x in xs)} -> {', '.join(r.mlir() for r in res)}", res)
    return out[0] if one else tuple(out)


def _reduce(kind):
    @builtin
    def op(b, x, axis=None):
        """The tile without dimension `axis` (required: no whole-tile reduction), its elements combined (floats, or i32: signed max / min,
        wrapping sum); of a 1-D tile, a scalar (`fakv.item` of the one-element result). f16 / bf16 tiles are
        reduced in f32, the result rounded to their type once (a sum of 4096 f16 ones is 4096, not 2048)."""
        x = _tile(x, f"{kind}'s operand")
        if x.type.dtype not in ("f32", "f16", "bf16", "i32"):
            raise FakvTypeError(f"{kind} reduces float or i32 tiles, got {x.type.dtype}" +
                                (" (a mask: `.to(fl.int32)` first, to count it)" if x.type.dtype == "i1" else
                                 " (`.to(fl.int32)` first)" if x.type.dtype in ("i8", "i16", "i64") else ""))
        dtype = x.type.dtype
        if dtype in ("f16", "bf16"):
            x = sem.convert(b, x, "f32")
        rank = len(x.type.shape)
        if axis is None:
            raise FakvTypeError(f"{kind}(x, axis): the axis to reduce is required (a tile of rank {rank}; "
                                f"{kind}({kind}(x, 1), 0) reduces a 2-D tile whole)")
        if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
            raise FakvTypeError(f"{kind}'s axis must be a compile-time int in [{-rank}, {rank}) for a tile of "
                                f"rank {rank}, got {axis!r}")
        axis %= rank
        scalar = len(x.type.shape) == 1
        if scalar:                                       # (1, n) along 1 -> (1,) -> its element
            x, axis = sem.expand_dims(b, x, 0), 1
        shape = list(x.type.shape)
        del shape[axis]
        t = TileType(shape, x.type.dtype)
        r = b.op1(f"fakv.reduce {kind} {x.name}, {axis} : {x.type.mlir()} -> {t.mlir()}", t)
        if scalar:
            r = b.op1(f"fakv.item {r.name} : {t.mlir()} -> {t.dtype}", ScalarType(t.dtype))
        return sem.convert(b, r, dtype)

    op.__name__ = kind
    return op


sum, max, min = _reduce("sum"), _reduce("max"), _reduce("min")  # noqa: A001


# ---- score modifiers ------------------------------------------------------------------------

def _positions(x, what):
    x = _tile(x, what)
    if x.type.dtype != "i32" or len(x.type.shape) != 1:
        raise FakvTypeError(f"{what} must be a 1-D i32 tile (positions), got {x.type!r}")
    return x


@builtin
def length_mask(b, scores, cols, valid):
    """scores with -inf in the columns whose key position (`cols`, i32 tile) is >= valid."""
    scores, cols = _tile(scores, "scores"), _positions(cols, "cols")
    return b.op1(f"fakv.length_mask {scores.name}, {cols.name}, {_i32(b, valid).name} : "
                 f"{scores.type.mlir()}, {cols.type.mlir()}", scores.type)


@builtin
def causal_mask(b, scores, rows, cols, offset):
    """scores with -inf where key position col > query position row + offset (bottom-right aligned when
    offset = seqlen_k - seqlen_q)."""
    scores, rows, cols = _tile(scores, "scores"), _positions(rows, "rows"), _positions(cols, "cols")
    return b.op1(f"fakv.causal_mask {scores.name}, {rows.name}, {cols.name}, {_i32(b, offset).name} : "
                 f"{scores.type.mlir()}, {rows.type.mlir()}, {cols.type.mlir()}", scores.type)


@builtin
def window_mask(b, scores, rows, cols, offset, left, right):
    """scores with -inf outside the window [row + offset - left, row + offset + right] (a negative bound:
    unbounded on that side)."""
    scores, rows, cols = _tile(scores, "scores"), _positions(rows, "rows"), _positions(cols, "cols")
    vals = _names([_i32(b, offset), _i32(b, left), _i32(b, right)])
    return b.op1(f"fakv.window_mask {scores.name}, {rows.name}, {cols.name}, {vals} : "
                 f"{scores.type.mlir()}, {rows.type.mlir()}, {cols.type.mlir()}", scores.type)


@builtin
def softcap(b, scores, cap):
    """cap * tanh(scores / cap), -inf kept at -inf (so masks and softcap commute); cap >= 2.94e-39 (1 / f32's
    largest: the op multiplies by 1 / cap)."""
    scores = _tile(scores, "scores")
    c = floats.as_float32(cap) if isinstance(cap, (int, float)) else None
    if c is not None and not (0 < c < math.inf and floats.as_float32(1 / c) < math.inf):   # (as the verifier checks)
        raise FakvTypeError(f"softcap's cap must be in [2.94e-39, 3.4e38] (f32 holds it and its reciprocal), got "
                            f"{cap!r}")
    cap = _f32(b, _scalar(cap, "softcap's cap"))
    return b.op1(f"fakv.softcap {scores.name}, {cap.name} : {scores.type.mlir()}", scores.type)


@builtin
def alibi(b, scores, rows, cols, offset, slopes):
    """scores - slopes[row] * |row + offset - col| (ALiBi; `slopes` a tile with one slope per row)."""
    scores, rows, cols = _tile(scores, "scores"), _positions(rows, "rows"), _positions(cols, "cols")
    slopes = _tile(slopes, "slopes")
    return b.op1(f"fakv.alibi {scores.name}, {rows.name}, {cols.name}, {_i32(b, offset).name}, "
                 f"{slopes.name} : {scores.type.mlir()}, {rows.type.mlir()}, {cols.type.mlir()}, "
                 f"{slopes.type.mlir()}", scores.type)


@builtin
def rotary(b, x, cos, sin, interleaved=False):
    """x rotated by (cos, sin) pairs of its channels: halves (x_i, x_{i+d/2}) or, `interleaved`, neighbours
    (x_2i, x_2i+1); cos / sin hold one angle per pair."""
    x, cos, sin = _tile(x, "x"), _tile(cos, "cos"), _tile(sin, "sin")
    if sin.type != cos.type:
        raise FakvTypeError(f"rotary's sin must be a tile like cos ({cos.type!r}), got {sin.type!r}")
    attr = " {interleaved}" if _flag(interleaved, "rotary's interleaved") else ""
    return b.op1(f"fakv.rotary {x.name}, {cos.name}, {sin.name}{attr} : {x.type.mlir()}, {cos.type.mlir()}",
                 x.type)


# ---- loops -----------------------------------------------------------------------------------

class range:  # noqa: A001
    """`for i in fl.range(start, end, step)`: a loop over i32 values (scf.for);
    variables assigned in the body and defined before the loop are carried."""

    def __init__(self, *args):
        self.args = args


class static_range:
    """`for i in fl.static_range(n)`: unrolled at compile time (n constexpr)."""

    def __init__(self, *args):
        self.args = args
