"""A kernel of reductions to scalars (fl.sum / fl.max / fl.min of 1-D tiles: fakv.reduce, then fakv.item), shared
by the CPU-path test (test_kernels_cpu.py) and the GPU one (test/gpu/test_frontend_gpu.py), and its reference."""
import numpy as np

import fakv
import fakv.language as fl


@fakv.jit
def tile_stats(X, F, Out, FOut, n, BLOCK: fl.constexpr):
    """Out[:5]: the sum, maximum and minimum of X[:n] (i32), how many exceed their mean (truncated), and the
    element at that count when the maximum is positive (a reduction as a load's index), else X[0]. FOut: the
    sum and maximum of F[:2, :n] (f32, rows BLOCK apart: a 2-D tile reduced to a row, then to a scalar)."""
    x, valid = fl.load(X, (BLOCK,), (0,), (1,), bounds=(n,), other=0), fl.arange(0, BLOCK) < n
    total, top = fl.sum(x, axis=0), fl.max(fl.where(valid, x, -(1 << 30)), axis=0)
    low = fl.min(fl.where(valid, x, 1 << 30), axis=0)
    above = fl.sum(fl.where(valid & (x > total // n), 1, 0), axis=0)
    at = X[fl.where(top > 0, above, 0)]
    k = fl.arange(0, 8)
    fl.store(Out, fl.where(k == 0, total, fl.where(k == 1, top, fl.where(k == 2, low, fl.where(k == 3, above, at)))),
             (0,), (1,), bounds=(5,))
    f = fl.load(F, (2, BLOCK), (0, 0), (BLOCK, 1), bounds=(2, n), other=0.0)
    fmax = fl.max(fl.max(fl.where(valid[None, :], f, float("-inf")), axis=0), axis=0)
    fl.store(FOut, fl.where(fl.arange(0, 2) == 0, fl.sum(fl.sum(f, axis=1), axis=0), fmax), (0,), (1,))


def reference(x, f):
    """tile_stats' Out[:5] and FOut for x (n,) i32 and f (2, BLOCK) f32, numpy."""
    n = len(x)
    total = int(x.astype(np.int64).sum())
    above = int((x > int(total / n)).sum())                 # (the kernel's signed division truncates)
    at = int(x[above if int(x.max()) > 0 else 0])
    return [total, int(x.max()), int(x.min()), above, at], [float(f[:, :n].sum()), float(f[:, :n].max())]
