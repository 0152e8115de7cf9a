"""What of a launch's runtime arguments a kernel is specialised on: each
argument's kernel type (arg_type; arg_kind: the same as text, without
importing ir.py) and which ones are multiples of 16 or
16-byte aligned (divisible). The JIT (jitfunction.py) keys its
specialisations by them, and so does the API's index of prepared calls
(prepare.py), which must not import the DSL on a warm start."""
from .runtime import Pointer

_TORCH_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
                 "int8": "i8", "uint8": "i8"}
_NUMPY_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
                 "int8": "i8"}


def arg_kind(value, name):
    """The kernel type of a runtime argument as its ir type prints
    ('ptr<bf16>', 'i32', 'i64', 'i1', 'f32'), and whether it lives on the
    GPU (None for a scalar). Without ir.py: the API's index keys by it on a
    warm start."""
    if type(value) is Pointer:
        return f"ptr<{value.dtype}>", True
    mod = type(value).__module__
    if mod.startswith("torch"):
        dtype = _TORCH_DTYPES.get(str(value.dtype).replace("torch.", ""))
        if dtype is None:
            raise TypeError(f"argument `{name}`: unsupported tensor dtype {value.dtype}")
        return f"ptr<{dtype}>", value.is_cuda
    if mod.startswith("numpy") and hasattr(value, "dtype"):
        dtype = _NUMPY_DTYPES.get(str(value.dtype))
        if dtype is None:
            raise TypeError(f"argument `{name}`: unsupported array dtype {value.dtype} (taken: "
                            f"{', '.join(_NUMPY_DTYPES)}; a view of one of the same size, `.view(np.int8)` of "
                            f"uint8 say (values above 127 then read negative), or a converted copy)")
        return f"ptr<{dtype}>", False      # (any layout: kernels take strides explicitly)
    if isinstance(value, bool):
        return "i1", None
    if isinstance(value, int):
        if not -2**63 <= value < 2**63:
            raise TypeError(f"argument `{name}`: {value} does not fit in 64 bits (a kernel's ints are i32 or i64)")
        return "i32" if -2**31 <= value < 2**31 else "i64", None
    if isinstance(value, float):
        return "f32", None
    raise TypeError(f"argument `{name}`: cannot pass {type(value).__name__} to a kernel "
                    f"(tensors, arrays, ints, floats and bools can be passed)")


def arg_type(value, name):
    """The kernel type of a runtime argument (ir.py's), and whether it lives on the GPU."""
    from .ir import PtrType, ScalarType
    kind, gpu = arg_kind(value, name)
    return (ScalarType(kind) if gpu is None else PtrType(kind[4:-1])), gpu


def address(value):
    if hasattr(value, "data_ptr"):
        return value.data_ptr()
    return value.ctypes.data


def extent(value):
    """The bytes [lo, hi) a CPU kernel may access through an array argument: those its elements span (a view's,
    not its base's; reversed or strided ones included), bit 63 of lo set when the array is read only (no store
    there: fakv-guard-cpu-memory). Anything else (a Pointer): all memory."""
    if type(value) is Pointer or not hasattr(value, "shape"):
        return 0, 2 ** 64 - 1
    start = address(value)
    if hasattr(value, "element_size"):                                  # a torch tensor
        size, steps = value.element_size(), [s * value.element_size() for s in value.stride()]
    else:
        size, steps = value.itemsize, list(value.strides)
    if any(n == 0 for n in value.shape):
        return start, start                 # (nothing)
    low = start + sum((n - 1) * s for n, s in zip(value.shape, steps) if s < 0)
    high = start + sum((n - 1) * s for n, s in zip(value.shape, steps) if s > 0) + size
    flags = getattr(value, "flags", None)
    return low | (1 << 63 if flags is not None and not flags.writeable else 0), high


def divisible(runtime):
    """The runtime arguments ((name, value, type) triples) that are
    multiples of 16 (integers) or 16-byte aligned (arrays), in parameter
    order: the kernel is specialised on them."""
    out = []
    for name, value, _ in runtime:
        if type(value) is int:
            if value % 16 == 0:
                out.append(name)
        elif not isinstance(value, (bool, float)) and address(value) % 16 == 0:
            out.append(name)
    return tuple(out)
