"""`return` in the DSL (issue 10): an early return under a runtime `if`
skips the rest of its function, in kernels and in inlined helpers, run on
the CPU path; what cannot be lowered (a value returned from a runtime
branch, a return in a loop under a runtime condition) is a CompilationError
at the `return`'s line, never dropped code. Also: pointer arithmetic with a
float is a type error; f(*tuple), fl.where, fl.minimum and fl.maximum of two
Python numbers."""
import inspect

import numpy as np
import pytest

import fakv
import fakv.language as fl


def line_of(fn, text):
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


@fakv.jit
def early_exit(Y, flag):
    if flag > 0:
        return
    fl.store(Y, fl.full((4,), 7.0), (0,), (1,))


def test_early_return_in_a_runtime_if():
    for flag, want in ((0, 7.0), (1, -1.0)):
        y = np.full(4, -1.0, np.float32)
        early_exit[(1,)](y, flag)
        assert (y == want).all(), (flag, y)
    assert "fakv.store" in early_exit.ir(np.zeros(4, np.float32), 0)


@fakv.jit
def two_exits(Y, a, b):
    fl.store(Y, fl.full((1,), 1.0), (0,), (1,))
    if a > 0:
        fl.store(Y, fl.full((1,), 2.0), (1,), (1,))
        if b > 0:
            return
        fl.store(Y, fl.full((1,), 3.0), (2,), (1,))
    else:
        fl.store(Y, fl.full((1,), 4.0), (1,), (1,))
        return
    fl.store(Y, fl.full((1,), 5.0), (3,), (1,))


def test_nested_returns_follow_python():
    def python(a, b):
        y = [0.0] * 4
        y[0] = 1.0
        if a > 0:
            y[1] = 2.0
            if b > 0:
                return y
            y[2] = 3.0
        else:
            y[1] = 4.0
            return y
        y[3] = 5.0
        return y
    for a in (0, 1):
        for b in (0, 1):
            y = np.zeros(4, np.float32)
            two_exits[(1,)](y, a, b)
            assert y.tolist() == python(a, b), (a, b, y)


@fakv.jit
def store_unless(Y, i, skip):
    if skip == i:
        return
    fl.store(Y, fl.full((1,), 1.0), (i,), (1,))


@fakv.jit
def helper_exits(Y, skip):
    for i in fl.static_range(4):
        store_unless(Y, i, skip)                  # its return ends the helper, not the loop
    fl.store(Y, fl.full((1,), 9.0), (4,), (1,))


def test_early_return_in_a_helper_returns_to_the_caller():
    y = np.zeros(5, np.float32)
    helper_exits[(1,)](y, 2)
    assert y.tolist() == [1.0, 1.0, 0.0, 1.0, 9.0]


@fakv.jit
def compile_time_exit(Y, FLAG: fl.constexpr):
    if FLAG:
        return
    fl.store(Y, fl.full((4,), 7.0), (0,), (1,))


def test_return_under_a_compile_time_if():
    y = np.zeros(4, np.float32)
    compile_time_exit[(1,)](y, FLAG=True)
    assert (y == 0).all()
    compile_time_exit[(1,)](y, FLAG=False)
    assert (y == 7).all()


@fakv.jit
def pick(a):
    if a > 0:
        return fl.full((4,), 1.0)
    return fl.full((4,), 2.0)


def test_value_returned_from_a_runtime_branch_is_an_error():
    @fakv.jit
    def bad(Y, a):
        fl.store(Y, pick(a), (0,), (1,))
    with pytest.raises(fakv.CompilationError, match="returns a value from inside a runtime `if`") as e:
        bad.ir(np.zeros(4, np.float32), 1)
    assert f"{__file__}:{line_of(pick.fn, 'return fl.full((4,), 1.0)')}:" in str(e.value)


def test_return_in_a_loop_under_a_runtime_condition_is_an_error():
    @fakv.jit
    def bad(Y, n):
        for i in fl.range(0, n):
            if i > 2:
                return
            fl.store(Y, fl.full((1,), 1.0), (i,), (1,))
    with pytest.raises(fakv.CompilationError, match="`return` inside a loop") as e:
        bad.ir(np.zeros(8, np.float32), 4)
    assert f"{__file__}:{line_of(bad.fn, 'return')}:" in str(e.value)

    @fakv.jit
    def bad_static(Y, n):
        for i in fl.static_range(4):
            if n > i:
                return
            fl.store(Y, fl.full((1,), 1.0), (i,), (1,))
    with pytest.raises(fakv.CompilationError, match="`return` inside a loop"):
        bad_static.ir(np.zeros(8, np.float32), 4)


def test_pointer_plus_float_is_a_type_error():
    @fakv.jit
    def bad(X):
        fl.store(X + 1.5, fl.full((4,), 1.0), (0,), (1,))
    with pytest.raises(fakv.CompilationError, match="pointer") as e:
        bad.ir(np.zeros(8, np.float32))
    assert f"{__file__}:{line_of(bad.fn, 'X + 1.5')}:" in str(e.value)


@fakv.jit
def scaled_sum(x, y, scale, offset):
    return (x + y) * scale + offset


@fakv.jit
def starred_call(Y, a, n):
    args = (a, 2.0)
    picks = fl.where(fl.arange(0, 4) < n, 1, 0)          # two Python numbers: int32
    step = fl.where(a > 0.0, 1, 0)                        # a scalar condition too
    fl.store(Y, scaled_sum(fl.full((4,), 1.0), *args, picks.to(fl.float32) + step), (0,), (1,))


def test_starred_arguments_and_where_of_two_numbers():
    """f(*t) passes a tuple's values as arguments (decode.py passes its score
    modifiers so); fl.where of a condition and two Python numbers is an
    int32 value."""
    y = np.zeros(4, np.float32)
    starred_call[(1,)](y, 3.0, 2)
    assert y.tolist() == [(1 + 3) * 2 + 1 + 1] * 2 + [(1 + 3) * 2 + 1] * 2


@fakv.jit
def starred_int(Y, a):
    fl.store(Y, fl.full((4,), 1.0) * scaled_sum(*a), (0,), (1,))


def test_starred_argument_must_be_a_tuple():
    with pytest.raises(fakv.CompilationError, match="only a tuple can be passed as"):
        starred_int[(1,)](np.zeros(4, np.float32), 3)


@fakv.jit
def big_choice(Y, n):
    fl.store(Y, fl.zeros((4,), fl.int64) + fl.where(n > 0, 5000000000, 0), (0,), (1,))


def test_where_of_two_numbers_takes_their_type():
    y = np.zeros(4, np.int64)
    big_choice[(1,)](y, 1)
    assert (y == 5000000000).all()


@fakv.jit
def folded_bounds(Y, n, ROWS: fl.constexpr):
    rows = fl.minimum(ROWS, 3) + fl.maximum(ROWS, 3)     # two Python numbers: folded (rotated_rows with one row)
    fl.store(Y, fl.full((4,), 1.0) * rows + fl.minimum(n, 2), (0,), (1,))


def test_minimum_and_maximum_of_two_numbers_fold():
    y = np.zeros(4, np.float32)
    folded_bounds[(1,)](y, 5, ROWS=1)
    assert (y == 1 + 3 + 2).all()


def _exits_kernel(tmp_path, monkeypatch, k):
    """A kernel of k `if`s one after another, each holding a nested early `return` (session 36's review:
    each copies what follows it into both of its branches, 2^k copies)."""
    lines = ["import fakv", "import fakv.language as fl", "", "", "@fakv.jit", "def k(Y, a, b):", "    s = 0"]
    for i in range(k):
        lines += [f"    if a > {i}:", f"        if b > {i}:", "            return", "        s = s + 1"]
    lines += ["    fl.store(Y, fl.zeros((1,), fl.int32) + s, (0,), (1,))"]
    (tmp_path / f"exits{k}.py").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return __import__(f"exits{k}").k


def _exits_python(k, a, b):
    s = 0
    for i in range(k):
        if a > i:
            if b > i:
                return None
            s += 1
    return s


def test_early_exits_one_after_another_are_bounded(tmp_path, monkeypatch):
    kernel = _exits_kernel(tmp_path, monkeypatch, 4)
    for a, b in ((0, 0), (3, 0), (9, 2), (9, 9)):
        y = np.full(1, -1, np.int32)
        kernel[(1,)](y, a, b)
        want = _exits_python(4, a, b)
        assert y[0] == (-1 if want is None else want), (a, b)
    with pytest.raises(fakv.CompilationError, match=r"exits11.py:\d+: more than 10 `if`s that may return, one "
                                                    r"after another"):
        _exits_kernel(tmp_path, monkeypatch, 11)[(1,)](np.zeros(1, np.int32), 1, 1)   # (it grew as 2^k)
