"""Launch kernels compiled by fakv-compile on torch tensors, through
libfakv_runtime (the C API in runtime/).

    k = Kernel("build/gpu-kernels/decode_bf16")       # .cubin + .json
    k(grid, q, k_cache, ..., 0.125, True)             # torch tensors and scalars

Parameters follow the .json: "ptr" takes a CUDA tensor (its data pointer),
integer and float types take Python numbers, and for each "tensormap" entry
the tensor passed at the named parameter (a KV cache) is encoded as a TMA
descriptor and appended.
"""
import ctypes
import json
import os

import torch

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_LIB = None


def runtime():
    global _LIB
    if _LIB is None:
        path = os.environ.get("FAKV_RUNTIME", os.path.join(_ROOT, "build", "lib", "libfakv_runtime.so"))
        lib = ctypes.CDLL(path)
        lib.fakv_last_error.restype = ctypes.c_char_p
        _LIB = lib
    return _LIB


def _check(rc):
    if rc != 0:
        raise RuntimeError(runtime().fakv_last_error().decode())


_CTYPES = {"i1": ctypes.c_bool, "i8": ctypes.c_int8, "i32": ctypes.c_int32,
           "i64": ctypes.c_int64, "f32": ctypes.c_float}


class Kernel:
    def __init__(self, base, name=None):
        meta = json.load(open(base + ".json"))
        info = meta["kernels"][0] if name is None else next(k for k in meta["kernels"] if k["name"] == name)
        self.info = info
        torch.cuda.init()
        torch.cuda.current_device()
        torch.empty(1, device="cuda")          # make the primary context current
        module = ctypes.c_void_p()
        _check(runtime().fakv_load_module(os.path.abspath(base + ".cubin").encode(), ctypes.byref(module)))
        fn = ctypes.c_void_p()
        _check(runtime().fakv_get_kernel(module, info["name"].encode(), ctypes.byref(fn)))
        self.fn = fn
        self.nparams = len(info["params"]) - len(info["tensormaps"])

    def __call__(self, grid, *args, stream=None):
        if len(args) != self.nparams:
            raise TypeError(f"{self.info['name']} takes {self.nparams} arguments, got {len(args)}")
        keep = []
        for value, kind in zip(args, self.info["params"]):
            if kind == "ptr":
                keep.append(ctypes.c_void_p(value.data_ptr()))
            else:
                keep.append(_CTYPES[kind](value))
        for tm in self.info["tensormaps"]:
            cache = args[tm["arg"]]
            buf = (ctypes.c_uint8 * 128)()
            dims = (ctypes.c_uint64 * 4)(*cache.shape)
            strides = (ctypes.c_uint64 * 4)(*cache.stride())
            _check(runtime().fakv_encode_kv_tensormap(buf, ctypes.c_void_p(cache.data_ptr()), dims,
                                                      strides, ctypes.c_uint32(tm["rows"])))
            keep.append(buf)
        params = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(k) for k in keep])
        s = stream if stream is not None else torch.cuda.current_stream().cuda_stream
        gx, gy, gz = (list(grid) + [1, 1])[:3]
        _check(runtime().fakv_launch(self.fn, gx, gy, gz, self.info["threads"], self.info["smem_bytes"],
                                     ctypes.c_void_p(s), params))
