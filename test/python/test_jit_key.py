"""What a kernel's key sees of its surroundings (docs/frontend.md, "Specialisation and the cache"), found by
session 33's review: globals changed after a launch, closure variables, numpy scalars as constexprs."""
import os
import subprocess
import sys

import numpy as np

import fakv
import fakv.language as fl
from needs import needs_assembler
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


# ---- session 37's review of the JIT's keys ----------------------------------------------------------------

def test_threads_keying_one_kernel_wait_for_each_other(monkeypatch):
    """Two threads launching a kernel first at once: the second waited for nothing and keyed its disk entry
    with the first's placeholder ("computing:NAME": no source, no versions in it), so a later process with
    other source racing the same way loaded the old cubin. Now the second waits for the real key."""
    import threading
    import time
    from fakv import cache

    @fakv.jit
    def raced(Y):
        fl.store(Y, fl.full((1,), 1.0), (0,), (1,))
    real = cache.frontend_version
    monkeypatch.setattr(cache, "frontend_version", lambda: (time.sleep(0.2), real())[1])   # (the window, wider)
    keys = []
    threads = [threading.Thread(target=lambda: keys.append(raced.source_key())) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert len(keys) == 2 and keys[0] == keys[1] and not keys[0].startswith("computing")


SCALE_SEEN = 2.0


@fakv.jit
def _times_scale(x):
    return x * SCALE_SEEN


def _scale_value():
    return SCALE_SEEN


@fakv.jit
def _applies(Y, F: fl.constexpr):
    fl.store(Y, F(fl.full((1,), 1.0)), (0,), (1,))


@fakv.jit
def _multiplies(Y, G: fl.constexpr):
    fl.store(Y, fl.full((1,), 1.0) * G(), (0,), (1,))


def _holding(kernel):
    @fakv.jit
    def holds(Y):
        fl.store(Y, kernel(fl.full((1,), 1.0)), (0,), (1,))
    return holds


def test_a_global_changed_behind_a_constexpr_or_a_closure_is_seen():
    """A kernel or plain function passed as a constexpr (positional arguments: the fast path), a kernel held
    by a closure variable, and specialize_for: each ran the code made for the global's old value."""
    global SCALE_SEEN
    holds = _holding(_times_scale)
    y = np.zeros(1, np.float32)

    def values():
        out = []
        for launch in (lambda: _applies[(1,)](y, F=_times_scale), lambda: _multiplies[(1,)](y, G=_scale_value),
                       lambda: holds[(1,)](y)):
            launch()
            out.append(float(y[0]))
        return out
    assert values() == [2.0, 2.0, 2.0]
    assert values() == [2.0, 2.0, 2.0]                 # (the fast path's entries made)
    ir = _applies.specialize_for((y,), {"F": _times_scale}).ir
    SCALE_SEEN = 3.0
    try:
        assert values() == [3.0, 3.0, 3.0]
        assert _applies.specialize_for((y,), {"F": _times_scale}).ir != ir
    finally:
        SCALE_SEEN = 2.0


@fakv.jit
def _reads(Y, TABLE: fl.constexpr, I: fl.constexpr):
    fl.store(Y, fl.full((1,), TABLE[I]), (0,), (1,))


def test_constexpr_arrays_are_keyed_by_their_contents():
    """numpy's repr elides arrays past 1000 elements and rounds to 8 digits: two tables differing in one
    entry shared a specialisation, and the second launch read the first table's value."""
    a, b = np.zeros(2000), np.zeros(2000)
    b[1000] = 5.0
    c, d = np.array([1.0, 1.0]), np.array([1.0, 1.0 + 1e-9])
    y = np.zeros(1, np.float32)
    for table, i, want in ((a, 1000, 0.0), (b, 1000, 5.0), (a, 1000, 0.0), (c, 1, 1.0), (d, 1, np.float32(1.0))):
        _reads[(1,)](y, TABLE=table, I=i)
        assert y[0] == want
    keys = {_reads.specialize_for((y,), {"TABLE": t, "I": 1}) for t in (a, b, c, d)}
    assert len(keys) == 4


_HELPERS = '''import functools

def kwonly(n, *, factor={f}):
    return n * factor

@functools.lru_cache(maxsize=None)
def cached(n):
    return n + {c}

def _decorate(fn):
    @functools.wraps(fn)
    def inner(*args):
        return fn(*args) * 1
    return inner

@decorate_later
def wrapped(n):
    return n + {w}

def firsts(n):
    return [x * {m} for x in range(n)][-1] + sum(1 for x in {{"a", "b", "c"}} if x in {{"a", "b"}})
'''.replace("decorate_later", "_decorate")

_KERNEL = '''import fakv
import fakv.language as fl
from helpers import cached, firsts, kwonly, wrapped

@fakv.jit
def k(Y):
    fl.store(Y, fl.full((1,), kwonly(1) * 1.0 + cached(1) * 10.0 + wrapped(0) * 100.0 + firsts(2) * 1000.0),
             (0,), (1,))
'''


def test_helpers_of_another_module_are_keyed_by_their_code(tmp_path):
    """Helpers imported from another file: a keyword-only default, an lru_cache'd or functools.wraps'd
    helper and a comprehension's body changed there kept the kernel's key (the next process loaded the old
    binary); a comprehension or a set constant made the key differ in every process (a recompile each)."""
    import subprocess
    import sys
    (tmp_path / "kmod.py").write_text(_KERNEL)
    script = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import kmod; print(kmod.k.source_key())"

    def key(seed):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()
    base = dict(f=2, c=3, w=100, m=2)
    (tmp_path / "helpers.py").write_text(_HELPERS.format(**base))
    first = key(1)
    assert key(2) == first and key(3) == first             # (one key whatever the hash seed and addresses)
    for name, value in (("f", 5), ("c", 7), ("w", 9), ("m", 3)):
        (tmp_path / "helpers.py").write_text(_HELPERS.format(**dict(base, **{name: value})))
        assert key(1) != first, name



SMALL_TABLE = np.array([1.0, 2.0, 3.0])
INNER_SCALE = 2.0


@fakv.jit
def _reads_table(Y):
    fl.store(Y, fl.full((1,), SMALL_TABLE[1]), (0,), (1,))


@fakv.jit
def _leaf(Y):
    fl.store(Y, fl.full((1,), INNER_SCALE), (0,), (1,))


@fakv.jit
def _calls_leaf(Y):
    _leaf(Y)


def test_an_array_changed_in_place_and_a_callee_launched_itself():
    """A small numpy array global changed in place is seen by the next launch (it was compared by identity:
    the old value ran, and a new specialisation was keyed by the old bytes); a kernel that another kernel's
    launch saw change is made again when launched itself (its own look was reset: it kept the old code)."""
    global INNER_SCALE
    y = np.zeros(1, np.float32)
    _reads_table[(1,)](y)
    assert y[0] == 2.0
    SMALL_TABLE[1] = 7.0
    try:
        _reads_table[(1,)](y)
        assert y[0] == 7.0
    finally:
        SMALL_TABLE[1] = 2.0
    for k in (_leaf, _calls_leaf):
        k[(1,)](y)
        assert y[0] == 2.0
    INNER_SCALE = 5.0
    try:
        _calls_leaf[(1,)](y)
        assert y[0] == 5.0
        _leaf[(1,)](y)                    # (the callee, launched itself after its caller saw the change)
        assert y[0] == 5.0
    finally:
        INNER_SCALE = 2.0


HELPER_SCALE = 2.0


def _helper_scale():
    return HELPER_SCALE


@fakv.jit
def _calls_helper(Y):
    fl.store(Y, fl.full((1,), _helper_scale()), (0,), (1,))


def test_a_global_a_plain_helper_reads_is_seen():
    """A plain function the kernel calls at compile time reads a global; changed after a launch, the next
    launch runs the new value (the look each launch followed the kernel's own globals only: the old code ran,
    and a new specialisation was stored on disk under the old value's key)."""
    global HELPER_SCALE
    y = np.zeros(1, np.float32)
    _calls_helper[(1,)](y)
    assert y[0] == 2.0
    HELPER_SCALE = 3.0
    try:
        _calls_helper[(1,)](y)
        assert y[0] == 3.0
    finally:
        HELPER_SCALE = 2.0
    _calls_helper[(1,)](y)
    assert y[0] == 2.0


LIST_PAIR = ([2.0], "x")
HOLDS_ARRAY = {"t": np.full(100, 2.0)}


@fakv.jit
def _reads_nested(Y):
    fl.store(Y, fl.full((1,), LIST_PAIR[0][0] * HOLDS_ARRAY["t"][50]), (0,), (1,))


def test_containers_in_a_tuple_and_arrays_in_a_dict_changed_in_place():
    """A list inside a tuple global and a small array inside a dict global, changed in place: seen by the
    next launch (a tuple was compared by identity, a dict by its repr, which numpy's elides)."""
    y = np.zeros(1, np.float32)
    _reads_nested[(1,)](y)
    assert y[0] == 4.0
    LIST_PAIR[0][0] = 3.0
    try:
        _reads_nested[(1,)](y)
        assert y[0] == 6.0
        HOLDS_ARRAY["t"][50] = 5.0
        _reads_nested[(1,)](y)
        assert y[0] == 15.0
    finally:
        LIST_PAIR[0][0], HOLDS_ARRAY["t"][50] = 2.0, 2.0


@fakv.jit
def _reads_config(Y, CFG: fl.constexpr):
    fl.store(Y, fl.full((1,), CFG.SCALE), (0,), (1,))


def _config_class(value):
    class Config:
        SCALE = value
    return Config


class _Instance:
    def __init__(self, scale):
        self.SCALE = scale


def test_classes_and_objects_as_constexprs_are_keyed_by_their_attributes():
    """A class or an object passed as a constexpr is keyed by what it holds: two classes of one name (a
    factory's), a class attribute changed, objects of one class with other values (repr keyed a class by
    its name only and an object by an address another may reuse: all ran the first one's code)."""
    y = np.zeros(1, np.float32)
    for value in (2.0, 3.0):
        _reads_config[(1,)](y, CFG=_config_class(value))
        assert y[0] == value
    fixed = _config_class(4.0)
    _reads_config[(1,)](y, CFG=fixed)
    assert y[0] == 4.0
    fixed.SCALE = 5.0
    _reads_config[(1,)](y, CFG=fixed)
    assert y[0] == 5.0
    for value in (6.0, 7.0, 8.0):
        _reads_config[(1,)](y, CFG=_Instance(value))     # (each freed after: the next may take its address)
        assert y[0] == value


_UNSEEN = """
import sys, numpy as np, fakv, fakv.language as fl
BIG = [2.0] * 2000        # (past the 1000 items looked at each launch: a change in place is not seen)
@fakv.jit
def k(Y, N: fl.constexpr):
    fl.store(Y, fl.full((1,), BIG[0] * N), (0,), (1,))
y = np.zeros(1, np.float32)
if sys.argv[1] == "change":
    k[(1,)](y, N=1)
    BIG[0] = 3.0
print(k[(1,)](y, N=2).entry)
"""


@needs_assembler
def test_a_compile_is_stored_under_the_key_of_what_it_compiled(tmp_path):
    """A change no launch sees (a list past the items looked at) made before a new specialisation compiles:
    its entry is keyed by the values it was compiled from (it was stored under the key kept from before the
    change, and another process, never changed, loaded that code)."""
    import subprocess
    import sys
    (tmp_path / "unseen.py").write_text(_UNSEEN)
    env = dict(os.environ, FAKV_CACHE_DIR=str(tmp_path / "cache"), FAKV_COMPILE_ONLY="1")

    def entry(mode):
        return subprocess.run([sys.executable, str(tmp_path / "unseen.py"), mode], env=env, capture_output=True,
                              text=True, check=True).stdout.strip()
    changed, unchanged = entry("change"), entry("keep")
    assert changed and unchanged and changed != unchanged
    assert entry("keep") == unchanged                     # (a hit: one key for one set of values)


_COMPILES = {"n": 0}
SELF_LIST = []
SELF_LIST.append(SELF_LIST)


def _counting_helper():
    _COMPILES["n"] += 1            # (a helper's own bookkeeping, changed by code generation itself)
    return 2.0 + 0 * len(SELF_LIST)


@fakv.jit
def _counted(Y):
    fl.store(Y, fl.full((1,), _counting_helper()), (0,), (1,))


def test_a_helper_changing_its_own_globals_compiles_once():
    """A helper that changes a global it reads while the kernel's code is generated (a counter, a memo) is
    not a change the next launch recompiles for (every launch recompiled: 51 ms each), and a helper reading
    a list that holds itself keys without a RecursionError (session 44's review of 5cf2d45)."""
    y = np.zeros(1, np.float32)
    before = _COMPILES["n"]
    for _ in range(5):
        _counted[(1,)](y)
    assert y[0] == 2.0 and _COMPILES["n"] == before + 1


class _SlotsAnswerAnything:
    __slots__ = ("SCALE",)

    def __init__(self):
        self.SCALE = 3.0

    def __getattr__(self, name):
        return 0


class _IntKeys:
    def __init__(self):
        self.SCALE = 4.0
        self.__dict__[7] = "not a name"


def test_objects_without_a_plain_dict_as_constexprs():
    """Objects whose attributes cannot be listed plainly (slots with a __getattr__ answering any name, a
    __dict__ with a key that is not a string) are keyed as before (by repr) instead of raising."""
    y = np.zeros(1, np.float32)
    for obj, want in ((_SlotsAnswerAnything(), 3.0), (_IntKeys(), 4.0)):
        _reads_config[(1,)](y, CFG=obj)
        assert y[0] == want


_MEMO_SOURCE = """
import numpy as np, fakv, fakv.language as fl
_MEMO = {}
def block_for(n):
    if n not in _MEMO:
        _MEMO[n] = n * 2
    return _MEMO[n]
@fakv.jit
def k(Y, N: fl.constexpr):
    fl.store(Y, fl.full((1,), block_for(N) * 1.0), (0,), (1,))
print(k[(1,)](np.zeros(1, np.float32), N=4).cache)
"""


@needs_assembler
def test_a_memo_filled_by_code_generation_still_hits_the_disk_cache(tmp_path):
    """A helper's memo, empty when a process starts and filled by code generation: the entry is keyed
    before the code is made, so the next process (memo empty again) hits it (keyed after, it missed in
    every process)."""
    assert _two_processes(tmp_path, _MEMO_SOURCE) == ["miss", "hit"]


def _two_processes(tmp_path, source):
    """What the launch of `source` found in the disk cache in two processes, one after the other."""
    (tmp_path / "memo.py").write_text(source)
    env = dict(os.environ, FAKV_CACHE_DIR=str(tmp_path / "cache"), FAKV_COMPILE_ONLY="1")
    return [subprocess.run([sys.executable, str(tmp_path / "memo.py")], env=env, capture_output=True, text=True,
                           check=True).stdout.strip() for _ in range(2)]


_KEYS_ACROSS_SEEDS = """
import dataclasses, enum, sys, types
import numpy as np
from fakv import jitfunction as J
@dataclasses.dataclass
class Config:
    names: frozenset
    table: np.ndarray
class Mode(enum.Enum):
    A = frozenset({"alpha", "beta", "gamma", "delta"})
class Plain:
    pass
value = (Config(frozenset({"alpha", "beta", "gamma", "delta", "eps"}), np.arange(3)), Mode.A,
         types.SimpleNamespace(s={"x", "y", "z", "w"}), [Plain()])
print(J._canonical(value))
"""


def test_key_texts_are_one_across_processes_and_hash_seeds(tmp_path):
    """A dataclass holding a set, an enum member whose value is a set, a SimpleNamespace, an object with the
    default repr inside a list: one key text in every process whatever the hash seed, no address in it (they
    were keyed by reprs: a set's order, an address; a miss in every process)."""
    import subprocess
    import sys
    (tmp_path / "keys.py").write_text(_KEYS_ACROSS_SEEDS)
    texts = {subprocess.run([sys.executable, str(tmp_path / "keys.py")], capture_output=True, text=True, check=True,
                            env=dict(os.environ, PYTHONHASHSEED=str(seed))).stdout for seed in (1, 2, 3)}
    assert len(texts) == 1 and " at 0x" not in next(iter(texts))


def test_key_texts_tell_apart_what_a_kernel_could_see():
    """Values a kernel could tell apart get other key texts (0-d and one-element arrays, structured
    dtypes, namedtuples of other fields, defaultdicts of other factories, partials of other builtins), and
    containers holding themselves many times are keyed at once (exponential before)."""
    import collections
    import functools
    from fakv.jitfunction import _canonical
    pairs = [(np.array(5), np.array([5])),
             (np.zeros(2, dtype=[("a", "<i4"), ("b", "<f4")]), np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")])),
             (collections.namedtuple("P", "x y")(1, 2), collections.namedtuple("P", "y x")(1, 2)),
             (collections.defaultdict(int), collections.defaultdict(list)),
             (functools.partial(max, 0), functools.partial(min, 0))]
    for a, b in pairs:
        assert _canonical(a) != _canonical(b), (a, b)
    loop = []
    loop.extend([loop] * 3)
    nested = [[[[[[[0] * 10] * 10] * 10] * 10] * 10] * 10] * 10
    import time
    start = time.perf_counter()
    assert _canonical(loop) and _canonical(nested)
    assert time.perf_counter() - start < 5          # (each container keyed once: exponential before)


_READS_GLOBAL_CLASS = """
import sys, numpy as np, fakv, fakv.language as fl
class Cfg:
    SCALE = float(sys.argv[1])
@fakv.jit
def k(Y):
    fl.store(Y, fl.full((1,), Cfg.SCALE), (0,), (1,))
print(k.source_key())
"""


def test_a_global_class_the_kernel_reads_is_in_its_key(tmp_path):
    """A class the kernel reads an attribute of (`Cfg.SCALE`): its attributes are in the source key, so a
    process with another value never loads this one's binary from disk (keyed by nothing before)."""
    import subprocess
    import sys
    (tmp_path / "cls.py").write_text(_READS_GLOBAL_CLASS)
    keys = [subprocess.run([sys.executable, str(tmp_path / "cls.py"), v], capture_output=True, text=True,
                           check=True).stdout for v in ("2.0", "3.0", "2.0")]
    assert keys[0] == keys[2] != keys[1]


# Session 52's review: equal values that compile otherwise, helpers reached through a module or a tuple.
TIMES, DIVISOR = (3,), 0.0


@fakv.jit
def _times_and_over(Y, X, n):
    fl.store(Y, fl.where(fl.arange(0, 2) == 0, n * TIMES[0], fl.load(X, (2,), (0,), (1,)) / DIVISOR), (0,), (1,))


def test_a_global_changed_to_an_equal_value_of_another_kind_is_seen():
    """(3,) -> (3.0,) and 0.0 -> -0.0 compare equal, yet compile to an i32 or f32 product and +inf or -inf:
    the old code ran on (only clear() brought the new one)."""
    global TIMES, DIVISOR
    y, x = np.zeros(2, np.float32), np.ones(2, np.float32)
    with np.errstate(divide="ignore"):
        _times_and_over[(1,)](y, x, 1_000_000_000)
        assert y[0] == np.float32(np.int32(-1294967296)) and y[1] == np.inf     # (3e9 wraps in i32)
        TIMES, DIVISOR = (3.0,), -0.0
        try:
            _times_and_over[(1,)](y, x, 1_000_000_000)
            assert y[0] == 3e9 and y[1] == -np.inf
        finally:
            TIMES, DIVISOR = (3,), 0.0


_HELPER_MODULE = """
SCALE = 2.0


def scale_of(x):
    return SCALE * x
"""
HELPERS = None                 # (the module above, imported by the test)
TUPLE_SCALE = 2.0


@fakv.jit
def _scaled_by_global(x):
    return x * TUPLE_SCALE


KERNELS = (_scaled_by_global,)


@fakv.jit
def _reaches_helpers(Y):
    fl.store(Y, fl.where(fl.arange(0, 2) == 0, HELPERS.scale_of(1.0), KERNELS[0](fl.full((2,), 1.0))), (0,), (1,))


def test_helpers_reached_through_a_module_or_a_tuple_are_watched(tmp_path, monkeypatch):
    """A plain function named as `module.name` and a kernel held in a tuple the kernel names read globals;
    changed after a launch, the next launch runs the new values (only helpers named directly were followed:
    the old code ran on)."""
    global HELPERS, TUPLE_SCALE
    import importlib
    (tmp_path / "fakv_test_helpers.py").write_text(_HELPER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    HELPERS = importlib.import_module("fakv_test_helpers")
    y = np.zeros(2, np.float32)
    try:
        _reaches_helpers[(1,)](y)
        assert y.tolist() == [2.0, 2.0]
        HELPERS.SCALE, TUPLE_SCALE = 5.0, 7.0
        _reaches_helpers[(1,)](y)
        assert y.tolist() == [5.0, 7.0]
    finally:
        HELPERS, TUPLE_SCALE = None, 2.0


def test_a_module_inside_a_module_is_keyed(tmp_path, monkeypatch):
    """`pkg.sub.VAL` in a kernel: its key (and so another process's disk entry) follows VAL; the key ignored
    modules reached through a module, so a second process ran the binary compiled for the old value."""
    import importlib
    import sys
    pkg = tmp_path / "keypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from . import sub\n")
    (pkg / "sub.py").write_text("VAL = 1.0\n")
    (tmp_path / "kern_nested_key.py").write_text(
        "import fakv\nimport fakv.language as fl\nimport keypkg.sub\n\n\n@fakv.jit\ndef fill(Y):\n"
        "    fl.store(Y, fl.full((4,), keypkg.sub.VAL), (0,), (1,))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("keypkg", "keypkg.sub", "kern_nested_key"):
        sys.modules.pop(name, None)
    kern = importlib.import_module("kern_nested_key")
    sub = importlib.import_module("keypkg.sub")
    first = kern.fill.source_key()
    kern.fill._source_key = None             # (another process: the key computed afresh)
    assert kern.fill.source_key() == first
    monkeypatch.setattr(sub, "VAL", 5.0)
    kern.fill._source_key = None
    assert kern.fill.source_key() != first


BIG_LIST = [1.0] * 2000          # (past the items a key looks into: keyed by its type)


def _reads_big_list():
    return BIG_LIST[0]


def test_a_key_by_identity_is_this_process_only():
    """A function constexpr keyed by its identity (it reads a list too long to key by content), or an object
    whose repr is an address: the key text holds the address and a token of the process, new in a forked child
    (the address alone named disk entries: a forked worker with another BIG_LIST loaded its sibling's
    binary)."""
    import threading
    from fakv.jitfunction import _constexpr_text
    lock = threading.Lock()
    texts = (_constexpr_text(_reads_big_list), _constexpr_text(lock))
    assert texts == (_constexpr_text(_reads_big_list), _constexpr_text(lock))    # (stable in one process)
    assert all(f"{id(v):x}" in t for v, t in zip((_reads_big_list, lock), texts))
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                          # the child: its texts for the same objects, at the same addresses
        try:
            os.write(write, "\n".join((_constexpr_text(_reads_big_list), _constexpr_text(lock))).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = tuple(f.read().split("\n"))
    os.waitpid(pid, 0)
    assert len(child) == 2 and child[0] != texts[0] and child[1] != texts[1]


_CLASS_HOLDS_ITS_KERNEL = """
import numpy as np, fakv, fakv.language as fl
class Ops:
    SCALE = 3.0
    @fakv.jit
    def fill(Y):
        fl.store(Y, fl.full((4,), Ops.SCALE), (0,), (1,))
y = np.zeros(4, np.float32)
Ops.fill[(1,)](y)
Ops.fill[(1,)](y)
print(y[0])
"""


def test_a_class_holding_the_kernel_that_reads_it_launches(tmp_path):
    """Kernels grouped in a class whose constants they read: the class is keyed by its attributes (the kernel
    among them, once) and watched by identity; a watch by attributes walked the kernel's key again from inside
    its own watch and never finished (session 55's review of a change not kept)."""
    import subprocess
    import sys
    (tmp_path / "ops.py").write_text(_CLASS_HOLDS_ITS_KERNEL)
    run = subprocess.run([sys.executable, str(tmp_path / "ops.py")], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, FAKV_CACHE_DIR=str(tmp_path / "cache")))
    assert run.returncode == 0 and run.stdout.strip() == "3.0", run.stderr[-2000:]


_REBOUND = 1.0


@fakv.jit
def _times_rebound(Y, BLOCK: fl.constexpr):
    fl.store(Y, fl.full((BLOCK,), _REBOUND), (0,), (1,))


def _rebinding(monkeypatch, kernel, value, when, at=1):
    """The kernel's `at`-th code generation with its global _REBOUND rebound to `value` by "another thread",
    `when` it is: "before" or "after" the generation reads it, "after, seen" after it and that thread's launch
    then seeing the change (kernel.watch()), "every" after every generation (`value` + the generation's
    number), "never"; the others as they are."""
    calls, ir = [], kernel._ir

    def racing(*args, **kwargs):
        calls.append(1)
        if len(calls) == at and when == "before":
            globals()["_REBOUND"] = value
        out = ir(*args, **kwargs)
        if len(calls) == at and when in ("after", "after, seen"):
            globals()["_REBOUND"] = value
            if when == "after, seen":
                kernel.watch()
        if when == "every":
            globals()["_REBOUND"] = value + len(calls)
        return out
    monkeypatch.setattr(kernel, "_ir", racing)
    monkeypatch.setitem(globals(), "_REBOUND", 1.0)
    kernel.watch()
    kernel.clear()
    return calls


def test_a_global_rebound_while_the_code_is_generated_is_seen(monkeypatch):
    """Another thread rebinding a global the kernel reads while a launch generates the code (after the
    generation read it): the change was taken as the new baseline, and every later launch kept the old value's
    code (x*1 for good after SCALE = 3: session 58's review), the specialisations made before it too. The code
    is generated again from the new value, and those made before are dropped."""
    calls = _rebinding(monkeypatch, _times_rebound, 3.0, "after", at=2)
    y = np.zeros(8, np.float32)
    _times_rebound[(1,)](y, BLOCK=4)                        # (generation 1: of 1.0)
    assert (y[:4] == 1.0).all() and len(calls) == 1
    _times_rebound[(1,)](y, BLOCK=8)                        # (generation 2 sees 1.0, then 3.0: 3 of 3.0)
    assert (y == 3.0).all() and len(calls) == 3
    _times_rebound[(1,)](y, BLOCK=4)                        # (of 1.0, dropped: 4 of 3.0)
    assert (y[:4] == 3.0).all() and len(calls) == 4
    for block in (4, 8):
        y[:] = 0
        _times_rebound[(1,)](y, BLOCK=block)
        assert (y[:block] == 3.0).all() and len(calls) == 4


def test_a_specialisation_dropped_while_it_compiled_is_not_kept(monkeypatch):
    """The rebinding after the generation, and the other thread's launch seeing it (its watch() drops this
    kernel's specialisations and takes the new baseline) before this launch keeps its code: the old value's
    code was kept under the new baseline, for good. It runs this launch only."""
    calls = _rebinding(monkeypatch, _times_rebound, 3.0, "after, seen")
    y = np.zeros(8, np.float32)
    _times_rebound[(1,)](y, BLOCK=4)
    assert len(calls) == 2 and (y[:4] == 3.0).all()             # (seen before it was compiled: generated again)

    def seen_after_the_generation(c, types, compile_cpu=_times_rebound._compile_cpu):
        compile_cpu(c, types)
        if len(calls) == 3:
            globals()["_REBOUND"] = 5.0
            _times_rebound.watch()
    monkeypatch.setattr(_times_rebound, "_compile_cpu", seen_after_the_generation)
    _times_rebound[(1,)](y, BLOCK=8)
    assert len(calls) == 3 and (y == 3.0).all() and not _times_rebound._compiled   # (run, not kept)
    _times_rebound[(1,)](y, BLOCK=8)
    assert len(calls) == 4 and (y == 5.0).all()


def test_a_global_rebound_at_every_generation_is_neither_stored_nor_kept(monkeypatch):
    """A kernel's own global rebound after every generation (a helper counting compiles in a global the kernel
    reads): its code never matches its key; it is generated three times, run, and neither kept nor stored."""
    calls = _rebinding(monkeypatch, _times_rebound, 10.0, "every")
    y = np.zeros(4, np.float32)
    c = _times_rebound[(1,)](y, BLOCK=4)
    assert len(calls) == 3 and (y == 12.0).all() and not _times_rebound._compiled and c.cache == "cpu"


@needs_assembler
def test_a_global_rebound_while_the_code_is_generated_does_not_poison_the_disk_cache(monkeypatch, tmp_path):
    """The same rebinding before the generation read it: the code of the new value was stored on disk under the
    entry named by the old value's key, where another process with the old value loaded it. The entry is named
    by the values its code was generated from."""
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    _rebinding(monkeypatch, _times_rebound, 3.0, "before")
    y = np.zeros(4, np.float32)
    stored = _times_rebound[(1,)](y, BLOCK=4)
    assert "3.0" in stored.ir and stored.cache == "miss"
    for value, found in ((1.0, None), (3.0, stored.entry)):
        monkeypatch.setitem(globals(), "_REBOUND", value)
        _times_rebound.watch()
        _times_rebound.clear()
        c = _times_rebound.specialize_for((y,), dict(BLOCK=4), compile=False)
        assert (c and c.entry) == found, value


# (the kernel names the memo too)
_NAMED_MEMO_SOURCE = _MEMO_SOURCE.replace("block_for(N) * 1.0", "block_for(N) * 1.0 + len(_MEMO) * 0.0")


@needs_assembler
def test_a_memo_the_kernel_names_too_still_hits_the_disk_cache(tmp_path):
    """A memo a helper fills while the code is generated, which the kernel names too: a global of the kernel's
    own changed in place is the helpers' own change, not another thread's (the code generated again was keyed
    by the filled memo, which no new process has: every process missed)."""
    assert _NAMED_MEMO_SOURCE != _MEMO_SOURCE
    assert _two_processes(tmp_path, _NAMED_MEMO_SOURCE) == ["miss", "hit"]


def test_a_function_constexpr_keyed_by_its_text_while_another_thread_keys_stays_keyed_by_it(monkeypatch):
    """A function constexpr all of whose parts are keyed by content is keyed by its text alone (another process
    finds its binary on disk). A count of the values keyed by type only, shared by all threads, was read before
    and after keying it: another thread keying such a value meanwhile made its key this process's own (an entry
    no other process finds)."""
    import threading
    from fakv import jitfunction as J
    text = J._callable_text

    others = []

    def keyed_while_another_thread_keys(value, *args, **kwargs):
        if value is _plain_score and not others:
            others.append(threading.Thread(target=lambda: J._constexpr_text(threading.Lock())))   # (by type only)
            others[0].start()
            others[0].join()
        return text(value, *args, **kwargs)
    monkeypatch.setattr(J, "_callable_text", keyed_while_another_thread_keys)
    keyed = J._constexpr_text(_plain_score)
    assert others and keyed.startswith("fn:") and f"{id(_plain_score):x}" not in keyed, keyed
    locked = lambda s, lock=threading.Lock(): s         # noqa: E731  (a default keyed by type: by identity)
    assert f"{id(locked):x}" in J._constexpr_text(locked)


def _plain_score(s):
    return s * 2.0


@needs_assembler
def test_a_disk_cache_hit_dropped_while_it_loaded_is_not_kept(monkeypatch, tmp_path):
    """Another thread's launch seeing a rebinding (and dropping this kernel's specialisations) while a launch
    loads the old value's binary from the disk cache: that binary was kept, for good. It serves that launch
    only; the next one finds the new value's."""
    from fakv import cache
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    _rebinding(monkeypatch, _times_rebound, 0.0, "never")
    y = np.zeros(4, np.float32)
    old = _times_rebound[(1,)](y, BLOCK=4)
    assert old.cache == "miss"
    _times_rebound.clear()
    load = cache.load

    def rebound_while_loading(entry):
        found = load(entry)
        globals()["_REBOUND"] = 3.0
        _times_rebound.watch()
        return found
    monkeypatch.setattr(cache, "load", rebound_while_loading)
    hit = _times_rebound[(1,)](y, BLOCK=4)
    assert hit.cache == "hit" and hit.entry == old.entry and not _times_rebound._compiled
    monkeypatch.setattr(cache, "load", load)
    new = _times_rebound[(1,)](y, BLOCK=4)
    assert new.entry != old.entry and "3.0" in new.ir


def test_one_variant_per_options_from_threads_at_once(monkeypatch):
    """with_options from two threads at once: each made its own variant, and the specialisations the other
    compiled were lost to it (fakv's own decode compiled again)."""
    import threading
    import time
    from fakv import jitfunction as J
    init = J.JITFunction.__init__

    def slow_init(self, *args, **kwargs):
        time.sleep(0.05)                     # (the other thread asks meanwhile)
        init(self, *args, **kwargs)
    monkeypatch.setattr(J.JITFunction, "__init__", slow_init)
    got = []
    threads = [threading.Thread(target=lambda: got.append(_times_rebound.with_options(stages=4))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and got[0] is got[1]
