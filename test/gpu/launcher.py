"""Launch the fakv-IR kernels (test/gpu/ir_kernels.py) on torch tensors,
with the package's runtime (fakv.runtime.GPUKernel)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import source_tree  # noqa: E402,F401  (the source tree's fakv when it is built, else the installed one)
from fakv.runtime import GPUKernel  # noqa: E402
from ir_kernels import compile_kernel  # noqa: E402


class Kernel:
    def __init__(self, name):
        binary, facts = compile_kernel(name)
        self.kernel = GPUKernel(binary, facts["kernels"][0])

    def __call__(self, grid, *args, stream=None):
        self.kernel.launch((tuple(grid) + (1, 1))[:3], list(args), stream)
