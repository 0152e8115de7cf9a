"""What a kernel's key sees of its surroundings (docs/frontend.md, "Specialisation and the cache"), found by
session 33's review: globals changed after a launch, closure variables, numpy scalars as constexprs."""
import numpy as np

import fakv
import fakv.language as fl
SCALE = 2.0
TABLE = {"k": 2.0}


@fakv.jit
def _scaled(Y, BLOCK: fl.constexpr):
    fl.store(Y, fl.full((BLOCK,), SCALE * TABLE["k"]), (0,), (1,))


def test_a_changed_global_is_seen_by_the_next_launch():
    """In one process: a global (and a dict's entry) the kernel names, changed after the first launch, gives
    the next launch the new value (before, the first specialisation's value stayed, and a new one was stored
    on disk under the old key)."""
    global SCALE
    y = np.zeros(8, np.float32)
    key = _scaled.source_key()
    _scaled[(1,)](y, BLOCK=8)
    assert (y == 4.0).all()
    TABLE["k"] = 5.0                      # (a dict changed in place)
    try:
        _scaled[(1,)](y, BLOCK=8)
        assert (y == 10.0).all()
        SCALE = 3.0
        _scaled[(1,)](y, BLOCK=8)
        assert (y == 15.0).all()
        assert _scaled.source_key() != key
    finally:
        SCALE, TABLE["k"] = 2.0, 2.0
    _scaled[(1,)](y, BLOCK=8)
    assert (y == 4.0).all() and _scaled.source_key() == key


K = 5.0


def _closure_kernel(k):
    @fakv.jit
    def scaled(Y):
        fl.store(Y, fl.full((4,), K * 0.0 + k), (0,), (1,))
    return scaled


def test_closure_variables_before_globals():
    """A closure's variable, not a global of another name or the same: each kernel its own value and key."""
    a, b = _closure_kernel(2.0), _closure_kernel(3.0)
    y = np.zeros(4, np.float32)
    a[(1,)](y)
    assert (y == 2.0).all()
    b[(1,)](y)
    assert (y == 3.0).all()
    assert a.source_key() != b.source_key()


@fakv.jit
def _wrapped(Y, N: fl.constexpr):
    fl.store(Y, fl.full((1,), (N * 1000000000) // 7, fl.int32), (0,), (1,))


def test_numpy_scalar_constexprs_are_python_numbers():
    """np.int32(3) as a constexpr computes as 3 (numpy's int32 wrapped at compile time) and shares 3's
    specialisation."""
    y = np.zeros(1, np.int32)
    _wrapped[(1,)](y, N=np.int32(3))
    assert y[0] == 3 * 1000000000 // 7
    assert _wrapped.specialize_for((y,), {"N": np.int32(3)}) is _wrapped.specialize_for((y,), {"N": 3})


A_VAL, B_VAL = 2.0, 3.0


def _get_a():
    return A_VAL


def _get_b():
    return B_VAL


@fakv.jit
def _calls(Y, GET: fl.constexpr):
    fl.store(Y, fl.full((1,), GET()), (0,), (1,))


def test_functions_passed_as_constexprs_are_told_apart():
    """Two plain functions of the same code naming other globals, or two closures: each its own kernel (one
    key for code alone gave both the first one's value)."""
    y = np.zeros(1, np.float32)
    for get, want in ((_get_a, 2.0), (_get_b, 3.0), (_closure_value(5.0), 5.0), (_closure_value(7.0), 7.0)):
        _calls[(1,)](y, GET=get)
        assert y[0] == want


def _closure_value(v):
    return lambda: v


CALLEE_SCALE = 2.0


@fakv.jit
def _callee(x):
    return x * CALLEE_SCALE


@fakv.jit
def _caller(Y):
    fl.store(Y, _callee(fl.full((1,), 1.0)), (0,), (1,))


def test_a_callees_global_changed_is_seen_too():
    global CALLEE_SCALE
    y = np.zeros(1, np.float32)
    _caller[(1,)](y)
    assert y[0] == 2.0
    CALLEE_SCALE = 5.0
    try:
        _caller[(1,)](y)
        assert y[0] == 5.0
    finally:
        CALLEE_SCALE = 2.0


PAIR = (np.zeros(2), 1.0)


@fakv.jit
def _pair(Y):
    fl.store(Y, fl.full((1,), PAIR[1]), (0,), (1,))


def test_a_global_that_does_not_compare_plainly():
    """A tuple holding an array, rebound: the comparison raised from the launch; now it counts as changed."""
    global PAIR
    y = np.zeros(1, np.float32)
    _pair[(1,)](y)
    PAIR = (np.zeros(2), 3.0)
    try:
        _pair[(1,)](y)
        assert y[0] == 3.0
    finally:
        PAIR = (np.zeros(2), 1.0)
