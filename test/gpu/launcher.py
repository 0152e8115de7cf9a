"""Launch kernels compiled by fakv-compile (a .cubin and its .json) on torch
tensors, with the package's runtime (frontend/fakv/runtime.py)."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "frontend"))
from fakv.runtime import GPUKernel  # noqa: E402


class Kernel:
    def __init__(self, base, name=None):
        meta = json.load(open(base + ".json"))
        info = meta["kernels"][0] if name is None else next(k for k in meta["kernels"] if k["name"] == name)
        self.kernel = GPUKernel(base + ".cubin", info)

    def __call__(self, grid, *args, stream=None):
        self.kernel.launch((tuple(grid) + (1, 1))[:3], list(args), stream)
