"""Launching compiled kernels on torch tensors through libfakv_runtime (the
C API over the CUDA driver in runtime/), on the current CUDA stream.

A parameter "ptr" takes a CUDA tensor; integer and float parameters take
Python numbers; each tensor map the kernel's TMA copies need is encoded from
the tensor passed at the parameter it names (a KV cache) and appended.
"""
import ctypes
import os

_LIB = None
_CTYPES = {"i1": ctypes.c_bool, "i8": ctypes.c_int8, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "f32": ctypes.c_float}


def library():
    global _LIB
    if _LIB is None:
        path = os.environ.get("FAKV_RUNTIME") or os.path.join(os.path.dirname(__file__), "libfakv_runtime.so")
        _LIB = ctypes.CDLL(path)
        _LIB.fakv_last_error.restype = ctypes.c_char_p
    return _LIB


def check(rc):
    if rc != 0:
        raise RuntimeError(library().fakv_last_error().decode())


def _current_stream():
    import torch
    return torch.cuda.current_stream().cuda_stream


class GPUKernel:
    """A kernel of a cubin, with its launch facts (fakv-compile's JSON entry)."""

    def __init__(self, cubin_path, facts):
        import torch
        torch.cuda.current_device()
        torch.empty(1, device="cuda")  # the primary context is current from here on
        self.facts = facts
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        check(library().fakv_load_module(os.path.abspath(cubin_path).encode(), ctypes.byref(module)))
        check(library().fakv_get_kernel(module, facts["name"].encode(), ctypes.byref(fn)))
        self.fn = fn
        self.nparams = len(facts["params"]) - len(facts["tensormaps"])
        self._maps = {}

    def _tensormap(self, cache, rows):
        """The TMA descriptor of a cache tensor (encoded once per address,
        shape and strides)."""
        key = (cache.data_ptr(), tuple(cache.shape), tuple(cache.stride()), rows)
        buf = self._maps.get(key)
        if buf is None:
            if cache.dim() != 4:
                raise ValueError("a TMA-copied cache is (pages, rows, heads, dim)")
            buf = (ctypes.c_uint8 * 128)()
            check(library().fakv_encode_kv_tensormap(
                buf, ctypes.c_void_p(cache.data_ptr()), (ctypes.c_uint64 * 4)(*cache.shape),
                (ctypes.c_uint64 * 4)(*cache.stride()), ctypes.c_uint32(rows)))
            if len(self._maps) > 256:
                self._maps.clear()
            self._maps[key] = buf
        return buf

    def launch(self, grid, args, stream=None):
        if len(args) != self.nparams:
            raise TypeError(f"{self.facts['name']} takes {self.nparams} arguments, got {len(args)}")
        keep = []
        for value, kind in zip(args, self.facts["params"]):
            keep.append(ctypes.c_void_p(value.data_ptr()) if kind == "ptr" else _CTYPES[kind](value))
        for tm in self.facts["tensormaps"]:
            keep.append(self._tensormap(args[tm["arg"]], tm["rows"]))
        params = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(k) for k in keep])
        s = stream if stream is not None else _current_stream()
        gx, gy, gz = grid
        check(library().fakv_launch(self.fn, gx, gy, gz, self.facts["threads"], self.facts["smem_bytes"],
                                    ctypes.c_void_p(s), params))
