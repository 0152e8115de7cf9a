"""What operations on kernel values mean: scalar/tile conversions, type
promotion, numpy-style broadcasting, and the arith/fakv ops they emit.

Rules (docs/frontend.md):
- integers: the wider type wins (i1 < i32 < i64); integer with float: the float;
  two floats: the wider, f32 when bf16 meets f16;
- a Python int or float takes the type of the value it meets (a float meeting
  an integer value makes it f32);
- tiles broadcast like numpy (align on the right, size-1 dimensions stretch),
  a scalar meeting a tile is splat;
- `//` and `%` on integers are C division and remainder (truncating), `/` is
  float division, `%` on floats C's fmod; on Python numbers (constexprs)
  the same operators are Python's, evaluated at compile time;
- a truth value is "nonzero"; arithmetic on truth values (i1) counts them
  (True + True is 2), `&`, `|`, `^` keep them truth values;
- `<<` / `>>` by the width or more (or a negative amount) shift every bit
  out: 0, or -1 for `>>` of a negative value.
"""
import numbers

from .ir import FLOATS, INTS, FakvTypeError, PtrType, ScalarType, TileType, Value

WIDTH = {"i1": 1, "i8": 8, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32}


def is_value(x):
    return isinstance(x, Value)


def is_tile(x):
    return isinstance(x, Value) and isinstance(x.type, TileType)


def dtype_of(x):
    return x.type.dtype


_SIGNIFICANT_BITS = {"f32": 24, "f16": 11, "bf16": 8}


def _rounded_int(value, dtype):
    """A Python int rounded to the float type's significant bits, ties to even, exactly (float(value) rounded
    it to f64 first and the literal to f32 again: 2**60 + 2**36 + 1 became 1.1529215e18, not the run-time
    conversion's 1.1529216e18)."""
    bits, a = _SIGNIFICANT_BITS[dtype], abs(value)
    shift = a.bit_length() - bits
    if shift <= 0:
        return value
    q, r = divmod(a, 1 << shift)
    if r > 1 << (shift - 1) or (r == 1 << (shift - 1) and q & 1):
        q += 1
    return (q << shift) * (1 if value >= 0 else -1)


def constant(b, value, dtype):
    if dtype in FLOATS:
        if type(value) is int:
            value = _rounded_int(value, dtype)
        v = float(value)
        if v != v:
            lit = "0x7FC00000" if dtype == "f32" else "0x7E00" if dtype == "f16" else "0x7FC0"
        elif v in (float("inf"), float("-inf")):
            lit = {("f32", True): "0x7F800000", ("f32", False): "0xFF800000",
                   ("f16", True): "0x7C00", ("f16", False): "0xFC00",
                   ("bf16", True): "0x7F80", ("bf16", False): "0xFF80"}[(dtype, v > 0)]
        else:
            lit = repr(v)
            mantissa, e, exponent = lit.partition("e")
            if e and "." not in mantissa:                 # (MLIR's float literals have a point: 1e-06 -> 1.0e-06)
                lit = f"{mantissa}.0e{exponent}"
        return b.op1(f"arith.constant {lit} : {dtype}", ScalarType(dtype), "c")
    if dtype == "i1":
        return b.op1(f"arith.constant {'true' if value else 'false'}", ScalarType("i1"), "c")
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and \
            not float(value).is_integer():     # (2.5 was 2; nan a bare ValueError)
        raise FakvTypeError(f"{value!r} made an {dtype} value: give an integer (int(x) where truncating is meant)")
    lo, hi = RANGE.get(dtype, (-2**63, 2**63))
    hi = 2**8 if dtype == "i8" else hi  # (i8 holds uint8 arrays' bytes too)
    if not lo <= int(value) < hi:       # (MLIR's parser refused it, naming no line of the kernel)
        raise FakvTypeError(f"{value!r} does not fit in {dtype} ([{lo}, {hi - 1}])")
    return b.op1(f"arith.constant {int(value)} : {dtype}", ScalarType(dtype), "c")


def python_dtype(x):
    if isinstance(x, bool):
        return "i1"
    if isinstance(x, int):
        return "i32" if -2**31 <= x < 2**31 else "i64"
    if isinstance(x, float):
        return "f32"
    raise FakvTypeError(f"cannot use {x!r} ({type(x).__name__}) in a kernel expression")


def to_value(b, x, dtype=None):
    """A kernel Value for x (a Value or a Python number)."""
    if is_value(x):
        return x
    return constant(b, x, dtype or python_dtype(x))


RANGE = {"i8": (-2**7, 2**7), "i32": (-2**31, 2**31), "i64": (-2**63, 2**63)}


def literal_dtype(x, other):
    """The type a Python number takes beside a kernel value of dtype `other`: that dtype, unless it cannot
    hold the number (a float beside an integer: f32; an int other than 0 and 1 beside a truth value, or past
    the integer's range: i32 or i64, which then widens the operation)."""
    if isinstance(x, bool) or other in FLOATS:
        return other
    if isinstance(x, float):
        return "f32" if other in INTS else other
    if isinstance(x, numbers.Integral):
        if not -2**63 <= x < 2**63:
            raise FakvTypeError(f"the integer {x} does not fit in 64 bits")
        lo, hi = RANGE.get(other, (0, 2))
        return other if lo <= x < hi else python_dtype(int(x))
    return other


def promote(da, db):
    if da == db:
        return da
    fa, fb = da in FLOATS, db in FLOATS
    if fa and fb:
        if WIDTH[da] != WIDTH[db]:
            return da if WIDTH[da] > WIDTH[db] else db
        return "f32"
    if fa:
        return da
    if fb:
        return db
    return da if WIDTH[da] > WIDTH[db] else db


def convert(b, v, dtype):
    """Scalar or tile conversion to another element type."""
    src = dtype_of(v)
    if src == dtype:
        return v
    if dtype == "i1":                                  # a truth value: nonzero, as in Python, C and numpy
        return compare(b, "ne", v, 0.0 if src in FLOATS else 0)
    t = TileType(v.type.shape, dtype) if is_tile(v) else ScalarType(dtype)
    if src in FLOATS and dtype in FLOATS:
        if is_tile(v):
            return b.op1(f"fakv.cast {v.name} : {v.type.mlir()} -> {t.mlir()}", t)
        if WIDTH[dtype] > WIDTH[src]:
            op = "arith.extf"
        elif WIDTH[dtype] < WIDTH[src]:
            op = "arith.truncf"
        else:
            return convert(b, convert(b, v, "f32"), dtype)
    elif src in INTS and dtype in INTS:
        if src == "i1":
            op = "arith.extui"
        else:
            op = "arith.extsi" if WIDTH[dtype] > WIDTH[src] else "arith.trunci"
    elif src in INTS:
        op = "arith.uitofp" if src == "i1" else "arith.sitofp"
    elif dtype == "i8":      # through i32 (saturating on the CPU and the GPU), then clamped: the GPU converts to i16
        wide = convert(b, v, "i32")                  # and keeps its low byte (200.0 -> -56)
        return convert(b, binary(b, "max", binary(b, "min", wide, 127), -128), "i8")
    else:
        op = "arith.fptosi"
    return b.op1(f"{op} {v.name} : {v.type.mlir()} to {t.mlir()}", t)


def broadcast_shapes(sa, sb):
    out = []
    for i in range(1, max(len(sa), len(sb)) + 1):
        x = sa[-i] if i <= len(sa) else 1
        y = sb[-i] if i <= len(sb) else 1
        if x != y and x != 1 and y != 1:
            raise FakvTypeError(f"shapes {list(sa)} and {list(sb)} do not broadcast")
        out.append(max(x, y))
    return tuple(reversed(out))


def expand_dims(b, v, axis):
    shape = list(v.type.shape)
    if axis < 0:
        axis += len(shape) + 1
    shape.insert(axis, 1)
    t = TileType(shape, v.type.dtype)
    return b.op1(f"fakv.expand_dims {v.name}, {axis} : {v.type.mlir()} -> {t.mlir()}", t)


def broadcast_to(b, v, shape):
    shape = tuple(shape)
    if not is_tile(v):
        t = TileType(shape, dtype_of(v))
        return b.op1(f"fakv.splat {v.name} : {v.type.mlir()} -> {t.mlir()}", t)
    if v.type.shape == shape:
        return v
    while len(v.type.shape) < len(shape):
        v = expand_dims(b, v, 0)
    if v.type.shape == shape:
        return v
    t = TileType(shape, v.type.dtype)
    return b.op1(f"fakv.broadcast {v.name} : {v.type.mlir()} -> {t.mlir()}", t)


def common_type(x, y):
    """The type two values meet in, each a Value or a Python number (as two arms of a conditional, or two
    branches' results): their promoted dtype, a Python number taking a value's as an operation would
    (literal_dtype), tiles broadcast; two pointers of one type."""
    values = [v for v in (x, y) if is_value(v)]
    if any(isinstance(v.type, PtrType) for v in values):
        if len(values) != 2 or x.type != y.type:
            raise FakvTypeError("both sides must be pointers of one type")
        return x.type
    if len(values) == 2:
        dtype = promote(dtype_of(x), dtype_of(y))
    elif values:
        v, n = (x, y) if is_value(x) else (y, x)
        dtype = promote(literal_dtype(n, dtype_of(v)), dtype_of(v))
    else:
        dtype = promote(python_dtype(x), python_dtype(y))
    shapes = [v.type.shape for v in values if is_tile(v)]
    if not shapes:
        return ScalarType(dtype)
    return TileType(broadcast_shapes(*shapes) if len(shapes) == 2 else shapes[0], dtype)


def unify(b, x, y):
    """Values of one dtype and one shape for a binary op."""
    if not is_value(x) and not is_value(y):
        raise FakvTypeError("an operation needs at least one kernel value")
    if is_value(x) and not is_value(y):
        y = to_value(b, y, literal_dtype(y, dtype_of(x)))
    elif is_value(y) and not is_value(x):
        x = to_value(b, x, literal_dtype(x, dtype_of(y)))
    for v in (x, y):
        if isinstance(v.type, PtrType):
            raise FakvTypeError("pointers take `ptr + offset` only (no other arithmetic, no comparison)")
    dtype = promote(dtype_of(x), dtype_of(y))
    x, y = convert(b, x, dtype), convert(b, y, dtype)
    if is_tile(x) or is_tile(y):
        shape = broadcast_shapes(x.type.shape if is_tile(x) else (), y.type.shape if is_tile(y) else ())
        x, y = broadcast_to(b, x, shape), broadcast_to(b, y, shape)
    return x, y


ARITH = {  # python op -> (int op, float op)
    "add": ("arith.addi", "arith.addf"), "sub": ("arith.subi", "arith.subf"),
    "mul": ("arith.muli", "arith.mulf"), "floordiv": ("arith.divsi", None),
    "mod": ("arith.remsi", "arith.remf"), "truediv": (None, "arith.divf"),
    "and": ("arith.andi", None), "or": ("arith.ori", None), "xor": ("arith.xori", None),
    "lshift": ("arith.shli", None), "rshift": ("arith.shrsi", None),
    "max": ("arith.maxsi", "arith.maximumf"), "min": ("arith.minsi", "arith.minimumf"),
}
CMP = {"lt": ("slt", "olt"), "le": ("sle", "ole"), "gt": ("sgt", "ogt"), "ge": ("sge", "oge"),
       "eq": ("eq", "oeq"), "ne": ("ne", "une")}


def _is_pointer(x):
    return is_value(x) and isinstance(x.type, PtrType)


def _is_integer(x):
    if is_value(x):
        return isinstance(x.type, ScalarType) and x.type.dtype in INTS
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def binary(b, op, x, y):
    if _is_pointer(x) or _is_pointer(y):
        if op == "add" and _is_pointer(y) and not _is_pointer(x):
            x, y = y, x
        if op not in ("add", "sub") or not _is_pointer(x) or not _is_integer(y):
            other = y.type if is_value(y) else type(y).__name__
            raise FakvTypeError(f"pointer arithmetic is `pointer +/- integer scalar` (an element offset); "
                                f"got `{op}` with {other}")
        off = convert(b, to_value(b, y, "i64"), "i64")
        if op == "sub":
            zero = to_value(b, 0, "i64")
            off = b.op1(f"arith.subi {zero.name}, {off.name} : i64", off.type)
        return b.op1(f"fakv.addptr {x.name}, {off.name} : {x.type.mlir()}", x.type)
    if op not in ("and", "or", "xor"):                # arithmetic on truth values counts them, as Python does
        x, y = (convert(b, v, "i32") if is_value(v) and dtype_of(v) == "i1" else int(v) if isinstance(v, bool)
                else v for v in (x, y))
    if op == "truediv":
        x, y = unify(b, x, y)
        if dtype_of(x) in INTS:
            x, y = convert(b, x, "f32"), convert(b, y, "f32")
    else:
        x, y = unify(b, x, y)
    is_float = dtype_of(x) in FLOATS
    name = ARITH[op][1 if is_float else 0]
    if name is None:
        hint = ": `/` divides floats (no float floor in fl: `.to(fl.int32)` truncates toward zero)" \
            if (op, is_float) == ("floordiv", True) else ""
        raise FakvTypeError(f"`{op}` is not defined for {'float' if is_float else 'integer'} values{hint}")
    out = b.op1(f"{name} {x.name}, {y.name} : {x.type.mlir()}", x.type)
    if op in ("lshift", "rshift"):                   # (a shift by the width or more, or negative: defined below)
        return _shift_guard(b, op, x, y, out)
    return out


def _shift_guard(b, op, x, y, out):
    """A shift by at least the width, or by a negative amount, shifts every bit out (0; -1 for a right shift
    of a negative value), as Python's arbitrary-width integers would end up within the type, instead of
    the host's or the GPU's own rule (x86 masks the amount, PTX clamps it). x and y are unified."""
    width = WIDTH[dtype_of(x)]
    _, limit = unify(b, y, width)
    t = TileType(y.type.shape, "i1") if is_tile(y) else ScalarType("i1")
    out_of_range = b.op1(f"arith.cmpi uge, {y.name}, {limit.name} : {y.type.mlir()}", t)   # (negatives too)
    fill = 0
    if op == "rshift":
        _, last = unify(b, x, width - 1)
        fill = b.op1(f"arith.shrsi {x.name}, {last.name} : {x.type.mlir()}", x.type)
    return select(b, out_of_range, fill, out)


def compare(b, op, x, y):
    x, y = unify(b, x, y)
    if dtype_of(x) == "i1" and op not in ("eq", "ne"):    # truth values order as 0 < 1 (a signed i1's true is -1)
        x, y = convert(b, x, "i32"), convert(b, y, "i32")
    is_float = dtype_of(x) in FLOATS
    pred = CMP[op][1 if is_float else 0]
    t = TileType(x.type.shape, "i1") if is_tile(x) else ScalarType("i1")
    name = "arith.cmpf" if is_float else "arith.cmpi"
    return b.op1(f"{name} {pred}, {x.name}, {y.name} : {x.type.mlir()}", t)


def select(b, cond, x, y):
    cond = convert(b, to_value(b, cond, "i1"), "i1")
    if _is_pointer(x) or _is_pointer(y):            # one of two pointers of one type (PointerLowering)
        t = common_type(x, y)
        if is_tile(cond):
            raise FakvTypeError("a pointer is picked by a scalar condition, not a tile")
        return b.op1(f"arith.select {cond.name}, {x.name}, {y.name} : {t.mlir()}", t)
    if not is_value(x) and not is_value(y):     # two Python numbers: their promoted type (i32, i64, f32, i1)
        x = to_value(b, x, promote(python_dtype(x), python_dtype(y)))
    x, y = unify(b, x, y)
    if is_tile(cond) or is_tile(x):
        shape = broadcast_shapes(cond.type.shape if is_tile(cond) else (), x.type.shape if is_tile(x) else ())
        x, y = broadcast_to(b, x, shape), broadcast_to(b, y, shape)
        cond = broadcast_to(b, cond, shape)
        return b.op1(f"arith.select {cond.name}, {x.name}, {y.name} : {cond.type.mlir()}, {x.type.mlir()}",
                     x.type)
    return b.op1(f"arith.select {cond.name}, {x.name}, {y.name} : {x.type.mlir()}", x.type)


def math_unary(b, name, x):
    x = to_value(b, x, "f32")
    if dtype_of(x) in INTS:
        x = convert(b, x, "f32")
    if name == "rsqrt" and dtype_of(x) in ("f16", "bf16"):
        # In f32, rounded once to the half type: math.rsqrt of a half tile was 1 / sqrt, rounded twice (1 ulp
        # off on the CPU path for 8 of 53 f16 values); the other functions' lowerings extend to f32 already.
        half = dtype_of(x)
        y = convert(b, x, "f32")
        return convert(b, b.op1(f"math.rsqrt {y.name} : {y.type.mlir()}", y.type), half)
    return b.op1(f"math.{name} {x.name} : {x.type.mlir()}", x.type)


def negate(b, x):
    if not is_value(x):
        return -x
    if dtype_of(x) in FLOATS:
        return b.op1(f"arith.negf {x.name} : {x.type.mlir()}", x.type)
    return binary(b, "sub", 0, x)
