"""A pytest plugin that runs the CPU path's kernel tests on the GPU: every @fakv.jit launch given numpy arrays
copies the memory they lie in to the GPU (views of one buffer stay views of one buffer there; each copy with 1
MiB of zeros around it, so that a test's deliberate access past an array does not end the process's CUDA
context), launches there, waits, and copies that memory back into the arrays, so that the test's own assertions
judge the GPU's results.

    PYTHONPATH=test/gpu:test/python python3 -m pytest -p numpy_on_gpu test/python/test_dsl_semantics.py ...

fakv is imported from where Python finds it first (the installed wheel on the GPU machine): this module is
imported before test/python/conftest.py puts the source tree's frontend/ on sys.path. Tests of what only the
CPU path does (its memory guard's DataError, integer division by zero, CPU modules) fail under it by design;
docs/gpu-results.md lists the run's failures and why each is one of those. Launches on arrays it cannot copy
(negative strides, other libraries' arrays) are left to the CPU path and counted (`numpy_on_gpu: ...` at the
end). run_all.sh's `cpu-suite` step runs it."""
import ctypes

import numpy as np
import torch

from fakv import jitfunction

_run = jitfunction.JITFunction.run
MARGIN = 1 << 20      # bytes of zeros around each buffer's copy: a test's deliberate access past an array lands there
COUNTS = {"gpu": 0, "cpu": 0}
_TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64,
          "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
          "uint8": torch.uint8, "bool": torch.bool}


def _root(x):
    while isinstance(x.base, np.ndarray):
        x = x.base
    return x


def _raw(root):
    """The bytes `root` owns, as a writable uint8 numpy array over the same memory."""
    address = root.__array_interface__["data"][0]
    return np.ctypeslib.as_array((ctypes.c_uint8 * root.nbytes).from_address(address)), address


class _Unmovable(Exception):
    pass


def _on_gpu(values, buffers):
    """values with numpy arrays replaced by CUDA views of their buffers' copies (buffers: root id -> (root, raw
    bytes, address, CUDA bytes), filled as found)."""
    out = []
    for x in values:
        if not isinstance(x, np.ndarray):
            out.append(x)
            continue
        if x.dtype.name not in _TORCH or any(s < 0 for s in x.strides) or any(s % x.itemsize for s in x.strides):
            raise _Unmovable(x.dtype.name)
        root = _root(x)
        if id(root) not in buffers:
            raw, address = _raw(root)
            padded = torch.zeros(raw.size + 2 * MARGIN + 16, dtype=torch.uint8, device="cuda")
            padded[MARGIN:MARGIN + raw.size] = torch.from_numpy(raw.copy()).cuda()
            buffers[id(root)] = (root, raw, address, padded)
        _, _, address, padded = buffers[id(root)]
        offset = MARGIN + x.__array_interface__["data"][0] - address
        if offset % x.itemsize:
            raise _Unmovable("misaligned")
        typed = padded[:padded.numel() // x.itemsize * x.itemsize].view(_TORCH[x.dtype.name])
        out.append(typed.as_strided(x.shape, [s // x.itemsize for s in x.strides], offset // x.itemsize))
    return out


def _run_on_gpu(self, grid, *args, stream=None, **kwargs):
    if jitfunction.compile_only() or not any(isinstance(v, np.ndarray) for v in (*args, *kwargs.values())):
        return _run(self, grid, *args, stream=stream, **kwargs)
    buffers = {}
    try:
        gpu_args = _on_gpu(args, buffers)
        names = list(kwargs)
        gpu_kwargs = dict(zip(names, _on_gpu([kwargs[n] for n in names], buffers)))
    except _Unmovable:
        COUNTS["cpu"] += 1
        return _run(self, grid, *args, stream=stream, **kwargs)
    try:
        return _run(self, grid, *gpu_args, stream=stream, **gpu_kwargs)
    finally:
        torch.cuda.synchronize()
        COUNTS["gpu"] += 1
        for root, raw, _, padded in buffers.values():
            if root.flags.writeable:
                raw[:] = padded[MARGIN:MARGIN + raw.size].cpu().numpy()


def pytest_configure(config):
    jitfunction.JITFunction.run = _run_on_gpu


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"numpy_on_gpu: {COUNTS['gpu']} launches on the GPU, {COUNTS['cpu']} left to the "
                                f"CPU path (arrays it cannot copy)")
