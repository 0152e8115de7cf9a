"""A seeded fuzzer of the DSL front end on the CPU path (issue 10): random
small kernels (elementwise expression trees over loaded tiles and scalars,
runtime `if`s with early returns, loops, reductions) run against numpy
evaluating the same expressions; random kernels of dots (dot_fuzz.py)
against a float64 reference, each also compiled for sm_90a
(test/gpu/test_frontend_gpu.py runs both kinds on the GPU); and random
single mistakes in a valid kernel, each a CompilationError at the mistaken
line. No input may crash, hang or give a wrong answer silently.
Deterministic; FUZZ_CASES=N runs more."""
import importlib.util
import os

import numpy as np
import pytest

import dot_fuzz
import fakv
from needs import needs_assembler

N = int(os.environ.get("FUZZ_CASES", 40))
BLOCK = 16

# (DSL text, numpy text) of unary and binary operations on float32 values.
UNARY = [("fl.exp({} * 0.01)", "np.exp({} * np.float32(0.01))"), ("fl.abs_f({})", "np.abs({})"),
         ("fl.tanh({})", "np.tanh({})"), ("fl.sqrt(fl.abs_f({}))", "np.sqrt(np.abs({}))"),
         ("(-{})", "(-{})"), ("fl.maximum({}, 0.0)", "np.maximum({}, np.float32(0))")]
BINARY = [("({} + {})", "({} + {})"), ("({} - {})", "({} - {})"), ("({} * {})", "({} * {})"),
          ("({} / (fl.abs_f({}) + 1.0))", "({} / (np.abs({}) + np.float32(1)))"),
          ("fl.maximum({}, {})", "np.maximum({}, {})"), ("fl.minimum({}, {})", "np.minimum({}, {})"),
          ("fl.where({0} > {1}, {0}, {1} * 2.0)", "np.where({0} > {1}, {0}, {1} * np.float32(2))")]
LEAVES = [("x", "x"), ("y", "y"), ("alpha", "alpha"), ("1.5", "np.float32(1.5)"), ("x[:]", "x")]


def expression(rng, depth):
    """(DSL text, numpy text) of a random expression holding a tile (x or y)."""
    if depth == 0 or rng.random() < 0.25:
        return LEAVES[int(rng.choice([0, 1, 4]))]
    if rng.random() < 0.4:
        dsl, ref = UNARY[int(rng.integers(0, len(UNARY)))]
        a = expression(rng, depth - 1)
        return dsl.format(a[0]), ref.format(a[1])
    dsl, ref = BINARY[int(rng.integers(0, len(BINARY)))]
    a = expression(rng, depth - 1)
    b = expression(rng, depth - 1) if rng.random() < 0.6 else LEAVES[int(rng.integers(0, len(LEAVES)))]
    if rng.random() < 0.5:
        a, b = b, a
    return dsl.format(a[0], b[0]), ref.format(a[1], b[1])


def kernel_source(rng):
    """(source, numpy reference function source) of a random kernel
    k(X, Y, Out, n, alpha, flag) over one block of BLOCK elements."""
    e1, e2 = expression(rng, 3), expression(rng, 3)
    early = bool(rng.integers(0, 2))
    loop = bool(rng.integers(0, 2))
    reduce_ = bool(rng.integers(0, 2))
    dsl = ["import fakv", "import fakv.language as fl", "", "",
           "@fakv.jit", "def k(X, Y, Out, n, alpha, flag, BLOCK: fl.constexpr):",
           "    x = fl.load(X, (BLOCK,), (0,), (1,), bounds=(n,))",
           "    y = fl.load(Y, (BLOCK,), (0,), (1,), bounds=(n,))",
           f"    r = {e1[0]}"]
    ref = ["def ref(x, y, n, alpha, flag):",
           "    x = np.where(np.arange(len(x)) < n, x, np.float32(0)).astype(np.float32)",
           "    y = np.where(np.arange(len(y)) < n, y, np.float32(0)).astype(np.float32)",
           "    alpha = np.float32(alpha)",
           f"    r = ({e1[1]}).astype(np.float32)"]
    if early:
        dsl += ["    if flag > 0:", "        fl.store(Out, r, (0,), (1,), bounds=(n,))", "        return"]
        ref += ["    if flag > 0:", "        return r"]
    if loop:
        dsl += ["    for i in fl.range(0, 3):", f"        r = fl.maximum(r, {e2[0]}) * 0.5"]
        ref += ["    for i in range(3):", f"        r = (np.maximum(r, {e2[1]}) * np.float32(0.5)).astype(np.float32)"]
    if reduce_:
        dsl += ["    r = r - fl.max(r, 0)"]
        ref += ["    r = r - np.max(r)"]                 # over the whole tile: lanes past n hold f(0)
    dsl += ["    fl.store(Out, r, (0,), (1,), bounds=(n,))"]
    ref += ["    return r"]
    return "\n".join(dsl) + "\n", "\n".join(ref) + "\n"


def load(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, str(path)


def check_random_kernel(seed, folder, device=None, tolerance=2e-5):
    """Kernel `seed` launched twice on random inputs against numpy: numpy arrays (the CPU path), or moved by
    device(array) and read back by numpy(); device "compile": launched on numpy arrays, nothing checked."""
    rng = np.random.default_rng(seed)
    src, ref_src = kernel_source(rng)
    module, _ = load(folder, f"fuzz_kernel_{seed}", src)
    scope = {"np": np}
    exec(ref_src, scope)
    for _ in range(2):
        n = int(rng.integers(1, BLOCK + 1))
        x = (rng.standard_normal(BLOCK) * 3).astype(np.float32)
        y = (rng.standard_normal(BLOCK) * 3).astype(np.float32)
        alpha, flag = float(rng.standard_normal()), int(rng.integers(0, 2))
        out = np.full(BLOCK, -7.0, np.float32)
        if device is None or device == "compile":
            module.k[(1,)](x, y, out, n, alpha, flag, BLOCK=BLOCK)
            if device == "compile":
                return
        else:
            on = [device(a) for a in (x, y, out)]
            module.k[(1,)](*on, n, alpha, flag, BLOCK=BLOCK)
            out = on[2].cpu().numpy()
        with np.errstate(all="ignore"):
            want = scope["ref"](x.copy(), y.copy(), n, alpha, flag)
        got = out[:n]
        assert (out[n:] == -7.0).all(), "stored past the bounds"
        assert np.array_equal(np.isnan(got), np.isnan(want[:n])), src
        ok = np.isnan(got) | np.isclose(got, want[:n], rtol=tolerance, atol=tolerance)
        assert ok.all(), f"{src}\nn={n} flag={flag}\ngot {got}\nwant {want[:n]}"


@pytest.mark.parametrize("seed", range(N))
def test_random_kernels_match_numpy(seed, tmp_path):
    check_random_kernel(seed, tmp_path)


@pytest.mark.parametrize("seed", range(N))
def test_random_dot_kernels_match_numpy(seed, tmp_path):
    c = dot_fuzz.case(seed)
    arrays, operands = dot_fuzz.run_numpy(tmp_path, c)
    dot_fuzz.check(c, operands[4], *dot_fuzz.reference(c, arrays))


def test_the_dot_reference_sees_a_wrong_element(tmp_path):
    """check() is not too lenient: in most cases one element 1 % off (or 1e-3, near 0) fails it."""
    caught = 0
    for seed in range(20):
        c = dot_fuzz.case(seed)
        arrays, operands = dot_fuzz.run_numpy(tmp_path, c)
        want, size = dot_fuzz.reference(c, arrays)
        dot_fuzz.check(c, operands[4], want, size)
        wanted = np.argwhere(~np.isnan(want))
        if not len(wanted):
            continue
        out = dot_fuzz.matrix(c, 2, operands[4])
        where = tuple(wanted[seed % len(wanted)])
        out[where] += max(abs(out[where]) * 1e-2, 1e-3)
        try:
            dot_fuzz.check(c, operands[4], want, size)
        except AssertionError:
            caught += 1
    assert caught >= 14, caught


def test_the_dot_reference_sees_a_cast_rounded_toward_zero(tmp_path, monkeypatch):
    """check() tells a bf16 cast rounding toward zero (a plausible GPU bug: .rz, or the low bits dropped) from
    the kernel's, in at least a fifth of the cases with a second dot (the bound lets only elements near a
    rounding boundary round either way)."""
    outputs = {}
    for seed in range(120):
        c = dot_fuzz.case(seed)
        if c["second"] and c["dtype"] == "bf16":
            arrays, operands = dot_fuzz.run_numpy(tmp_path, c)
            outputs[seed] = (c, arrays, operands[4])

    def toward_zero(x, dtype):
        bits = x.astype(np.float32).view(np.uint32) & np.uint32(0xFFFF0000)
        return bits.view(np.float32).astype(np.float64)
    monkeypatch.setattr(dot_fuzz, "rounded_to_16_bits", toward_zero)
    caught = 0
    for c, arrays, out in outputs.values():
        try:
            dot_fuzz.check(c, out, *dot_fuzz.reference(c, arrays))
        except AssertionError:
            caught += 1
    assert len(outputs) >= 10 and caught >= len(outputs) / 5, (caught, len(outputs))


@needs_assembler
def test_random_dot_kernels_compile_for_sm90a(tmp_path, monkeypatch):
    """Each case compiles for the GPU (FAKV_COMPILE_ONLY: the sm_90a cubin assembled, nothing launched), in a
    cache of its own."""
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path / "cache"))
    for seed in range(N):
        c = dot_fuzz.case(seed)
        kernel = dot_fuzz.load(tmp_path, c)
        dot_fuzz.launch(kernel, c, *dot_fuzz.as_16_bits(c, dot_fuzz.inputs(c)))
        (compiled,) = kernel._compiled.values()
        assert compiled.device == "cuda" and compiled.binary[:4] == b"\x7fELF", c


# (mistake, the line to change, how to change it, words of the message)
GOOD = """import fakv
import fakv.language as fl


@fakv.jit
def k(X, Out, n, flag, BLOCK: fl.constexpr):
    x = fl.load(X, (BLOCK,), (0,), (1,), bounds=(n,))
    r = x * 2.0
    if flag > 0:
        r = r + 1.0
    for i in fl.range(0, n):
        r = fl.maximum(r, x)
    fl.store(Out, r, (0,), (1,), bounds=(n,))
"""
MISTAKES = [
    ("unknown name", "    r = x * 2.0", "    r = x * undefined_thing", "`undefined_thing` is not defined"),
    ("shape clash", "    r = x * 2.0", "    r = x * fl.zeros((BLOCK * 2,))", "do not broadcast"),
    ("float pointer offset", "    x = fl.load(X, (BLOCK,), (0,), (1,), bounds=(n,))",
     "    x = fl.load(X + 0.5, (BLOCK,), (0,), (1,), bounds=(n,))", "pointer arithmetic"),
    ("runtime tile size", "    r = x * 2.0", "    r = x * fl.zeros((n,))", "compile-time integer"),
    ("negative tile size", "    r = x * 2.0", "    r = x * fl.zeros((-BLOCK,))", "at least 1"),
    ("if on a tile", "    if flag > 0:", "    if x > 0:", "`if` on a tile"),
    ("type change in a loop", "        r = fl.maximum(r, x)", "        r = fl.zeros((BLOCK, 2))",
     "changes type"),
    ("while loop", "    for i in fl.range(0, n):", "    while n > 0:", "not supported"),
    ("return in a loop", "        r = fl.maximum(r, x)", "        return", "`return` inside an fl.range loop"),
    ("value returned from a branch", "        r = r + 1.0", "        return r", "returns nothing"),
    ("bad grid axis", "    r = x * 2.0", "    r = x * fl.program_id(5)", "grid axis"),
    ("python call on values", "    r = x * 2.0", "    r = x * len(x)", "kernel values"),
]


@pytest.mark.parametrize("what,line,new,words", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistakes_name_their_line(what, line, new, words, tmp_path):
    assert line in GOOD
    module, path = load(tmp_path, "fuzz_mistake", GOOD.replace(line, new, 1))
    x = np.zeros(BLOCK, np.float32)
    with pytest.raises(fakv.CompilationError) as e:
        module.k[(1,)](x, x.copy(), 4, 1, BLOCK=BLOCK)
    lineno = GOOD.split("\n").index(line) + 1
    assert f"{path}:{lineno}:" in str(e.value) and words in str(e.value), str(e.value)


def test_the_good_kernel_runs(tmp_path):
    module, _ = load(tmp_path, "fuzz_good", GOOD)
    x = np.arange(BLOCK, dtype=np.float32)
    out = np.zeros(BLOCK, np.float32)
    module.k[(1,)](x, out, 5, 1, BLOCK=BLOCK)
    assert out[:5].tolist() == [1.0, 3.0, 5.0, 7.0, 9.0] and (out[5:] == 0).all()
