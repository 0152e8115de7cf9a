"""A pytest plugin that runs the CPU path's kernel tests on the GPU: every @fakv.jit launch given numpy arrays
copies the memory they lie in to the GPU (views of one buffer stay views of one buffer there; each copy with 1
MiB of zeros around it, so that a test's deliberate access past an array does not end the process's CUDA
context), launches there, waits, and copies that memory back into the arrays, so that the test's own assertions
judge the GPU's results. A store into a margin (nonzero there after the launch) raises fakv.DataError, as the
CPU path's memory guard does; a load past an array reads 0 there, as on the CPU path.

    PYTHONPATH=test/gpu:test/python python3 -m pytest -p numpy_on_gpu test/python/test_dsl_semantics.py ...

fakv is imported from where Python finds it first (the installed wheel on the GPU machine): this module is
imported before test/python/conftest.py puts the source tree's frontend/ on sys.path. Tests of what only the
CPU path does, or that the GPU refuses by design, are in EXPECTED (xfail, strict): any other failure is the
GPU's or the plugin's. Launches on arrays it cannot copy
(negative strides, other libraries' arrays) are left to the CPU path and counted (`numpy_on_gpu: ...` at the
end). run_all.sh's `cpu-suite` step runs it."""
import ctypes
import subprocess

import numpy as np
import pytest
import torch

import fakv
from fakv import jitfunction

_run = jitfunction.JITFunction.run
_byte_bounds = getattr(getattr(np.lib, "array_utils", None), "byte_bounds", None) or np.byte_bounds
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
    """The bytes `root` spans (byte_bounds: an as_strided view's too), as a uint8 numpy array over the same
    memory, and their first address."""
    low, high = _byte_bounds(root)
    return np.ctypeslib.as_array((ctypes.c_uint8 * (high - low)).from_address(low)), low


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
        result = _run(self, grid, *gpu_args, stream=stream, **gpu_kwargs)
    finally:
        torch.cuda.synchronize()
        COUNTS["gpu"] += 1
        for root, raw, _, padded in buffers.values():
            if root.flags.writeable:
                raw[:] = padded[MARGIN:MARGIN + raw.size].cpu().numpy()
    # (the CPU path raises here for a store outside the arrays; the GPU's lands in a margin: nonzero there)
    if any(bool(padded[:MARGIN].any()) or bool(padded[MARGIN + raw.size:].any()) for _, raw, _, padded in
           buffers.values()):
        raise fakv.DataError(f"kernel `{self.__name__}` stored outside the arrays it was given (numpy_on_gpu: "
                             f"a margin around them changed on the GPU)")
    return result


# Tests of what the CPU path alone does, or that the GPU refuses by design: name -> (why, the exception they
# fail with there). Marked xfail(strict, raises=): a failure of another kind fails the step, and so does one of
# these passing (the mark then stale).
_NON_POWER_OF_TWO = ("its tiles are not powers of two (the GPU lowering refuses them, naming the op)",
                     fakv.CompilationError)
_PAGED = ("fl.paged_load outside a dot's pipelined loop (the GPU lowering refuses it, naming the op)",
          fakv.CompilationError)
_CLI = ("runs the source tree's fakv in a subprocess (its extension not built for this machine's Python)",
        (subprocess.CalledProcessError, AssertionError))
EXPECTED = {
    "test_dsl_semantics.py::test_shifts_past_the_width_shift_everything_out": _NON_POWER_OF_TWO,
    "test_dsl_semantics.py::test_paged_rows_before_the_first_key_read_nothing": _PAGED,
    "test_kernels_cpu.py::test_contiguous_cache_reads_only_its_own_row": _PAGED,
    "test_dsl_semantics.py::test_bf16_subnormals_survive_the_cpu_path":
        ("the GPU's lg2.approx.ftz takes a subnormal input as 0 (docs/frontend.md)", AssertionError),
    "test_dsl_semantics.py::test_large_float_sums_keep_their_accuracy":
        ("the CPU path's f64 sum (the GPU adds in f32: docs/frontend.md)", AssertionError),
    "test_frontend.py::test_specialises_on_divisibility":
        ("the GPU keys divisibility, the CPU path does not", AssertionError),
    "test_frontend.py::test_cluster_gather_ir_and_cpu_path":
        ("a CPU-path refusal of what the GPU runs", pytest.fail.Exception),
    "test_frontend.py::test_gpu_binaries_are_cached_on_disk": _CLI,
    "test_frontend.py::test_kernels_wait_for_the_grids_before_them": _CLI,
    **{f"test_frontend.py::test_cli{name}": _CLI for name in (
        "", "_attention_takes_the_calls_options", "_cubin", "_generic_kernel",
        "_kernel_files_that_fail_and_options_that_do_not_apply", "_refuses_bad_arg_lists_and_outputs",
        "_refuses_bad_attention_values_and_files", "_shows_the_kernel_the_jit_runs")},
}


def pytest_configure(config):
    jitfunction.JITFunction.run = _run_on_gpu


def pytest_collection_modifyitems(items):
    for item in items:
        name = item.nodeid.split("/")[-1].split("[")[0]
        if name in EXPECTED:
            reason, raises = EXPECTED[name]
            item.add_marker(pytest.mark.xfail(reason=reason, raises=raises, strict=True))


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"numpy_on_gpu: {COUNTS['gpu']} launches on the GPU, {COUNTS['cpu']} left to the "
                                f"CPU path (arrays it cannot copy)")
