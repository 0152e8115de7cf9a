"""What of a launch's runtime arguments a kernel is specialised on: each
argument's kernel type (arg_type) and which ones are multiples of 16 or
16-byte aligned (divisible). The JIT (jitfunction.py) keys its
specialisations by them, and so does the API's index of prepared calls
(interface.py), which must not import the DSL on a warm start."""
from .ir import PtrType, ScalarType
from .runtime import Pointer

_TORCH_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
                 "int8": "i8", "uint8": "i8"}
_NUMPY_DTYPES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "i32", "int64": "i64",
                 "int8": "i8"}


def arg_type(value, name):
    """The kernel type of a runtime argument, and whether it lives on the GPU."""
    if type(value) is Pointer:
        return PtrType(value.dtype), True
    mod = type(value).__module__
    if mod.startswith("torch"):
        dtype = _TORCH_DTYPES.get(str(value.dtype).replace("torch.", ""))
        if dtype is None:
            raise TypeError(f"argument `{name}`: unsupported tensor dtype {value.dtype}")
        return PtrType(dtype), value.is_cuda
    if mod.startswith("numpy") and hasattr(value, "dtype"):
        dtype = _NUMPY_DTYPES.get(str(value.dtype))
        if dtype is None:
            raise TypeError(f"argument `{name}`: unsupported array dtype {value.dtype}")
        return PtrType(dtype), False      # (any layout: kernels take strides explicitly)
    if isinstance(value, bool):
        return ScalarType("i1"), None
    if isinstance(value, int):
        return ScalarType("i32" if -2**31 <= value < 2**31 else "i64"), None
    if isinstance(value, float):
        return ScalarType("f32"), None
    raise TypeError(f"argument `{name}`: cannot pass {type(value).__name__} to a kernel "
                    f"(tensors, arrays, ints, floats and bools can be passed)")


def address(value):
    if hasattr(value, "data_ptr"):
        return value.data_ptr()
    return value.ctypes.data


def divisible(runtime):
    """The runtime arguments ((name, value, type) triples) that are multiples
    of 16 (integers) or 16-byte aligned (arrays), in parameter order: the
    kernel is specialised on them."""
    out = []
    for name, value, t in runtime:
        if isinstance(t, PtrType):
            if address(value) % 16 == 0:
                out.append(name)
        elif type(value) is int and value % 16 == 0:
            out.append(name)
    return tuple(out)
