"""Launching compiled kernels on torch tensors through libfakv_runtime (the
C API over the CUDA driver in runtime/), on the current CUDA stream.

A parameter "ptr" takes a CUDA tensor; integer and float parameters take
Python numbers; each tensor map the kernel's TMA copies need is encoded from
the tensor passed at the parameter it names (a KV cache) and appended.
"""
import ctypes
import os
import struct

_LIB = None


def library():
    global _LIB
    if _LIB is None:
        path = os.environ.get("FAKV_RUNTIME") or os.path.join(os.path.dirname(__file__), "libfakv_runtime.so")
        _LIB = ctypes.CDLL(path)
        _LIB.fakv_last_error.restype = ctypes.c_char_p
        u = ctypes.c_uint
        _LIB.fakv_launch_packed.argtypes = [ctypes.c_void_p, u, u, u, u, u, ctypes.c_void_p, ctypes.c_char_p,
                                            ctypes.c_void_p, u]
    return _LIB


def check(rc):
    if rc != 0:
        raise RuntimeError(library().fakv_last_error().decode())


def check_packing(name, grid, packing):
    """A kernel packed by fakv-pack-gqa runs grid[i] / packing[i] programs."""
    for axis, (g, p) in enumerate(zip(grid, packing)):
        if g % p:
            raise ValueError(f"{name}: grid axis {axis} is {g}, not a multiple of the {p} query heads "
                             f"that fakv-pack-gqa packs into one program")


class GPUKernel:
    """A kernel of a cubin, with its launch facts (fakv-compile's JSON entry).

    A launch packs the parameter values into one buffer (struct) and makes
    one call into the runtime; tensor maps are encoded once per cache
    address, shape and strides."""

    @staticmethod
    def for_device(compiled, values):
        """The GPUKernel of a specialisation on the device of its tensor
        arguments (one module per device), which must be the current one."""
        import torch
        device = next((v.get_device() for v in values if getattr(v, "is_cuda", False)), None)
        current = torch._C._cuda_getDevice()
        if device is None:
            device = current
        elif device != current:
            raise ValueError(f"{compiled.name}: the tensors are on cuda:{device} but the current device is "
                             f"cuda:{current}; launch inside `with torch.cuda.device({device}):`")
        kernel = compiled.kernels.get(device)
        if kernel is None:
            kernel = compiled.kernels[device] = GPUKernel(compiled.path, compiled.facts["kernels"][0])
        return kernel

    def __init__(self, cubin_path, facts):
        import torch
        torch.empty(1, device="cuda")  # the current device's primary context is current from here on
        self.facts = facts
        lib = library()
        module, fn = ctypes.c_void_p(), ctypes.c_void_p()
        check(lib.fakv_load_module(os.path.abspath(cubin_path).encode(), ctypes.byref(module)))
        check(lib.fakv_get_kernel(module, facts["name"].encode(), ctypes.byref(fn)))
        self.fn = fn.value
        kinds = facts["params"][: len(facts["params"]) - len(facts["tensormaps"])]
        self.nparams = len(kinds)
        self._is_ptr = [k == "ptr" for k in kinds]
        self._struct = struct.Struct("=" + "".join(_FORMATS[k] for k in kinds))
        sizes = [struct.calcsize("=" + _FORMATS[k]) for k in kinds] + [128] * len(facts["tensormaps"])
        offsets = [sum(sizes[:i]) for i in range(len(sizes))]
        self._offsets = (ctypes.c_uint32 * len(offsets))(*offsets)
        self._count = len(offsets)
        self._maps = {}
        self._tms = [(tm["arg"], tm["rows"]) for tm in facts["tensormaps"]]
        self._launch = lib.fakv_launch_packed
        packing = tuple(facts.get("grid_packing", (1, 1, 1)))
        self._packing = packing if packing != (1, 1, 1) else None     # fakv-pack-gqa's
        self._stream = _stream_getter(torch)

    def _tensormap(self, cache, rows):
        """The TMA descriptor of a cache tensor, as 128 bytes."""
        key = (cache.data_ptr(), tuple(cache.shape), tuple(cache.stride()), rows)
        desc = self._maps.get(key)
        if desc is None:
            if cache.dim() != 4:
                raise ValueError("a TMA-copied cache is (pages, rows, heads, dim)")
            buf = (ctypes.c_uint8 * 128)()
            check(library().fakv_encode_kv_tensormap(
                buf, ctypes.c_void_p(cache.data_ptr()), (ctypes.c_uint64 * 4)(*cache.shape),
                (ctypes.c_uint64 * 4)(*cache.stride()), ctypes.c_uint32(rows)))
            if len(self._maps) > 256:
                self._maps.clear()
            desc = self._maps[key] = bytes(buf)
        return desc

    def launch(self, grid, args, stream=None):
        if len(args) != self.nparams:
            raise TypeError(f"{self.facts['name']} takes {self.nparams} arguments, got {len(args)}")
        try:
            values = self._struct.pack(*[a.data_ptr() if p else a for a, p in zip(args, self._is_ptr)])
        except struct.error as e:
            raise TypeError(f"{self.facts['name']}: an argument does not fit its parameter ({e})") from None
        if self._tms:
            values += b"".join(self._tensormap(args[i], rows) for i, rows in self._tms)
        if self._packing:
            check_packing(self.facts["name"], grid, self._packing)
            grid = [g // p for g, p in zip(grid, self._packing)]
        gx, gy, gz = grid
        check(self._launch(self.fn, gx, gy, gz, self.facts["threads"], self.facts["smem_bytes"],
                           stream if stream is not None else self._stream(), values, self._offsets,
                           self._count))


_FORMATS = {"ptr": "Q", "i1": "?", "i8": "b", "i32": "i", "i64": "q", "f32": "f"}


def _stream_getter(torch):
    """The current CUDA stream's handle, by torch's fastest way available."""
    raw, get_device = getattr(torch._C, "_cuda_getCurrentRawStream", None), getattr(torch._C, "_cuda_getDevice", None)
    if raw is not None and get_device is not None:
        return lambda: raw(get_device())
    return lambda: torch.cuda.current_stream().cuda_stream
