"""Python's meaning where a kernel hands run-time values to Python itself (session 54's review of the DSL, each
case run on the CPU path): a tuple of values compared with `==` was decided at compile time by the values'
identities, `all()` / `any()` / a plain helper took every value as true, `x if c else y` broadcast two tiles
of different shapes into a third, builtin `min` / `max` were fl.minimum / fl.maximum (NaN-propagating,
`key=` ignored), and a local name read before its assignment read the global of that name. Each is now
Python's answer or a CompilationError at its line; also the errors of `fl.sum(x)` without an axis and of
`.to` on a pointer."""
import inspect

import numpy as np
import pytest

import fakv
import fakv.language as fl

SCALE = 2.0


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


def one(kernel, *args, grid=(1,)):
    y = np.zeros(1, np.float32)
    kernel[grid](y, *args)
    return float(y[0])


def refused(kernel, text, message, *args):
    with pytest.raises(fakv.CompilationError, match=message) as e:
        one(kernel, *args)
    assert e.value.line == line_of(kernel.fn, text), str(e.value)


@fakv.jit
def tuple_equal(Y):
    i = fl.program_id(0)
    j = fl.program_id(1)
    if (i, j) == (0, 0):
        fl.store(Y, fl.full((1,), 1.0), (0,), (1,))


@fakv.jit
def elements_equal(Y):
    i = fl.program_id(0)
    j = fl.program_id(1)
    if i == 0 and j == 0:
        fl.store(Y, fl.full((1,), 1.0), (0,), (1,))


def test_a_tuple_of_values_is_not_compared_at_compile_time():
    refused(tuple_equal, "(i, j) == (0, 0)", r"a tuple holding run-time values is not compared")
    assert one(elements_equal, grid=(2, 2)) == 1.0


@fakv.jit
def all_in_range(Y, i, n):
    r = 0.0
    if all((i >= 0, i < n)):
        r = 1.0
    fl.store(Y, fl.full((1,), r), (0,), (1,))


def pick(t):
    return t[1] if t[0] else t[2]


@fakv.jit
def helper_tests(Y, flag, a, b):
    fl.store(Y, fl.full((1,), pick((flag, a, b))), (0,), (1,))


def test_python_code_given_values_is_refused():
    refused(all_in_range, "all((i", r"`all` is not a fakv function", 7, 4)
    refused(helper_tests, "pick((flag", r"`pick` is not a fakv function", 0, 1.0, 2.0)
    assert fakv.ir.Value("%x", fakv.ir.ScalarType("i32")) is not None
    with pytest.raises(fakv.ir.FakvTypeError, match="no truth value at compile time"):
        bool(fakv.ir.Value("%x", fakv.ir.ScalarType("i32")))


@fakv.jit
def pick_tiles(Y, n):
    a = fl.arange(0, 4)[:, None].to(fl.float32)
    b = fl.arange(0, 4)[None, :].to(fl.float32) * 10.0
    z = a if n > 0 else b
    fl.store(Y, fl.full((1,), fl.sum(fl.sum(z, 0), 0)), (0,), (1,))


@fakv.jit
def pick_tile_or_number(Y, n):
    a = fl.arange(0, 4).to(fl.float32)
    z = a if n > 0 else 2.0
    fl.store(Y, fl.full((1,), fl.sum(z, 0)), (0,), (1,))


def test_a_runtime_condition_picks_between_tiles_of_one_shape():
    refused(pick_tiles, "z = a if n > 0 else b", r"tiles of shapes \[4, 1\] and \[1, 4\]", 1)
    assert one(pick_tile_or_number, 1) == 6.0          # a number is the tile of its value
    assert one(pick_tile_or_number, 0) == 8.0


@fakv.jit
def builtin_min(Y, a, b):
    fl.store(Y, fl.full((1,), min(a, b)), (0,), (1,))


@fakv.jit
def builtin_max3(Y, a, b, c):
    fl.store(Y, fl.full((1,), max(a, b, c)), (0,), (1,))


@fakv.jit
def builtin_max_key(Y, a, b):
    fl.store(Y, fl.full((1,), max(a, b, key=abs)), (0,), (1,))


@fakv.jit
def min_of_tiles(Y, X):
    x = fl.load(X, (4,), (0,), (1,))
    y = fl.load(X, (4,), (4,), (1,))
    fl.store(Y, min(x, y), (0,), (1,))


def test_builtin_min_and_max_are_pythons():
    nan = float("nan")
    for a, b in ((1.0, nan), (nan, 1.0), (3.0, -2.0), (-0.0, 0.0)):
        got, want = one(builtin_min, a, b), min(a, b)
        assert got == want or (np.isnan(got) and np.isnan(want)), (a, b, got, want)
    for a, b, c in ((1.0, 5.0, 3.0), (1.0, nan, 3.0), (nan, 1.0, 3.0), (2.0, 2.0, 1.0)):
        got, want = one(builtin_max3, a, b, c), max(a, b, c)
        assert got == want or (np.isnan(got) and np.isnan(want)), (a, b, c, got, want)
    refused(builtin_max_key, "key=abs", r"max\(\) of kernel values: use the fl\.\* functions", -5.0, 3.0)
    x = np.array([1, np.nan, 5, -1, np.nan, 2, 3, 0], np.float32)
    y = np.zeros(4, np.float32)
    min_of_tiles[(1,)](y, x)
    want = [min(float(p), float(q)) for p, q in zip(x[:4], x[4:])]       # elementwise, as Python's per pair
    assert np.array_equal(y, np.array(want, np.float32), equal_nan=True), (y, want)


@fakv.jit
def shadowed_global(Y, n):
    r = fl.full((1,), SCALE)
    SCALE = 3.0  # noqa: F841  (Python: UnboundLocalError on the line above)
    fl.store(Y, r, (0,), (1,))


def test_a_local_read_before_its_assignment_is_not_the_global():
    refused(shadowed_global, "fl.full((1,), SCALE)", r"`SCALE` is read before it is assigned", 1)


@fakv.jit
def sum_without_axis(Y, X):
    x = fl.load(X, (4,), (0,), (1,))
    fl.store(Y, fl.full((1,), fl.sum(x)), (0,), (1,))


@fakv.jit
def pointer_to_int(Y, X):
    fl.store(Y, fl.full((1,), X.to(fl.int32)), (0,), (1,))


def test_clear_errors_for_a_reduction_without_axis_and_a_pointer_converted():
    x = np.arange(4, dtype=np.float32)
    refused(sum_without_axis, "fl.sum(x)", r"sum\(x, axis\): the axis to reduce is required", x)
    refused(pointer_to_int, "X.to(fl.int32)", r"`\.to` converts numbers and tiles; a pointer", x)


TABLE = np.arange(8, dtype=np.float32)


@fakv.jit
def global_array_at_run_time(Y, i):
    fl.store(Y, fl.full((1,), TABLE[i]), (0,), (1,))


@fakv.jit
def global_array_at_a_constant(Y, i):
    fl.store(Y, fl.full((1,), TABLE[3]), (0,), (1,))


def test_a_compile_time_array_indexed_at_run_time_says_so():
    """A global numpy array indexed by a kernel argument (session 55's review: numpy's own 'only integers,
    slices ...' surfaced); indexed by a constant it is a compile-time value."""
    refused(global_array_at_run_time, "TABLE[i]", r"compile-time ndarray .* indexed by a run-time value: pass it "
            r"to the kernel as a tensor", 2)
    assert one(global_array_at_a_constant, 2) == 3.0
