"""Mistakes in a kernel's source are CompilationErrors at the kernel's line
(issue 10): tile shapes that are not compile-time, not positive or too big,
a grid axis out of range; an integer division by zero on the CPU path is a
fakv.DataError, not a SIGFPE that kills the process."""
import inspect
import os
import subprocess
import sys

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


@fakv.jit
def divide_unused(X, a, b):
    q = a // b                                  # never used
    t = fl.arange(0, 4) % b                     # never used
    fl.store(X, fl.full((4,), 1.0) * ((a // b) * 0 + a), (0,), (1,))


def test_a_division_by_zero_is_reported_when_its_result_is_not_used():
    """Python raises on `a // 0` whatever becomes of the quotient; the CPU path checks every division before
    anything folds one away (an unused quotient, `(a // b) * 0`)."""
    x = np.zeros(4, np.float32)
    with pytest.raises(fakv.DataError, match="`divide_unused` divided an integer by zero"):
        divide_unused[(1,)](x, 7, 0)
    divide_unused[(1,)](x, 7, 3)
    assert (x == 7.0).all()


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


@fakv.jit
def unmasked_add(X, Y, BLOCK: fl.constexpr):
    i = fl.program_id(0) * BLOCK
    fl.store(Y, fl.load(X, (BLOCK,), (i,), (1,)) + 1.0, (i,), (1,))      # no bounds=: past the arrays' ends


@fakv.jit
def scalar_past_the_end(X, Y, n):
    fl.store(Y, fl.full((1,), 1.0) * fl.load_scalar(X, n), (0,), (1,))


def test_accesses_outside_the_arrays_are_reported_on_the_cpu_path():
    """A load or store outside the arrays a kernel was given (here: no bounds= on the last block) is a
    DataError, not a corrupted process: the store is dropped (the memory around the array keeps its bytes),
    the load gives 0; what lies inside is done. An array's extent is what its elements span: a strided,
    reversed or offset view of a bigger buffer may be read and written where it spans, not past it; a read-only
    array may be read, not written."""
    base = np.full(1100, 7.0, np.float32)
    x, y = np.arange(1000, dtype=np.float32), base[50:1050]           # y: a view with 50 floats each side
    with pytest.raises(fakv.DataError, match="`unmasked_add` read or wrote outside the arrays it was given"):
        unmasked_add[(8,)](x, y, BLOCK=128)                              # 1024 elements of 1000
    assert np.array_equal(y, x + 1.0)                                  # inside: done
    assert (base[:50] == 7.0).all() and (base[1050:] == 7.0).all()     # outside: untouched
    unmasked_add[(2,)](x, y, BLOCK=500)                                # the flag was cleared; in bounds: fine
    out = np.zeros(1, np.float32)
    with pytest.raises(fakv.DataError, match="`scalar_past_the_end` read or wrote outside"):
        scalar_past_the_end[(1,)](x, out, 1000)
    assert out[0] == 0.0                                               # the load gave 0
    scalar_past_the_end[(1,)](x[::-1], out, 0)                         # a reversed view: its first element
    assert out[0] == 999.0
    scalar_past_the_end[(1,)](x[::-1], out, -999)                      # (its elements lie below it)
    assert out[0] == 0.0
    with pytest.raises(fakv.DataError, match="read or wrote outside"):
        scalar_past_the_end[(1,)](x[::-1], out, 1)
    frozen = np.zeros(1000, np.float32)
    frozen.flags.writeable = False                                     # (a read-only memory map, a broadcast)
    with pytest.raises(fakv.DataError, match="read or wrote outside"):
        unmasked_add[(2,)](x, frozen, BLOCK=500)                       # stores into a read-only array: refused
    assert not frozen.any()
    unmasked_add[(2,)](frozen, y, BLOCK=500)                           # reads from one: fine
    assert (y == 1.0).all()
    wide = np.zeros((4, 8), np.float32)[:, :2]                         # rows of 2 of 8: spans 3 * 8 + 2
    unmasked_add[(1,)](np.zeros(26, np.float32), wide, BLOCK=26)       # (written as if contiguous: inside)
    with pytest.raises(fakv.DataError, match="read or wrote outside"):
        unmasked_add[(1,)](np.zeros(27, np.float32), wide, BLOCK=27)


@fakv.jit
def float_offset(X, off):
    fl.store(X, fl.full((4,), 1.0), (off,), (1,))


@fakv.jit
def float_stride(X):
    fl.store(X, fl.full((4,), 1.0), (0,), (1.5,))


@fakv.jit
def runtime_range(X, n):
    for j in range(0, n, 4):
        fl.store(X, fl.full((4,), 1.0), (j,), (1,))


@fakv.jit
def dot_of_vectors(X, Y):
    a = fl.load(X, (16,), (0,), (1,))
    fl.store(Y, fl.dot(a, a), (0,), (1,))


@fakv.jit
def contraction_mismatch(X, Y):
    a = fl.load(X, (16, 32), (0, 0), (32, 1))
    fl.store(Y, fl.dot(a, a), (0, 0), (16, 1))


def test_more_mistakes_point_at_the_line():
    """A float offset or stride (truncated silently before), Python's range over run-time bounds (the message
    named static_range), fl.dot of 1-D tiles (an IndexError); a verifier's error (a dot's K mismatch) is shown
    with the kernel's source line under it."""
    x, h = np.zeros(64, np.float32), np.zeros(512, np.float16)
    for kernel, args, text, message in [
            (float_offset, (x, 2.7), "(off,)", r"an i32 operand \(an offset, index or length\) got a float "
                                               r"\(an f32 value\); convert it with .to\(fl.int32\)"),
            (float_stride, (x,), "(1.5,)", r"an i64 operand \(a stride\) got a float \(1.5\)"),
            (runtime_range, (x, 8), "range(0, n, 4)", "`range` is unrolled when the kernel compiles and needs "
                                                      r"compile-time bounds; loop over run-time bounds with fl.range"),
            (dot_of_vectors, (h, x), "fl.dot(a, a)", r"fl.dot takes 2-D tiles, \(M, K\) and \(K, N\)"),
            (contraction_mismatch, (h, x), "fl.dot(a, a)", "contraction sizes differ: a gives K = 32, b gives K = 16")]:
        with pytest.raises(fakv.CompilationError, match=message) as e:
            kernel[(1,)](*args)
        assert f"{__file__}:{line_of(kernel.fn, text)}:" in str(e.value)
        if kernel is contraction_mismatch:                  # the source line under the diagnostic
            assert "\n        fl.store(Y, fl.dot(a, a), (0, 0), (16, 1))\n" in str(e.value)


@fakv.jit
def absolute(X, Y, I, J, n, BLOCK: fl.constexpr):
    x = fl.load(X, (BLOCK,), (0,), (1,))
    i = fl.load(I, (BLOCK,), (0,), (1,))
    fl.store(Y, abs(x) + fl.abs(n - 20), (0,), (1,))
    fl.store(J, fl.abs(i) + abs(n - 20) + abs(-3), (0,), (1,))


def test_abs_of_kernel_values():
    """abs() and fl.abs of float and integer tiles and scalars, in their own type (abs() of a kernel value was an
    error naming no function that works)."""
    x = np.linspace(-3, 3, 16).astype(np.float32)
    i = np.arange(-8, 8, dtype=np.int32)
    y, j = np.zeros(16, np.float32), np.zeros(16, np.int32)
    absolute[(1,)](x, y, i, j, 5, BLOCK=16)
    assert np.array_equal(y, np.abs(x) + 15)
    assert np.array_equal(j, np.abs(i) + 18)


# ---- a review of the front end's sources and messages (session 45): each failed before its fix ----

@fakv.jit
def returns_a_value(X):
    x = fl.full((4,), 1.0)
    fl.store(X, x, (0,), (1,))
    return x  # the return


@fakv.jit
def carried_changes_type(Y, X, n):
    x = fl.load(X, (4,), (0,), (1,))
    acc = 0.0
    for i in fl.range(0, n):
        acc = acc + x  # made a tile here
        acc = acc * 2.0
        if n > 100:
            acc = acc - 1.0
    fl.store(Y, fl.full((4,), 1.0), (0,), (1,))


@pytest.mark.parametrize("kernel,text,message", [
    (returns_a_value, "# the return", "a kernel returns nothing"),                        # (named the def)
    (carried_changes_type, "# made a tile", "loop-carried `acc` changes type from f32"),  # (named the last)
])
def test_the_line_named_is_the_mistakes(kernel, text, message):
    args = [np.zeros(4, np.float32)] * (2 if kernel is carried_changes_type else 1) + \
        ([3] if kernel is carried_changes_type else [])
    with pytest.raises(fakv.CompilationError, match=message) as e:
        kernel.ir(*args)
    assert f"{__file__}:{line_of(kernel.fn, text)}:" in str(e.value)


def test_odd_sources_are_compiled_or_refused_by_name(tmp_path):
    """A lambda (an AttributeError), a kernel named outside ASCII (an MLIR parse error at `-:2:14`), positional-
    only parameters (never bound: a global of the name was read instead), a kernel in a folder whose name holds
    a quote (a parse error) and a nested kernel with a line left of its def (a bare IndentationError)."""
    lam = fakv.jit(lambda Y: None)
    with pytest.raises(fakv.CompilationError, match="defined by `def`, not a lambda"):
        lam[(1,)](np.zeros(4, np.float32))

    def named():
        @fakv.jit
        def κ(Y):
            fl.store(Y, fl.zeros((4,)), (0,), (1,))
        return κ
    with pytest.raises(fakv.CompilationError, match="a kernel's name is ASCII .*'κ'"):
        named()[(1,)](np.zeros(4, np.float32))

    with pytest.raises(TypeError, match="positional-only"):
        @fakv.jit
        def posonly(N: fl.constexpr, /, Y):
            fl.store(Y, fl.full((4,), N * 1.0), (0,), (1,))

    def nested():
        @fakv.jit
        def k(Y, N: fl.constexpr):
            """doc
at column 0"""
            fl.store(Y, fl.full((N,), 2.0), (0,), (1,))  # nested store
        return k
    y = np.zeros(4, np.float32)
    nested()[(1,)](y, 4)
    assert (y == 2).all()
    with pytest.raises(fakv.CompilationError, match="dimensions of at least 1") as e:
        nested()[(1,)](y, -4)     # (an error inside it names the file's line)
    assert f"{__file__}:{line_of(nested, '# nested store')}:" in str(e.value)

    folder = tmp_path / 'a"b\\c'
    folder.mkdir()
    (folder / "quoted.py").write_text("import fakv, fakv.language as fl\n\n@fakv.jit\ndef k(Y, n):\n"
                                      "    fl.store(Y, fl.full((4,), n * 1.0), (0,), (1,))\n")
    script = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import quoted\n"
              "y = np.zeros(4, np.float32); quoted.k[(1,)](y, 3); print(y[0])\n")
    out = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(fakv.__file__))))
    assert out.returncode == 0 and out.stdout.split() == ["3.0"], out.stderr


# ---- the CPU path's memory guard, after a review (session 45): each failed before its fix ----

@fakv.jit
def store_strided(X, s):
    fl.store(X, fl.full((2,), 1.0), (0,), (s,))


_WRAP = """
import numpy as np, fakv, sys
sys.path.insert(0, sys.argv[1])
from test_dsl_errors import store_strided
x = np.zeros(4, np.float32)
try:
    store_strided[(1,)](x, (2**64 - 4 - x.ctypes.data) // 4)   # element 1 at the top of the address space
except fakv.DataError as e:
    print("DataError", x.tolist())
"""


def test_an_access_at_the_top_of_the_address_space_is_outside():
    """An access whose last byte wrapped past 2^64 had an end of 0, inside every array's end: done (a
    segfault)."""
    out = subprocess.run([sys.executable, "-c", _WRAP, os.path.dirname(__file__)], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, PYTHONPATH=os.pathsep.join(
                             [os.path.dirname(os.path.dirname(fakv.__file__)), os.path.dirname(__file__)])))
    assert out.returncode == 0 and out.stdout.split() == ["DataError", "[1.0,", "0.0,", "0.0,", "0.0]"], \
        (out.returncode, out.stdout, out.stderr)


def test_a_launch_of_many_arrays_is_checked(tmp_path):
    """Past 64 arrays the launcher's table held none, and nothing was checked: a store past the first array
    went into the memory after it."""
    names = ", ".join(f"A{i}" for i in range(100))
    (tmp_path / "many.py").write_text(f"import fakv, fakv.language as fl\n\n@fakv.jit\ndef many({names}, n):\n"
                                      f"    fl.store(A0, fl.full((4,), 5.0), (n,), (1,))\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import many
    finally:
        sys.path.remove(str(tmp_path))
    base = np.zeros(16, np.float32)
    arrays = [base[:4]] + [np.zeros(1, np.float32) for _ in range(99)]
    with pytest.raises(fakv.DataError, match="outside the arrays"):
        many.many[(1,)](*arrays, 8)
    assert not base.any()
    many.many[(1,)](*arrays, 0)
    assert (base[:4] == 5).all() and not base[4:].any()


@fakv.jit
def paged_rows(Cache, Table, Y, row, valid, leftpad):
    t = fl.paged_load(Cache, 0, row, 4, 2, valid, 4, 3, (8, 2, 2), table=Table, leftpad=leftpad)
    fl.store(Y, t, (0, 0), (2, 1))


def test_paged_rows_past_int32_are_past_the_sequence():
    """Rows row + i past 2^31 - 1 wrapped negative, below `valid`, and their positions back into the cache:
    the sequence's first keys where zeros belong."""
    cache = np.zeros((3, 4, 1, 2), np.float32)
    cache[2, :, 0, :] = np.arange(1, 5)[:, None]
    y = np.full((4, 2), -1.0, np.float32)
    paged_rows[(1,)](cache, np.array([2, 2, 2, 2], np.int32), y, 2**31 - 1, 8, 2**31 - 1)
    assert not y.any()
    paged_rows[(1,)](cache, np.array([2, 2, 2, 2], np.int32), y, 1, 8, 0)    # (and rows in range are read)
    assert y[:, 0].tolist() == [2, 3, 4, 1]          # (row 4: the next page, page 2 again)


@fakv.jit
def tiny_cap(Y, CAP: fl.constexpr):
    fl.store(Y, fl.softcap(fl.zeros((2, 2)), CAP), (0, 0), (2, 1))


def test_a_cap_whose_reciprocal_f32_cannot_hold_is_refused():
    """softcap multiplies by 1 / cap: a cap below 2.94e-39 made a 0 score NaN (the API refused it already)."""
    with pytest.raises(fakv.CompilationError, match=r"softcap's cap must be in \[2.94e-39, 3.4e38\]"):
        tiny_cap[(1,)](np.zeros((2, 2), np.float32), CAP=1e-39)
    # (1 / FLT_MAX in double rounds to the f32 2^-128, whose f32 reciprocal is inf: the verifier's refusal came
    # through as an MLIR op error; the DSL checks the f32 it passes, session 56)
    with pytest.raises(fakv.CompilationError, match=r"softcap's cap must be in \[2.94e-39, 3.4e38\]"):
        tiny_cap[(1,)](np.zeros((2, 2), np.float32), CAP=1 / 3.4028234663852886e38)
    y = np.ones((2, 2), np.float32)
    tiny_cap[(1,)](y, CAP=3e-39)
    assert not y.any()


@fakv.jit
def mismatched_operands(Y, WHICH: fl.constexpr):
    s = fl.zeros((4, 8))
    m = fl.zeros((4,))
    if WHICH == 0:
        a, b, c, d = fl.online_softmax(s, m, fl.zeros((8,)))  # the op
    elif WHICH == 1:
        a = fl.softcap(s, fl.zeros((4, 8)))  # the op
    elif WHICH == 2:
        a = fl.rotary(s, fl.zeros((4, 4)), fl.zeros((4, 2)))  # the op
    else:
        a, b, c, d = fl.online_softmax(s, m, m, scale=s)  # the op
    fl.store(Y, fl.zeros((4, 8)), (0, 0), (8, 1))


@pytest.mark.parametrize("which,message", [
    (0, r"online_softmax's row_sum must be a tile like row_max \(tile\[4\]:f32\), got tile\[8\]:f32"),
    (1, r"softcap's cap is a scalar, got a tile"),
    (2, r"rotary's sin must be a tile like cos \(tile\[4, 4\]:f32\), got tile\[4, 2\]:f32"),
    (3, r"online_softmax's scale is a scalar, got a tile"),
])
def test_operands_of_another_shape_are_named_at_their_line(which, message):
    """These reached MLIR's parser (`-:29:59: use of value '%v26' expects different type`, no kernel line)."""
    with pytest.raises(fakv.CompilationError, match=message) as e:
        mismatched_operands[(1,)](np.zeros((4, 8), np.float32), WHICH=which)
    assert f"{__file__}:" in str(e.value) and "# the op" in str(e.value)


@fakv.jit
def range_with_keyword(Y, n):
    c = 0
    for i in fl.range(0, n, step=2):  # the keyword
        c += 1
    fl.store(Y, fl.full((1,), c, fl.int32), (0,), (1,))


@fakv.jit
def static_range_with_keyword(Y):
    c = 0
    for i in fl.static_range(10, num_stages=3):  # the keyword
        c += 1
    fl.store(Y, fl.full((1,), c, fl.int32), (0,), (1,))


@fakv.jit
def none_then_one_branch(Y, n):
    r = None
    if n > 0:
        r = 1
    if r is None:  # the use
        fl.store(Y, fl.full((1,), 9, fl.int32), (0,), (1,))


@fakv.jit
def none_then_kernel_value(Y, n):
    r = None
    if n > 0:
        r = n + 1
    if r is not None:  # the use
        fl.store(Y, fl.full((1,), 9, fl.int32), (0,), (1,))


@fakv.jit
def none_then_kernel_value_unused(Y, n):
    r = None
    if n > 0:
        r = fl.load(Y, (1,), (0,), (1,))
    fl.store(Y, fl.full((1,), 9, fl.int32), (0,), (1,))


def test_none_beside_a_kernel_value_is_no_value_after_the_if():
    """A name None before an `if` and a kernel value in one branch has no value after it: unused, the kernel
    compiles (it failed in session 46's first fix: None was merged as a number); used, the error says why."""
    y = np.zeros(1, np.int32)
    none_then_kernel_value_unused[(1,)](y, 1)
    assert y[0] == 9
    with pytest.raises(fakv.CompilationError, match=r"`r` is a kernel value in one branch of a runtime `if` and "
                                                    r"NoneType in the other") as e:
        none_then_kernel_value[(1,)](y, 1)
    assert f"{__file__}:{line_of(none_then_kernel_value.fn, '# the use')}:" in str(e.value)


def _long_sum(n):
    """A kernel whose one line adds n terms (Python's parser nests them n deep)."""
    import textwrap
    src = textwrap.dedent(f"""
        import fakv, fakv.language as fl
        @fakv.jit
        def long_sum(Y, n):
            fl.store(Y, fl.full((1,), {' + '.join(['n'] * n)}, fl.int32), (0,), (1,))
        """)
    return src


@pytest.mark.parametrize("kernel,message", [
    (range_with_keyword, r"`fl.range` takes its bounds as positional arguments only, got step="),
    (static_range_with_keyword, r"`fl.static_range` takes its bounds as positional arguments only, got num_stages="),
    (none_then_one_branch, r"`r` is a different Python value in each branch of a runtime `if`"),
])
def test_loop_keywords_and_none_before_an_if(kernel, message):
    """fl.range / fl.static_range keywords were dropped (`step=2` stepped by 1: silently wrong); a name that
    was None before an `if` assigned in one branch was said to be assigned in one branch only (None was the
    scope's 'missing')."""
    args = [np.zeros(1, np.int32)] + ([] if kernel is static_range_with_keyword else [10])
    with pytest.raises(fakv.CompilationError, match=message) as e:
        kernel[(1,)](*args)
    text = "# the use" if kernel is none_then_one_branch else "# the keyword"
    assert f"{__file__}:{line_of(kernel.fn, text)}:" in str(e.value)


def test_an_expression_too_deep_is_not_called_recursion(tmp_path):
    """A flat sum of 600 terms (Python's parser nests it 600 deep) is too deep to compile: said so, not 'a
    function calls itself without end'."""
    path = tmp_path / "long_sum.py"
    path.write_text(_long_sum(600))
    done = subprocess.run([sys.executable, "-c", f"import runpy; m = runpy.run_path({str(path)!r}); "
                           "import numpy as np; m['long_sum'][(1,)](np.zeros(1, np.int32), 1)"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert "nested too deeply to compile" in done.stderr, done.stderr[-2000:]


def test_cpu_module_calls_are_checked_against_the_function():
    """CpuModule.call with too few arguments, or a kernel's own function called without its program id and grid,
    read past the packed arguments (a segfault); each is a ValueError naming what the function takes."""
    from fakv import _fakv
    ir = """module {
      func.func @k(%X: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
        %pid = fakv.program_id 0
        %c1 = arith.constant 1 : i64
        %t = fakv.load %X[%pid] strides [%c1] bounds [%n] : !fakv.ptr<f32> -> tensor<4xf32>
        fakv.store %t, %X[%pid] strides [%c1] bounds [%n] : tensor<4xf32>, !fakv.ptr<f32>
        return
      }
    }"""
    x = np.zeros(4, np.float32)
    module = _fakv.CpuModule(ir)
    with pytest.raises(ValueError, match=r"k takes \(ptr, i32, i32, i32, i32, i32, i32, i32\), got \(ptr, i32\): "
                                         r"a kernel's own function also takes its program id and grid"):
        module.call("k", [("ptr", x.ctypes.data), ("i32", 4)])
    with pytest.raises(ValueError, match=r"got \(ptr\)$"):
        module.call("k", [("ptr", x.ctypes.data)])
    with pytest.raises(ValueError, match=r"got \(i64, i32, i32, i32, i32, i32, i32, i32\)"):
        module.call("k", [("i64", x.ctypes.data)] + [("i32", 1)] * 7)
    with pytest.raises(ValueError, match="no function nothing in this module"):
        module.call("nothing", [])


@pytest.mark.parametrize("registers", [5, (40,), (40, 232, 8), ("a", "b")])
def test_registers_are_two_ints(registers):
    """registers=(P, C) of another form was a bare TypeError (or a pybind dump with the IR) at the first GPU
    compile; refused when the kernel is made, as stages and warm_pages are."""
    def k(Y):
        fl.store(Y, fl.zeros((16,)), (0,), (1,))
    with pytest.raises(ValueError, match=r"k: registers is \(producer, consumer\) registers per thread, two ints"):
        fakv.jit(registers=registers)(k)


@fakv.jit
def float_floordiv(X):
    x = fl.load(X, (4,), (0,), (1,))
    fl.store(X, x // 2.0, (0,), (1,))        # the mistake


@fakv.jit
def while_loop(X, n):
    i = 0
    while i < n:                             # the mistake
        i += 1


@fakv.jit
def int_offsets(X):
    fl.store(X, fl.load(X, 4, 0, 1), (0,), (1,))      # the mistake


@fakv.jit
def scalar_store(X):
    fl.store(X, fl.sum(fl.load(X, (4,), (0,), (1,)), 0), (0,), (1,))      # the mistake


@fakv.jit
def float_atomic(C, X):
    fl.atomic_add(C, 0, fl.sum(fl.load(X, (4,), (0,), (1,)), 0))      # the mistake


@fakv.jit
def i8_sum(Y, X):
    fl.store(Y, fl.full((1,), fl.sum(fl.load(X, (4,), (0,), (1,)), 0)), (0,), (1,))      # the mistake


@pytest.mark.parametrize("kernel,message", [
    (float_floordiv, r"`floordiv` is not defined for float values: `/` divides floats"),
    (while_loop, r"`While` statements are not supported in kernels: loop with `for i in fl.range\(...\)`"),
    (int_offsets, r"load/store take offsets as a tuple, one per dimension \(\(x,\) for a 1-D tile\), got 0"),
    (scalar_store, r"the stored value must be a tile, got a scalar of type f32: a tile of it is fl.full"),
    (float_atomic, r"atomic_add's value \(int32: fakv has no float atomics\) got a float"),
    (i8_sum, r"sum reduces float or i32 tiles, got i8 \(`.to\(fl.int32\)` first\)"),
])
def test_mistakes_say_what_to_write(kernel, message):
    """Session 56's review of general kernels: each message names what to write instead (a float `//` said only
    that it is undefined, `while` that it is unsupported, int offsets raised "'int' object is not iterable", a
    stored scalar was named by its IR value, a float atomic value was called "an offset, index or length")."""
    args = {while_loop: [np.zeros(1, np.int32), 3], float_atomic: [np.zeros(1, np.int32), np.zeros(4, np.float32)],
            i8_sum: [np.zeros(1, np.int32), np.zeros(4, np.int8)]}.get(kernel, [np.zeros(4, np.float32)])
    with pytest.raises(fakv.CompilationError, match=message) as e:
        kernel[(1,)](*args)
    assert f"{__file__}:{line_of(kernel.fn, '# the mistake')}:" in str(e.value)


def test_an_unsupported_array_dtype_names_those_taken():
    with pytest.raises(TypeError, match=r"unsupported array dtype uint8 \(taken: float32, .*`.view\(np.int8\)`"):
        float_floordiv[(1,)](np.zeros(4, np.uint8))


OFFSETS = np.array([1])


@fakv.jit
def sequence_offsets(Y, X, O: fl.constexpr):
    fl.store(Y, fl.load(X, (2,), OFFSETS, range(1, 2)), O, (1,))


def test_offsets_of_any_sequence_are_taken():
    """Compile-time sequences other than tuples (a numpy array global, a range, a constexpr array) were taken as
    offsets and strides before the tuple check (session 56's diff review) and still are."""
    y = np.zeros(2, np.float32)
    sequence_offsets[(1,)](y, np.arange(4, dtype=np.float32), O=np.array([0]))
    assert y.tolist() == [1.0, 2.0]
