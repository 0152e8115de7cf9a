"""Mistakes in a kernel's source are CompilationErrors at the kernel's line
(issue 10): tile shapes that are not compile-time, not positive or too big,
a grid axis out of range; an integer division by zero on the CPU path is a
fakv.DataError, not a SIGFPE that kills the process."""
import inspect

import numpy as np
import pytest

import fakv
import fakv.language as fl


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


@fakv.jit
def runtime_shape(X, n):
    fl.store(X, fl.full((n,), 1.0), (0,), (1,))


@fakv.jit
def negative_shape(X):
    fl.store(X, fl.zeros((-4,)), (0,), (1,))


@fakv.jit
def huge_shape(X):
    fl.store(X, fl.load(X, (1048576, 1048576), (0, 0), (1, 1)), (0, 0), (1, 1))


@fakv.jit
def bad_axis(X):
    fl.store(X, fl.full((4,), 1.0) * fl.program_id(3), (0,), (1,))


@fakv.jit
def empty_arange(X):
    fl.store(X, fl.arange(8, 8).to(fl.float32), (0,), (1,))


@pytest.mark.parametrize("kernel,text,message", [
    (runtime_shape, "fl.full((n,)", "dimensions must be a compile-time integer .* got a runtime value"),
    (negative_shape, "(-4,)", r"shape \(-4,\) must have dimensions of at least 1"),
    (huge_shape, "1048576", r"load's shape \(1048576, 1048576\) holds more than 16777216 elements"),
    (bad_axis, "program_id(3)", "the grid axis must be 0, 1 or 2, got 3"),
    (empty_arange, "arange(8, 8)", r"arange\(8, 8\) \(0,\) must have dimensions of at least 1"),
])
def test_mistakes_point_at_the_line(kernel, text, message):
    args = [np.zeros(16, np.float32)] + ([4] if kernel is runtime_shape else [])
    with pytest.raises(fakv.CompilationError, match=message) as e:
        kernel.ir(*args)
    assert f"{__file__}:{line_of(kernel.fn, text)}:" in str(e.value)


@fakv.jit
def divide(X, a, b):
    fl.store(X, fl.full((4,), 1.0) * (a // b) + (a % b), (0,), (1,))


@fakv.jit
def divide_tiles(X, b):
    fl.store(X, (fl.arange(0, 4) // b).to(fl.float32), (0,), (1,))


def test_integer_division_by_zero_is_reported_on_the_cpu_path():
    x = np.zeros(4, np.float32)
    with pytest.raises(fakv.DataError, match="`divide` divided an integer by zero"):
        divide[(1,)](x, 7, 0)
    with pytest.raises(fakv.DataError, match=r"or INT_MIN by -1"):
        divide[(1,)](x, -2**31, -1)
    with pytest.raises(fakv.DataError, match="`divide_tiles` divided an integer by zero"):
        divide_tiles[(1,)](x, 0)
    divide[(1,)](x, 7, 2)                      # the flag was cleared; the process lives on
    assert (x == 4.0).all()
    divide_tiles[(1,)](x, 2)
    assert x.tolist() == [0.0, 0.0, 1.0, 1.0]
