"""The DSL front end: the IR it writes for small kernels, its errors (with
the kernel's file and line), the on-disk cache, FAKV_DUMP_IR and the CLI."""
import inspect
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import fakv
import fakv.language as fl
from fakv.kernels import splits
from needs import HAS_ASSEMBLER, needs_assembler

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@fakv.jit
def scale_rows(X, Y, n, alpha, BLOCK: fl.constexpr):
    pid = fl.program_id(0)
    x = fl.load(X, (BLOCK,), (pid * BLOCK,), (1,), bounds=(n,))
    fl.store(Y, x * alpha + 1.0, (pid * BLOCK,), (1,), bounds=(n,))


@fakv.jit
def running_max(X, Out, n, BLOCK: fl.constexpr):
    m = fl.full((BLOCK,), float("-inf"))
    for i in fl.range(0, n):
        m = fl.maximum(m, fl.load(X, (BLOCK,), (i * BLOCK,), (1,)))
    fl.store(Out, m, (0,), (1,))


def test_ir_of_a_small_kernel():
    ir = scale_rows.ir(np.zeros(8, np.float32), np.zeros(8, np.float32), 8, 2.0, BLOCK=64)
    assert re.search(r"func.func @scale_rows\(%X: !fakv.ptr<f32>( \{[^}]*\})?, %Y: !fakv.ptr<f32>( \{[^}]*\})?, "
                     r"%n: i32, %alpha: f32\)", ir)
    assert "attributes {fakv.kernel}" in ir
    assert re.search(r"fakv.load %X\[%\w+\] strides \[%\w+\] bounds \[%n\] : !fakv.ptr<f32> -> tensor<64xf32>", ir)
    assert re.search(r"fakv.splat %alpha : f32 -> tensor<64xf32>", ir)
    assert "arith.mulf" in ir and "arith.addf" in ir
    assert 'loc("' + __file__ in ir                       # locations point at this file


@fakv.jit
def stores_through_a_helper_of_another_file(OutPart, LsePart, X, BLOCK: fl.constexpr):
    out, lse = fl.load(X, (BLOCK, BLOCK), (0, 0), (BLOCK, 1)), fl.load(X, (BLOCK,), (0,), (1,))
    splits.store_partial(OutPart, LsePart, out, lse, 0, 0, 0, BLOCK, 1, BLOCK, BLOCK)


def test_locations_of_an_inlined_helper_name_its_file():
    """Ops of a helper inlined from another file carry that file's name with its lines (they carried the
    kernel's file with the helper's lines: a diagnostic pointed at an unrelated line of the kernel's file)."""
    x = np.zeros(64, np.float32)
    ir = stores_through_a_helper_of_another_file.ir(x, x, x, BLOCK=8)
    lines, first = inspect.getsourcelines(splits.store_partial.fn)
    line = first + next(i for i, text in enumerate(lines) if "fl.store(OutPart" in text)
    stores = re.findall(r"fakv.store .* loc\((.*)\)", ir)
    assert len(stores) == 2 and f'"{inspect.getsourcefile(splits.store_partial.fn)}":{line}:' in stores[0], stores
    assert 'loc("' + __file__ in ir                       # the kernel's own ops: this file


def test_specialises_on_divisibility(monkeypatch, tmp_path):
    """Integers that are multiples of 16 and 16-byte aligned arrays are
    marked {fakv.divisibility = 16}; on the GPU each combination is its own
    specialisation, on the CPU path (which has no use for it) one module
    serves all; each runs right."""
    base = np.zeros(64 + 1, np.float32)
    aligned = base[:64] if base.ctypes.data % 16 == 0 else base[1:]
    odd = base[1:] if base.ctypes.data % 16 == 0 else base[:64]
    assert aligned.ctypes.data % 16 == 0 and odd.ctypes.data % 16 != 0
    ir = scale_rows.ir(aligned, aligned, 32, 2.0, BLOCK=64)
    assert "%X: !fakv.ptr<f32> {fakv.divisibility = 16 : i64}" in ir
    assert "%n: i32 {fakv.divisibility = 16 : i64}" in ir
    ir = scale_rows.ir(odd, aligned, 31, 2.0, BLOCK=64)
    assert "%X: !fakv.ptr<f32>," in ir and "%n: i32," in ir
    cases = ((aligned, 32), (odd, 32), (aligned, 31), (aligned, 48))
    scale_rows.clear()
    for x, n in cases:
        x[:] = np.arange(64, dtype=np.float32)
        y = np.zeros(64, np.float32)
        scale_rows[(1,)](x, y, n, 2.0, BLOCK=64)
        assert np.array_equal(y[:n], x[:n] * 2 + 1) and not y[n:].any()
    assert len(scale_rows._compiled) == 1
    if HAS_ASSEMBLER:                 # GPU specialisations, compiled only
        monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
        monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
        monkeypatch.setenv("PATH", "/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
        scale_rows.clear()
        for x, n in cases:
            scale_rows[(1,)](x, np.zeros(64, np.float32), n, 2.0, BLOCK=64)
        assert len(scale_rows._compiled) == 3    # (aligned, 16 | n) twice: one specialisation
        scale_rows.clear()


@fakv.jit
def fill(Y, n, BLOCK: fl.constexpr, VALUE: fl.constexpr):
    fl.store(Y, fl.full((BLOCK,), VALUE), (0,), (1,), bounds=(n,))


def test_cached_launches_follow_constexpr_values():
    """The launch fast path keys constexprs by value, positional or keyword:
    16 then 64 are two specialisations; 1, 1.0 and True differ too."""
    fill.clear()
    y = np.zeros(64, np.float32)
    fill[(1,)](y, 64, 16, 1.0)
    assert y[:16].tolist() == [1.0] * 16 and not y[16:].any()
    fill[(1,)](y, 64, 64, 2.0)
    assert y.tolist() == [2.0] * 64
    fill[(1,)](y, 64, BLOCK=32, VALUE=3.0)
    assert y[:32].tolist() == [3.0] * 32 and y[32:].tolist() == [2.0] * 32
    fill[(1,)](y, 64, BLOCK=32, VALUE=fl.constexpr(4.0))
    assert y[:32].tolist() == [4.0] * 32 and y[32:].tolist() == [2.0] * 32
    assert len(fill._compiled) == 4
    for value in (1, 1.0, True):                            # (the same IR: 1.0 stored into f32)
        y[:] = 0
        fill[(1,)](y, 64, 8, value)
        assert y[:8].tolist() == [1.0] * 8 and not y[8:].any()
    assert len(fill._compiled) == 7


def test_numpy_scalar_arguments():
    """numpy scalars are passed as Python numbers (not as arrays)."""
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    scale_rows[(2,)](x, y, np.int32(100), np.float32(0.5), BLOCK=64)
    assert np.array_equal(y, x * 0.5 + 1)
    y[:] = 0
    scale_rows[(2,)](x, y, np.int64(100), 0.5, BLOCK=np.int64(64))
    assert np.array_equal(y, x * 0.5 + 1)


def test_kernels_run_on_the_cpu():
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    scale_rows[(2,)](x, y, 100, 0.5, BLOCK=64)
    assert np.array_equal(y, x * 0.5 + 1)
    x = np.random.default_rng(0).standard_normal(32).astype(np.float32)
    out = np.zeros(8, np.float32)
    running_max[(1,)](x, out, 4, BLOCK=8)
    assert np.array_equal(out, x.reshape(4, 8).max(0))


def test_runtime_if_yields():
    @fakv.jit
    def pick(X, flag, Out):
        v = fl.full((4,), 1.0)
        if flag > 0:
            v = v * 3.0
        fl.store(Out, v, (0,), (1,))
    out = np.zeros(4, np.float32)
    pick[(1,)](np.zeros(1, np.float32), 1, out)
    assert np.all(out == 3)
    pick[(1,)](np.zeros(1, np.float32), 0, out)
    assert np.all(out == 1)


@fakv.jit
def early_exit(X, Out, n, SKIP: fl.constexpr):
    if SKIP and X[0] > 0.0 and n > 0:          # (Python's short circuit on SKIP)
        fl.store(Out, fl.full((4,), 2.0), (0,), (1,))
        return
    fl.store(Out, fl.full((4,), 1.0), (0,), (1,))


def test_boolean_operators_short_circuit_on_constexprs():
    """`SKIP and <runtime>` with SKIP false is false at compile time, as in
    Python: no runtime `if`, no load (the kernel's early return not
    generated); with SKIP true, a runtime `if` that returns early."""
    x, out = np.ones(1, np.float32), np.zeros(4, np.float32)
    ir = early_exit.ir(x, out, 1, SKIP=False)
    assert "scf.if" not in ir and "fakv.load" not in ir
    ir = early_exit.ir(x, out, 1, SKIP=True)
    assert "scf.if" in ir and "fakv.load" in ir
    early_exit[(1,)](x, out, 1, SKIP=True)
    assert np.all(out == 2)
    out[:] = 0
    early_exit[(1,)](-x, out, 1, SKIP=True)
    assert np.all(out == 1)
    out[:] = 0
    early_exit[(1,)](x, out, 1, SKIP=False)
    assert np.all(out == 1)


def line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, l in enumerate(lines) if text in l)


def test_error_unknown_name():
    @fakv.jit
    def bad(X):
        fl.store(X, fl.full((4,), undefined_value), (0,), (1,))  # noqa: F821
    with pytest.raises(fakv.CompilationError) as e:
        bad.ir(np.zeros(4, np.float32))
    assert f"{__file__}:{line_of(bad.fn, 'undefined_value')}:" in str(e.value)
    assert "`undefined_value` is not defined" in str(e.value)


def test_error_shapes():
    @fakv.jit
    def bad(X):
        a = fl.full((4,), 1.0)
        b = fl.full((8,), 1.0)
        fl.store(X, a + b, (0,), (1,))
    with pytest.raises(fakv.CompilationError, match=r"shapes \[4\] and \[8\] do not broadcast") as e:
        bad.ir(np.zeros(4, np.float32))
    assert f":{line_of(bad.fn, 'a + b')}:" in str(e.value)


def test_error_loop_type_change_and_scope():
    @fakv.jit
    def bad(X, n):
        acc = fl.zeros((4,))
        for i in fl.range(0, n):
            acc = fl.zeros((8,))
        fl.store(X, acc, (0,), (1,))
    with pytest.raises(fakv.CompilationError, match=r"loop-carried `acc` changes type"):
        bad.ir(np.zeros(4, np.float32), 3)

    @fakv.jit
    def bad2(X, n):
        for i in fl.range(0, n):
            t = fl.zeros((4,))
        fl.store(X, t, (0,), (1,))
    with pytest.raises(fakv.CompilationError,
                       match=r"`t` is assigned only inside a fl.range loop: it has no value after the loop"):
        bad2.ir(np.zeros(4, np.float32), 3)


def test_error_from_the_verifier_points_at_the_kernel():
    """A dtype clash the C++ verifier catches comes back with the Python line."""
    @fakv.jit
    def bad(X, Y, Out):
        a = fl.load(X, (64, 64), (0, 0), (64, 1))
        b = fl.load(Y, (64, 64), (0, 0), (64, 1))
        fl.store(Out, fl.dot(a, b), (0, 0), (64, 1))
    x = np.zeros(64 * 64, np.float16)
    y = np.zeros(64 * 64, NP_BF16)
    with pytest.raises(fakv.CompilationError) as e:
        bad[(1,)](x, y, np.zeros(64 * 64, np.float32))
    msg = str(e.value)
    assert "operand element types differ: 'f16' vs 'bf16'" in msg
    assert f"{__file__}:{line_of(bad.fn, 'fl.dot(a, b)')}:" in msg


@fakv.jit
def gathered_rows(X, Out, SIZE: fl.constexpr):
    z = fl.program_id(2)
    rows, lengths = fl.cluster_gather((fl.load(X, (4,), (z * 4,), (1,)), fl.full((4,), 1, fl.int32) * z), SIZE)
    fl.store(Out, rows + lengths.to(fl.float32), (z * 4, 0), (SIZE, 1))


def test_cluster_gather_ir_and_cpu_path():
    """fl.cluster_gather: the tiles of a tuple gathered in one op, each with the cluster's size as its last
    dimension; the CPU path, which runs no clusters, says so; sizes outside 2..8 are refused in the DSL."""
    x, out = np.zeros(16, np.float32), np.zeros((16, 4), np.float32)
    ir = gathered_rows.ir(x, out, SIZE=4)
    assert "fakv.cluster_gather(%" in ir and "size 4 : tensor<4xf32>, tensor<4xi32> -> tensor<4x4xf32>, " \
        "tensor<4x4xi32>" in ir
    with pytest.raises(fakv.CompilationError, match="runs on the GPU only: the CPU path has no clusters"):
        gathered_rows[(1, 1, 4)](x, out, SIZE=4)
    with pytest.raises(fakv.CompilationError, match="a cluster has 2 to 8 programs, got 16"):
        gathered_rows.ir(x, out, SIZE=16)


def test_gpu_options_reach_the_ir():
    """@fakv.jit's swap_ab and gather_pages (through with_options: one variant per set of options) become the
    kernel attributes fakv.swap_ab and fakv.gather_pages; the kernel without them has neither."""
    x = np.zeros(4, np.float32)
    plain = scale_rows.ir(x, x, 4, 1.0, BLOCK=4)
    gathered = scale_rows.with_options(gather_pages=True)
    assert gathered is scale_rows.with_options(gather_pages=True) and gathered is not scale_rows
    both = scale_rows.with_options(gather_pages=True, swap_ab=True).ir(x, x, 4, 1.0, BLOCK=4)
    assert "fakv.gather_pages" in gathered.ir(x, x, 4, 1.0, BLOCK=4) and "fakv.swap_ab" not in plain
    assert "fakv.gather_pages" in both and "fakv.swap_ab" in both and "fakv.gather_pages" not in plain


def test_error_wrong_arguments():
    with pytest.raises(TypeError, match="cannot pass str to a kernel"):
        scale_rows[(1,)](np.zeros(4, np.float32), np.zeros(4, np.float32), "4", 1.0, BLOCK=4)
    with pytest.raises(RuntimeError, match=r"launch scale_rows with a grid"):
        scale_rows(1)


from attention_ref import NP_DTYPES  # noqa: E402
NP_BF16 = NP_DTYPES["bf16"]


@needs_assembler
def test_gpu_binaries_are_cached_on_disk(tmp_path):
    """The first compilation writes the cubin to $FAKV_CACHE_DIR and indexes
    the API call; another process's call finds the binary through the index
    without importing the kernels or the DSL (a warm start), and through
    the kernel's own key when the index is gone (compile-only mode: no GPU
    needed)."""
    env = dict(os.environ, FAKV_CACHE_DIR=str(tmp_path), FAKV_COMPILE_ONLY="1",
               PYTHONPATH=os.path.join(ROOT, "frontend"),
               PATH="/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    script = ("import json, sys, numpy as np, ml_dtypes, fakv\n"
              "q = np.zeros((1, 1, 8, 64), ml_dtypes.bfloat16); k = np.zeros((1, 256, 2, 64), ml_dtypes.bfloat16)\n"
              "fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=200, num_splits=1)\n"
              "from fakv import interface, prepare\n"
              "dsl = [m for m in ('fakv.language', 'fakv.jitfunction', 'fakv.kernels', 'fakv.kernels.decode')\n"
              "       if m in sys.modules]\n"
              "opts = interface.plan(1, 1, 8, 2, 64, 'bf16', False, 256, 256, False, 1)['decode_options']\n"
              "compiled = [c.cache for c in interface._kernels()[0].with_options(**opts)._compiled.values()] if dsl else []\n"
              "print(json.dumps([dsl, [c.cache for cs in prepare.INDEXED.values() for c in cs], compiled]))\n")

    def run():
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        return json.loads(out.stdout)
    # (what the JIT compiled is kept for the index's key in this process too)
    assert run() == [["fakv.language", "fakv.jitfunction", "fakv.kernels", "fakv.kernels.decode"], ["miss"], ["miss"]]
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 3 and files[0].endswith(".cubin") and files[1].endswith(".json") and files[2] == "index"
    assert len(os.listdir(tmp_path / "index")) == 1
    assert run() == [[], ["index"], []]     # the warm start: no DSL, not even the kernels' package imported
    shutil.rmtree(tmp_path / "index")
    assert run() == [["fakv.language", "fakv.jitfunction", "fakv.kernels", "fakv.kernels.decode"], ["hit"], ["hit"]]


def test_index_follows_the_kernels_files(tmp_path):
    """The index's keys change with any kernel file (here a copy of
    kernels/ put first by FAKV_KERNELS, then with one comment more in
    combine.py), so an edited kernel is never found through a stale
    entry."""
    kernels = tmp_path / "kernels"
    shutil.copytree(os.path.join(ROOT, "kernels"), kernels)
    script = "from fakv import cache; print(cache.kernels_version())"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    version = lambda: subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,  # noqa: E731
                                     text=True, check=True).stdout.strip()
    plain = version()
    assert version() == plain                                   # (the files' stats, not the process)
    env["FAKV_KERNELS"] = str(kernels)
    copied = version()
    with open(kernels / "combine.py", "a") as f:
        f.write("# edited\n")
    appended = version()
    with open(kernels / "combine.py", "r+b") as f:             # the same size, the same inode: its times
        text = f.read()
        f.seek(0)
        f.write(text.replace(b"# edited", b"# Edited"))
    assert os.path.getsize(kernels / "combine.py") == len(text)
    assert len({plain, copied, appended, version()}) == 4


def test_frontend_version_follows_the_frontends_sources(tmp_path):
    """The JIT's disk keys hash the frontend's sources: one character changed in a copy of the package's
    codegen.py (its size the same) keys every kernel anew, so an edited compiler never serves a stale
    entry."""
    shutil.copytree(os.path.join(ROOT, "frontend", "fakv"), tmp_path / "fakv",
                    ignore=shutil.ignore_patterns("__pycache__"))
    script = "from fakv import cache; print(cache.frontend_version())"
    env = dict(os.environ, PYTHONPATH=str(tmp_path), PYTHONDONTWRITEBYTECODE="1")
    version = lambda: subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,  # noqa: E731
                                     text=True, check=True).stdout.strip()
    before = version()
    assert version() == before and "changed" not in before
    codegen = tmp_path / "fakv" / "codegen.py"
    text = codegen.read_bytes()
    codegen.write_bytes(text.replace(b"# ", b"#~", 1))
    after = version()
    assert after != before and "changed" not in after


def test_dump_ir(monkeypatch, capfd):
    monkeypatch.setenv("FAKV_DUMP_IR", "1")

    @fakv.jit
    def tiny(X):
        fl.store(X, fl.full((4,), 2.0), (0,), (1,))
    tiny[(1,)](np.zeros(4, np.float32))
    assert "// fakv IR of tiny" in capfd.readouterr().err


@pytest.mark.parametrize("emit,expect", [("fakv", "fakv.paged_load"), ("fakvgpu", "fakvgpu.warp_specialize"),
                                         ("llvm", "gpu.module @fakv_kernels"), ("ptx", "wgmma.mma_async")])
def test_cli(emit, expect):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    out = subprocess.run([sys.executable, "-m", "fakv.compile", os.path.join(ROOT, "kernels", "decode.py"),
                          "--emit", emit, "--attention", "batch=4,heads=32,kv_heads=8,head_dim=128,page_size=256"],
                         env=env, capture_output=True, text=True, check=True).stdout
    assert expect in out


def test_cli_generic_kernel(tmp_path):
    src = tmp_path / "k.py"
    src.write_text("import fakv\nimport fakv.language as fl\n\n@fakv.jit\n"
                   "def double(X, n, B: fl.constexpr):\n"
                   "    x = fl.load(X, (B,), (0,), (1,), bounds=(n,))\n"
                   "    fl.store(X, x * 2.0, (0,), (1,), bounds=(n,))\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    out = subprocess.run([sys.executable, "-m", "fakv.compile", str(src), "--emit", "fakv", "--arg", "X=*f32",
                          "--arg", "n=i32", "--const", "B=128"], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert "func.func @double(%X: !fakv.ptr<f32>, %n: i32)" in out and "tensor<128xf32>" in out
    bad = subprocess.run([sys.executable, "-m", "fakv.compile", str(src), "--emit", "fakv"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "give --arg NAME=TYPE or --const NAME=VALUE for: X, n, B" in bad.stderr
    # A parameter given as the wrong kind or misspelt (a KeyError traceback, or ignored), a value that is no
    # literal, and the compiler's own error (a traceback) are one-line messages, the source line under the last.
    for flags, message in [
            (["--arg", "X=*f32", "--const", "n=8", "--const", "B=128"],
             "--const n: double has no constexpr parameter 'n' (constexprs: B; give run-time ones with --arg)"),
            (["--arg", "X=*f32", "--arg", "n=i32", "--arg", "B=i32"],
             "--arg B: double has no run-time parameter 'B' (run-time: X, n)"),
            (["--arg", "X=*f32", "--arg", "n=i32", "--const", "B=128", "--const", "BB=3"],
             "--const BB: double has no constexpr parameter 'BB' (constexprs: B; give run-time ones with --arg)"),
            (["--arg", "X=*f32", "--arg", "n=i32", "--const", "B=oops"],
             "--const B=oops: the value must be a Python literal"),
            (["--arg", "X=*f32", "--arg", "n=i32", "--const", "B=100", "--emit", "ptx"],
             "double does not compile:\n" + f"{src}:")]:
        bad = subprocess.run([sys.executable, "-m", "fakv.compile", str(src), "--emit", "fakv", *flags], env=env,
                             capture_output=True, text=True)
        assert bad.returncode == 1 and bad.stderr.startswith("fakv.compile: " + message), bad.stderr
        if "--emit" in flags:                               # the diagnostic, then the kernel's line it names
            lines = bad.stderr.splitlines()
            assert "the GPU lowering needs tiles whose dimensions are powers of two, got 'tensor<100xf32>'" in lines[1]
            assert lines[2].strip().startswith("fl.") and lines[3].strip() == "^" and "Traceback" not in bad.stderr
        else:
            assert bad.stderr.strip() == "fakv.compile: " + message
    bad = subprocess.run([sys.executable, "-m", "fakv.compile", str(src), "--emit", "ptx", "--arg", "X=*f32",
                          "--arg", "n=i32", "--const", "B=128", "--registers", "1,x"], env=env, capture_output=True,
                         text=True)                              # (a bad flag is not the kernel's error)
    assert bad.returncode == 2 and "--registers takes P,C (two ints), got '1,x'" in bad.stderr


def test_cli_shows_the_kernel_the_jit_runs(tmp_path):
    """Without --attention the CLI took neither the kernel's own @fakv.jit options nor any divisibility: its
    PTX was another kernel than a launch's. `--divisible all` marks what the JIT marks for aligned tensors
    and multiples of 16, and the kernel's options are its own."""
    src = tmp_path / "k.py"
    src.write_text("import fakv\nimport fakv.language as fl\n\n@fakv.jit(ctas_per_sm=2)\n"
                   "def axpy(X, Y, n, alpha, B: fl.constexpr):\n"
                   "    x = fl.load(X, (B,), (0,), (1,), bounds=(n,))\n"
                   "    fl.store(Y, x * alpha, (0,), (1,), bounds=(n,))\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    args = [sys.executable, "-m", "fakv.compile", str(src), "--arg", "X=*f32", "--arg", "Y=*f32", "--arg", "n=i32",
            "--arg", "alpha=f32", "--const", "B=128"]
    out = subprocess.run(args + ["--emit", "fakv", "--divisible", "all"], env=env, capture_output=True, text=True,
                         check=True).stdout
    d = "{fakv.divisibility = 16 : i64}"
    assert f"%X: !fakv.ptr<f32> {d}, %Y: !fakv.ptr<f32> {d}, %n: i32 {d}, %alpha: f32)" in out
    out = subprocess.run(args + ["--emit", "fakv", "--divisible", "X"], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert f"%X: !fakv.ptr<f32> {d}, %Y: !fakv.ptr<f32>, %n: i32, %alpha: f32)" in out
    bad = subprocess.run(args + ["--emit", "fakv", "--divisible", "alpha"], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "--divisible alpha: a f32 scalar is not marked" in bad.stderr
    if HAS_ASSEMBLER:                                    # (ptxas or nvJitLink here: the cubin's launch facts)
        def smem(*flags):
            subprocess.run(args + ["--emit", "cubin", "-o", str(tmp_path / "k.cubin"), *flags], env=env,
                           check=True, capture_output=True)
            return json.loads((tmp_path / "k.json").read_text())["kernels"][0]["smem_bytes"]
        assert smem() == 228 * 1024 // 2 - 1024          # the kernel's own ctas_per_sm=2: two an SM
        assert smem("--ctas-per-sm", "0") <= 1024              # (as many as fit)


def test_the_assemblers_switches_key_what_it_assembles(monkeypatch):
    """FAKV_ASSEMBLER changed within a process (and ptx.reset()): the versions in the keys follow, as a fresh
    process's would (they were read once)."""
    from fakv import cache, ptx
    monkeypatch.delenv("FAKV_ASSEMBLER", raising=False)
    ptx.reset()
    before = cache.frontend_version(), cache.kernels_version()
    monkeypatch.setenv("FAKV_ASSEMBLER", "driver")
    ptx.reset()
    try:
        after = cache.frontend_version(), cache.kernels_version()
        assert after[0] != before[0] and after[1] != before[1]
    finally:
        monkeypatch.delenv("FAKV_ASSEMBLER")
        ptx.reset()
    assert (cache.frontend_version(), cache.kernels_version()) == before


@needs_assembler
def test_variant_decode_with_the_default_combine(monkeypatch, tmp_path):
    """with_kernels(decode=...) with several splits: the user's decode and
    fakv's own combine (imported lazily by the API) compile together, and
    the call is not indexed (the index holds fakv's own kernels only)."""
    from fakv import interface
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    decode, combine = interface._kernels()
    combine.clear()
    q = np.zeros((1, 1, 8, 64), NP_BF16)
    k = np.zeros((1, 4096, 2, 64), NP_BF16)
    fakv.with_kernels(decode=decode)(q, k, k, cache_seqlens=200, num_splits=3)
    assert [c.cache for c in combine._compiled.values()] == ["miss"]
    assert not os.path.exists(tmp_path / "index")


@needs_assembler
def test_variant_combine_is_compiled_where_the_splits_would_merge_in_a_cluster(monkeypatch, tmp_path):
    """The smallest calls merge their splits in a thread-block cluster (decode's MERGE, no combine launch):
    with with_kernels(combine=...) they launch the variant's combine instead (it was never compiled: the
    variant skipped on the GPU where the CPU path ran it; a user's review)."""
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import variant
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", "/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    from fakv import prepare
    combine = variant.load_doubling_combine(str(tmp_path)).combine
    jobs, specialise_all = [], prepare.specialise_all
    monkeypatch.setattr(prepare, "specialise_all", lambda todo, index=None: (
        jobs.append([(getattr(fn, "__name__", fn), c.get("MERGE")) for fn, _, c in todo]),
        specialise_all(todo, index))[1])
    q = np.zeros((1, 1, 32, 128), NP_BF16)
    k = np.zeros((1, 512, 8, 128), NP_BF16)
    fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=512, num_splits=4)
    assert jobs[-1] == [("decode", 4)], jobs                  # (the plain call: a cluster, no combine)
    fakv.with_kernels(combine=combine)(q, k, k, cache_seqlens=512, num_splits=4)
    assert jobs[-1] == [("decode", False), ("combine", None)], jobs


@needs_assembler
def test_register_split_option(monkeypatch, tmp_path):
    """@fakv.jit(registers=(P, C)) reaches the lowering: setmaxnreg in the
    PTX, and a different cache entry from the default."""
    from fakv.interface import _kernels
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    decode = _kernels()[0]
    decode.clear()
    launched = dict(stages=3, swap_ab=True, row_boxes=True)     # (what the plan launches: compiled here alone)
    decode.with_options(**launched).clear()
    split = decode.with_options(registers=(24, 168))
    split.with_options(**launched).clear()
    assert split.pack_gqa == decode.pack_gqa and split is decode.with_options(registers=(24, 168))
    q = np.zeros((1, 1, 8, 128), NP_BF16)
    k = np.zeros((4, 64, 2, 128), NP_BF16)
    table = np.arange(4, dtype=np.int32).reshape(1, 4)
    for fn in (decode, split):
        fakv.with_kernels(decode=fn)(q, k, k, cache_seqlens=200, block_table=table, num_splits=1)
    # The API launches the ring depth and form fakv.interface.plan picks (3 stages, swapped, row boxes, here).
    default = next(iter(decode.with_options(**launched)._compiled.values()))
    moved = next(iter(split.with_options(**launched)._compiled.values()))
    assert default.path != moved.path and default.binary != moved.binary
    # (the counts travel as the compiler's arguments, not in the IR: the ones the JIT compiled each with)
    from fakv import _fakv, compiler
    for fn, c in ((split, moved), (decode, default)):
        ptx, _ = _fakv.compile(c.ir, "ptx", *compiler.gpu_args(dict(fn.with_options(**launched).options,
                                                                       chip="sm_90a")))
        dec = re.search(r"setmaxnreg\.dec\.sync\.aligned\.u32\s+24;", ptx)
        inc = re.search(r"setmaxnreg\.inc\.sync\.aligned\.u32\s+168;", ptx)
        assert (bool(dec), bool(inc), ".maxnreg 96" in ptx) == ((True,) * 3 if fn is split else (False,) * 3)
    decode.with_options(stages=3, swap_ab=True).clear()


_LAUNCHED = dict(stages=3, swap_ab=True, row_boxes=True)     # (what the plan launches for _SMALL_PAGED's call)
_SMALL_PAGED = (np.zeros((1, 1, 8, 128), NP_BF16), np.zeros((4, 64, 2, 128), NP_BF16),
                np.arange(4, dtype=np.int32).reshape(1, 4))


def _launched_decodes(*kernels):
    """Each decode kernel's specialisation of one small paged call (q, k, table of _SMALL_PAGED), compiled
    afresh in this process, as the API launches it (its plan's options, _LAUNCHED, added)."""
    q, k, table = _SMALL_PAGED
    for fn in kernels:
        fn.with_options(**_LAUNCHED).clear()
    for fn in kernels:
        fakv.with_kernels(decode=fn)(q, k, k, cache_seqlens=200, block_table=table, num_splits=1)
    return [next(iter(fn.with_options(**_LAUNCHED)._compiled.values())) for fn in kernels]


@needs_assembler
def test_ctas_per_sm_option(monkeypatch, tmp_path):
    """@fakv.jit(ctas_per_sm=N) launches each block with the shared memory
    that leaves room for N a 228 KiB SM and no more (where the kernel needs
    less), from a cache entry of its own; the same binary as without it."""
    from fakv.compiler import with_occupancy
    from fakv.interface import _kernels
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    decode = _kernels()[0]
    two = decode.with_options(ctas_per_sm=2)
    a, b = _launched_decodes(decode, two)
    q, k, table, launched = *_SMALL_PAGED, _LAUNCHED
    needs = a.facts["kernels"][0]["smem_bytes"]
    assert 3 * 2 * 64 * 128 * 2 <= needs < 228 * 1024 // 2 - 1024        # (three stages of K and V: two fit)
    assert b.facts["kernels"][0]["smem_bytes"] == 228 * 1024 // 2 - 1024 > 228 * 1024 // 3
    assert a.path != b.path and a.binary == b.binary
    # From the disk cache: the raised facts again. ctas_per_sm=0 is the kernel's own entry.
    two.with_options(**launched).clear()
    fakv.with_kernels(decode=two)(q, k, k, cache_seqlens=200, block_table=table, num_splits=1)
    hit = next(iter(two.with_options(**launched)._compiled.values()))
    assert hit.cache == "hit" and hit.facts["kernels"][0]["smem_bytes"] == 228 * 1024 // 2 - 1024
    zero = two.with_options(ctas_per_sm=0).with_options(**launched)
    zero.clear()
    fakv.with_kernels(decode=two.with_options(ctas_per_sm=0))(q, k, k, cache_seqlens=200, block_table=table,
                                                              num_splits=1)
    again = next(iter(zero._compiled.values()))
    assert again.cache == "hit" and again.path == a.path and again.facts["kernels"][0]["smem_bytes"] == needs
    # Where the kernel needs more than the share, its own; 0 leaves the facts alone.
    big = {"kernels": [{"smem_bytes": 150000}]}
    assert with_occupancy(big, 2, "sm_90a")["kernels"][0]["smem_bytes"] == 150000
    assert with_occupancy({"kernels": [{"smem_bytes": 70000}]}, 0, "sm_90a")["kernels"][0]["smem_bytes"] == 70000
    assert with_occupancy({"kernels": [{"smem_bytes": 70000}]}, 3, "sm_90a")["kernels"][0]["smem_bytes"] == 76800
    for bad in (-1, 33, True, 2.0):
        with pytest.raises(ValueError, match="ctas_per_sm is a number of blocks an SM"):
            fakv.jit(ctas_per_sm=bad)(decode.fn)


@needs_assembler
def test_warm_pages_option(monkeypatch, tmp_path):
    """@fakv.jit(warm_pages=N) reaches the lowering: the kernel carries fakv.warm_pages = N, its PTX prefetches
    into L2 beside its copies (the default's does not), from a cache entry of its own; bad values are refused."""
    from fakv.interface import _kernels
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    decode = _kernels()[0]
    a, b = _launched_decodes(decode, decode.with_options(warm_pages=2))
    assert "fakv.warm_pages = 2 : i32" in b.ir and "warm_pages" not in a.ir and a.path != b.path
    from fakv import _fakv
    ptxs = [_fakv.compile(c.ir, "ptx", 3, True, "sm_90a", 0, 0)[0] for c in (a, b)]
    assert "prefetch.global.L2" not in ptxs[0]
    assert ptxs[1].count("prefetch.global.L2") >= 2              # (K's and V's, a box of the tile two ahead)
    for bad in (-1, 9, True, 2.0):
        with pytest.raises(ValueError, match="warm_pages is a number of tiles ahead"):
            fakv.jit(warm_pages=bad)(decode.fn)
    for bad in ("no", 1, None):             # (the binding's "incompatible function arguments" at the launch)
        with pytest.raises(ValueError, match="warp_specialize is True or False"):
            fakv.jit(warp_specialize=bad)(decode.fn)
    for bad in (0, 9, 2.0, None):          # (stages=0 was the pipeline's "-:1:1: stages must be in [1, 8]")
        with pytest.raises(ValueError, match=r"stages is a number of ring stages in \[1, 8\]"):
            decode.with_options(stages=bad)


def test_cli_cubin(tmp_path):
    """--emit cubin: the PTX assembled in process (fakv.ptx), with the
    launch facts beside it."""
    from fakv import ptx
    try:
        ptx.assembler()
    except ptx.AssemblerError:
        pytest.skip("needs nvJitLink or ptxas")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    out = tmp_path / "decode.cubin"
    subprocess.run([sys.executable, "-m", "fakv.compile", os.path.join(ROOT, "kernels", "combine.py"), "--emit",
                    "cubin", "-o", str(out), "--attention", "batch=2,heads=32,kv_heads=8,head_dim=128,num_splits=3"],
                   env=env, check=True, capture_output=True)
    assert out.read_bytes()[:4] == b"\x7fELF"
    facts = json.loads((tmp_path / "decode.json").read_text())
    assert facts["kernels"][0]["dependent_launch"] is True     # launched programmatically (runtime)


def test_bad_tuning_variables_are_named():
    """FAKV_WARM_PAGES / FAKV_ADAPTIVE_SPLITS not an integer in range: an error naming the variable (`-1` and
    `abc` were passed over, `²` gave int()'s ValueError, 9 the kernel option's error without the variable)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    for name, value in (("FAKV_WARM_PAGES", "-1"), ("FAKV_WARM_PAGES", "9"), ("FAKV_WARM_PAGES", "\u00b2"),
                        ("FAKV_ADAPTIVE_SPLITS", "abc"), ("FAKV_ADAPTIVE_SPLITS", "65")):
        run = subprocess.run([sys.executable, "-c", "import fakv.interface"], env=dict(env, **{name: value}),
                             capture_output=True, text=True)
        assert run.returncode != 0 and f"{name}={value!r}: an integer in" in run.stderr, (name, value, run.stderr)
    run = subprocess.run([sys.executable, "-c", "from fakv import interface; print(interface._WARM_PAGES, "
                          "interface._ADAPTIVE_SPLITS)"], env=dict(env, FAKV_WARM_PAGES="2", FAKV_ADAPTIVE_SPLITS="0"),
                         capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["2", "0"]


def test_cli_cubin_named_like_its_facts_is_refused(tmp_path):
    """-o k.json with --emit cubin: the facts (k.json) overwrote the cubin, and the command said it wrote both."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    run = subprocess.run([sys.executable, "-m", "fakv.compile", os.path.join(ROOT, "kernels", "combine.py"),
                          "--emit", "cubin", "-o", str(tmp_path / "k.json")], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "extension replaced by .json" in run.stderr
    assert not list(tmp_path.iterdir())


@needs_assembler
def test_cli_attention_takes_the_calls_options(tmp_path):
    """--attention compiles decode with the options the call launches it with (fakv.interface.plan's ring
    depth and blocks an SM), unless --stages / --ctas-per-sm say otherwise."""
    from fakv import interface
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    out = tmp_path / "decode.cubin"

    def smem(call, *flags):
        subprocess.run([sys.executable, "-m", "fakv.compile", os.path.join(ROOT, "kernels", "decode.py"), "--emit",
                        "cubin", "-o", str(out), "--attention", call, *flags], env=env, check=True,
                       capture_output=True)
        return json.loads((tmp_path / "decode.json").read_text())["kernels"][0]["smem_bytes"]
    waves = "batch=128,heads=32,kv_heads=8,head_dim=128,page_size=256,seqlen_k=8192,causal=True,num_splits=0"
    one_wave = "batch=32,heads=32,kv_heads=8,head_dim=128,page_size=256,seqlen_k=8192,causal=True,num_splits=0"
    planned = interface.plan(128, 1, 32, 8, 128, "bf16", True, 256, 8192, True, 0, 132, 50 << 20)
    assert planned["decode_options"]["stages"] == 2 and planned["decode_options"]["ctas_per_sm"] == 2
    assert smem(waves) == 228 * 1024 // 2 - 1024                      # two an SM
    two_stages = smem(one_wave)
    assert 2 * 2 * 64 * 128 * 2 <= two_stages < 3 * 2 * 64 * 128 * 2   # two stages, as many an SM as fit
    assert smem(waves, "--ctas-per-sm", "0") == two_stages
    assert smem(waves, "--ctas-per-sm", "0", "--stages", "3") >= 3 * 2 * 64 * 128 * 2


@pytest.mark.parametrize("kernel", ["decode.py", "combine.py", "append.py"])
def test_kernels_wait_for_the_grids_before_them(kernel):
    """fakvgpu-dependent-launch: each kernel's first instructions wait for
    the kernels before it and then let the next one launch; no global or
    shared memory access comes before the wait (the runtime launches these
    kernels while the previous one finishes)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    shapes = "batch=2,heads=32,kv_heads=8,head_dim=128,page_size=256,num_splits=3"
    cmd = [sys.executable, "-m", "fakv.compile", os.path.join(ROOT, "kernels", kernel), "--emit", "ptx"]
    if kernel == "append.py":
        cmd += ["--arg", "Q=*bf16", "--arg", "KNew=*bf16", "--arg", "VNew=*bf16", "--arg", "K=*bf16", "--arg",
                "V=*bf16", "--arg", "QOut=*bf16", "--arg", "Table=*i32", "--arg", "Seqlens=*i32", "--arg",
                "BatchIdx=*i32", "--arg", "Cos=*bf16", "--arg", "Sin=*bf16", "--arg", "Errors=*i32"]
        cmd += [f"--arg={n}=i32" for n in (
            "q_batch_stride q_seq_stride q_head_stride qo_batch_stride qo_seq_stride qo_head_stride "
            "new_batch_stride new_seq_stride new_head_stride page_stride row_stride head_stride table_stride "
            "cos_stride seqlen_q seqlen_new kv_heads head_dim rotary_dim page_size num_pages capacity "
            "rotary_rows").split()]
        cmd += [f"--const={c}" for c in ("HEAD_DIM=128", "PAGE_SIZE=256", "BATCH_IDX=False", "APPEND=True",
                                         "ROTARY=True", "INTERLEAVED=False", "Q_ROWS=True")]
    else:
        cmd += ["--attention", shapes]
    ptx = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    body = ptx[ptx.index(".entry"):]
    wait = body.index("griddepcontrol.wait;")
    assert wait < body.index("griddepcontrol.launch_dependents;")
    # Any instruction that touches global or shared memory, whatever its qualifiers (st.volatile.global,
    # cp.async.cg.shared.global, ld.relaxed.gpu.global, mbarrier.init.shared, prefetch.global...): not ld.param.
    access = re.compile(r"^\s*(?:@%p\d+\s+)?(?:ld|st|cp|atom|red|mbarrier|prefetch)\b[\w.:]*?"
                        r"\.(?:global|shared|bulk|async)\b", re.M)
    first_access = access.search(body)
    assert first_access and wait < first_access.start(), first_access
    # (the pattern sees what an earlier one missed: the error word's volatile store, a gather's cp.async)
    for missed in ("st.volatile.global.u32 [%rd1], %r1;", "cp.async.cg.shared.global [%r1], [%rd1], 16;",
                   "ld.relaxed.gpu.global.u32 %r1, [%rd1];", "@%p1 st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};"):
        assert access.search("\n\t" + missed + "\n"), missed


def test_kernel_file_gone_before_the_first_launch(tmp_path):
    """A kernel's source is read when it is decorated: its file (a temporary
    one, say) may be gone when it is first compiled."""
    import importlib.util
    path = tmp_path / "gone.py"
    path.write_text("import fakv\nimport fakv.language as fl\n\n@fakv.jit\ndef fill(X, B: fl.constexpr):\n"
                    "    fl.store(X, fl.full((B,), 3.0), (0,), (1,))\n")
    spec = importlib.util.spec_from_file_location("gone", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path.unlink()
    import linecache
    linecache.clearcache()
    x = np.zeros(8, np.float32)
    mod.fill[(1,)](x, B=8)
    assert (x == 3).all()


def test_cli_refuses_bad_attention_values_and_files():
    """--attention's values are checked (dtype=float32 compiled f16; `causal=yes` was a traceback), and a
    missing file is a message."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    decode = os.path.join(ROOT, "kernels", "decode.py")
    for attention, message in (("dtype=float32", "--attention dtype=float32: bf16 or f16"),
                               ("causal=yes", "--attention causal=yes: True or False (causal=True)"),
                               ("page_size=abc", "--attention page_size=abc: an integer"),
                               ("batch=2.5", "--attention batch=2.5: an integer"),
                               # (session 44's review of the tools: tracebacks from numpy or the API before)
                               ("batch=0", "--attention batch=0: at least 1"),
                               ("page_size=-16", "--attention page_size=-16: at least 0"),
                               ("heads=8,kv_heads=3", "--attention heads=8,kv_heads=3: flash_attn_with_kvcache: "
                                                      "heads (8) must be a multiple of kv heads (3)")):
        bad = subprocess.run([sys.executable, "-m", "fakv.compile", decode, "--emit", "fakv", "--attention", attention],
                             env=env, capture_output=True, text=True)
        assert bad.returncode == 1 and bad.stderr.strip() == "fakv.compile: " + message, bad.stderr
    out = subprocess.run([sys.executable, "-m", "fakv.compile", decode, "--emit", "fakv", "--attention",
                          "dtype=float16"], env=env, capture_output=True, text=True, check=True).stdout
    assert "%Q: !fakv.ptr<f16>" in out
    bad = subprocess.run([sys.executable, "-m", "fakv.compile", "no-such-file.py", "--emit", "fakv"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.strip() == "fakv.compile: no file 'no-such-file.py'"
    readme = os.path.join(ROOT, "README.md")                          # (an AttributeError traceback before)
    bad = subprocess.run([sys.executable, "-m", "fakv.compile", readme, "--emit", "fakv"], env=env,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.strip() == f"fakv.compile: {readme!r} is not a Python file (kernels " \
        "are @fakv.jit functions in a .py)", bad.stderr
    bad = subprocess.run([sys.executable, "-m", "fakv.compile", decode, "--emit", "fakv", "--attention", "batch=2",
                          "--divisible", "Q"], env=env, capture_output=True, text=True)
    assert bad.returncode == 1 and "--divisible is for --arg / --const" in bad.stderr


def test_cli_kernel_files_that_fail_and_options_that_do_not_apply(tmp_path):
    """Session 57's review of the tools: a kernel file with a syntax error or a failing import was a traceback
    through importlib; --stages 0 or any GPU option with --emit fakv was ignored (exit 0); -o '' wrote hidden
    files; --attention of a 64 GiB cache was numpy's ArrayMemoryError (the call needs only the shapes)."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    decode = os.path.join(ROOT, "kernels", "decode.py")

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "fakv.compile", *map(str, args)], env=env, capture_output=True,
                              text=True, cwd=tmp_path)
    broken = tmp_path / "broken.py"
    broken.write_text("import fakv\n@fakv.jit\ndef k(X:\n    pass\n")
    bad = cli(broken, "--emit", "fakv")
    assert bad.returncode == 1 and bad.stderr.strip() == f"fakv.compile: {broken}:3: SyntaxError: '(' was never closed"
    failing = tmp_path / "failing.py"
    failing.write_text("import fakv\nimport no_such_module_anywhere\n")
    bad = cli(failing, "--emit", "fakv")
    assert bad.returncode == 1 and bad.stderr.strip() == (f"fakv.compile: {failing}:2: importing it failed: "
                                                          "ModuleNotFoundError: No module named 'no_such_module_anywhere'")
    for args, message in (
            (["--stages", "0"], "argument --stages: invalid choice: 0 (choose from 1, 2, 3, 4, 5, 6, 7, 8)"),
            (["--stages", "3"], "--stages: options of the GPU compilation (--emit fakvgpu, llvm, ptx or cubin), not "
                                "of --emit fakv"),
            (["--no-warp-specialize", "--ctas-per-sm", "1"], "--no-warp-specialize, --ctas-per-sm: options of the GPU"),
            (["-o", ""], "-o takes a file name, got ''")):
        bad = cli(decode, "--emit", "fakv", "--attention", "batch=1", *args)
        assert bad.returncode == 2 and message in bad.stderr, bad.stderr
    assert not list(tmp_path.glob(".*"))
    bad = cli(decode, "--emit", "fakvgpu", "--attention", "batch=1", "--registers", "99999999999,8")
    assert bad.returncode == 1 and bad.stderr.strip() == ("fakv.compile: registers 99999999999,8: out of range (0, "
                                                          "or a multiple of 8 in [24, 256]: setmaxnreg)")
    bad = cli(decode, "--emit", "fakv", "--attention", "batch=1", "--ctas-per-sm", "0")
    assert bad.returncode == 2 and "--ctas-per-sm: options of the GPU compilation" in bad.stderr
    bad = cli(decode, "--emit", "fakv", "--attention", "batch=4294967296,seqlen_k=4294967296")
    assert bad.returncode == 1 and bad.stderr.startswith("fakv.compile: --attention: cannot map"), bad.stderr
    for shape in ("batch=256,seqlen_k=131072", "batch=256,seqlen_k=131072,page_size=256"):     # 64 GiB a cache
        out = cli(decode, "--emit", "fakv", "--attention", shape)
        assert out.returncode == 0 and "func.func @decode(" in out.stdout, out.stderr


def test_cli_refuses_bad_arg_lists_and_outputs(tmp_path):
    """--arg / --const without `=` or given twice (the last one won, silently), and an -o that cannot be written
    (a FileNotFoundError traceback): each a message."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "frontend"))
    src = tmp_path / "mini.py"
    src.write_text("import fakv, fakv.language as fl\n@fakv.jit\ndef k(Y, n, B: fl.constexpr):\n"
                   "    fl.store(Y, fl.zeros((B,)), (0,), (1,))\n")
    base = [sys.executable, "-m", "fakv.compile", str(src)]
    for extra, message in ((["--arg", "Y", "--arg", "n=i32", "--const", "B=4"], "--arg Y: give NAME=TYPE"),
                           (["--arg", "Y=*f32", "--arg", "n=i32", "--arg", "n=i64", "--const", "B=4"],
                            "--arg n=i64: n is given more than once"),
                           (["--arg", "Y=*f32", "--arg", "n=i32", "--const", "B"], "--const B: give NAME=VALUE"),
                           (["--arg", "Y=*f99", "--arg", "n=i32", "--const", "B=4"],      # (an MLIR parse error)
                            "unknown type '*f99' (a scalar i1, i8, i32, i64, f32, f16, bf16, or a pointer to one: "
                            "*bf16, ...)"),
                           (["--arg", "Y=*f32", "--arg", "n=i32", "--const", "B=4", "--emit", "fakv", "-o",
                             str(tmp_path / "no" / "such" / "dir.mlir")],
                            f"cannot write {str(tmp_path / 'no' / 'such' / 'dir.mlir')!r}: No such file or directory")):
        bad = subprocess.run(base + extra, env=env, capture_output=True, text=True)
        assert bad.returncode == 1 and bad.stderr.strip() == "fakv.compile: " + message, bad.stderr
    good = subprocess.run(base + ["--arg", "Y=*f32", "--arg", "n=i32", "--const", "B=4", "--emit", "fakv", "-o",
                                  str(tmp_path / "k.mlir")], env=env, capture_output=True, text=True)
    assert good.returncode == 0 and "fakv.store" in (tmp_path / "k.mlir").read_text(), good.stderr


@fakv.jit
def two_pipelined_loops(Q, K, O, seqlen, cap, ps, rs, hs):
    q = fl.load(Q, (64, 64), (0, 0), (64, 1))
    acc = fl.zeros((64, 64), fl.float32)
    for j in fl.range(0, seqlen, 64):  # 1st
        acc = fl.dot(q, fl.paged_load(K, 0, j, 64, 64, seqlen, cap, 1, (ps, rs, hs), page=0), acc)
    for j in fl.range(0, seqlen, 64):  # 2nd
        acc = fl.dot(q, fl.paged_load(K, 0, j, 64, 64, seqlen, cap, 1, (ps, rs, hs), page=0), acc)
    fl.store(O, acc, (0, 0), (64, 1))


def test_two_pipelined_loops_are_refused_at_the_second(monkeypatch, tmp_path):
    """Warp specialization takes one pipelined loop a kernel: the error names the second loop (it named
    the kernel's `def`, a GPU fuzz found) and the way out; without warp specialization the kernel compiles."""
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    args = (np.zeros(4096, NP_BF16), np.zeros(16384, NP_BF16), np.zeros(4096, np.float32), 200, 256, 16384, 64, 64)
    with pytest.raises(fakv.CompilationError,
                       match=r"one pipelined loop per kernel, found 2 \(@fakv.jit\(warp_specialize=False\)") as e:
        two_pipelined_loops[(1,)](*args)
    # the loops' `for` lines (they named the last line of each body)
    assert f"{__file__}:{line_of(two_pipelined_loops.fn, '# 2nd')}:5: error" in str(e.value)
    assert f"{__file__}:{line_of(two_pipelined_loops.fn, '# 1st')}:5: note: the first" in str(e.value)
    from fakv import _fakv
    from fakv.ir import PtrType, ScalarType
    types = dict(Q=PtrType("bf16"), K=PtrType("bf16"), O=PtrType("f32"),
                 **{p: ScalarType("i32") for p in ("seqlen", "cap", "ps", "rs", "hs")})
    ir, _ = two_pipelined_loops._ir({}, types, ())
    ptx, _ = _fakv.compile(ir, "ptx", 2, False, "sm_90a", 0, 0)
    assert ptx.count("wgmma.mma_async") >= 2 and "cp.async" in ptx


@fakv.jit(registers=(40, 232))
def wide_dot_few_registers(Q, K, O, seqlen, cap, ps, rs, hs):
    q = fl.load(Q, (64, 64), (0, 0), (64, 1))
    acc = fl.zeros((64, 256), fl.float32)
    for j in fl.range(0, seqlen, 64):
        acc = fl.dot(q, fl.paged_load(K, 0, j, 64, 256, seqlen, cap, 1, (ps, rs, hs), page=0), acc)
    fl.store(O, acc, (0, 0), (256, 1))


@needs_assembler
def test_too_few_registers_for_a_wide_dot_says_which_option(monkeypatch, tmp_path):
    """An m64n256 wgmma needs more registers than registers=(40, 232) leaves the kernel (.maxnreg): ptxas's
    refusal comes with the option that caused it (a GPU fuzz found it bare)."""
    monkeypatch.setenv("FAKV_COMPILE_ONLY", "1")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PATH", "/usr/local/cuda/bin:" + os.environ.get("PATH", ""))
    args = (np.zeros(4096, NP_BF16), np.zeros(65536, NP_BF16), np.zeros(16384, np.float32), 200, 256, 65536, 256, 256)
    with pytest.raises(fakv.CompilationError, match=r"(?s)Insufficient registers.*registers=\(40, 232\)\) sets"):
        wide_dot_few_registers[(1,)](*args)


FAKV_COMPILE = os.path.join(os.environ.get("FAKV_BUILD_DIR", os.path.join(ROOT, "build")), "bin", "fakv-compile")


@pytest.mark.skipif(not os.path.exists(FAKV_COMPILE), reason="needs the build's fakv-compile")
def test_fakv_compile_refuses_bad_chips_formats_and_empty_inputs(tmp_path):
    """fakv-compile checks --chip and --format as fakv-opt's fakv-to-cubin does (an empty --chip crashed in
    NVVM's target verifier; --format=xyz wrote a cubin and exited 0), and an input without a kernel is an
    error, not an empty cubin (session 44's review of the tools)."""
    tool = FAKV_COMPILE
    decode = os.path.join(ROOT, "kernels", "decode.mlir")
    for flag, message in (("--chip=", "chip must be sm_90a (the kernels use wgmma and TMA), got ''"),
                          ("--format=xyz", "format must be isa (PTX), bin (cubin) or fatbin, got 'xyz'")):
        bad = subprocess.run([tool, decode, "-o", str(tmp_path / "d"), flag], capture_output=True, text=True)
        assert bad.returncode == 1 and message in bad.stderr and not (tmp_path / "d.cubin").exists(), bad.stderr
    (tmp_path / "empty.mlir").write_text("module {}\n")
    bad = subprocess.run([tool, str(tmp_path / "empty.mlir"), "-o", str(tmp_path / "e")], capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "holds no kernel" in bad.stderr and not (tmp_path / "e.cubin").exists()


@pytest.mark.skipif(not os.path.exists(FAKV_COMPILE), reason="needs the build's fakv-compile")
def test_fakv_compile_says_errors_in_a_line_and_names_its_outputs(tmp_path):
    """Session 57's review of the tools: a pass's error printed the whole module after it (--stages=9: 148
    lines); --format=fatbin wrote a fatbin named .cubin; -o '' wrote hidden files; without ptxas, 5,054 lines
    of IR came before the message; --help listed LLVM's back-end options, not the tool's."""
    tool = FAKV_COMPILE
    combine = os.path.join(ROOT, "kernels", "combine.mlir")
    bad = subprocess.run([tool, combine, "-o", str(tmp_path / "c"), "--stages=9", "--format=isa"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and len(bad.stderr.splitlines()) == 1, bad.stderr
    assert "stages must be in [1, 8]" in bad.stderr
    bad = subprocess.run([tool, combine, "-o", ""], capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 1 and bad.stderr == "fakv-compile: -o takes a path, got ''\n" and not list(tmp_path.iterdir())
    helped = subprocess.run([tool, "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "--stages" in helped.stdout and "K/V ring depth" in helped.stdout
    assert "amdgpu" not in helped.stdout.lower() and len(helped.stdout.splitlines()) < 40, helped.stdout
    # No ptxas where gpu-module-to-binary would look: said first, in a line (unless the toolkit path MLIR was built
    # with holds one).
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    (tmp_path / "bare").mkdir()
    bad = subprocess.run([tool, combine, "-o", str(tmp_path / "bare" / "c")], capture_output=True, text=True, env=env)
    if bad.returncode:
        assert bad.stderr.startswith("fakv-compile: --format=bin needs ptxas") and len(bad.stderr.splitlines()) == 1
    ptxas = shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    if os.access(ptxas, os.X_OK) and shutil.which("fatbinary", path=os.path.dirname(ptxas)):
        (tmp_path / "fat").mkdir()
        env = dict(os.environ, PATH=os.path.dirname(ptxas) + ":" + os.environ.get("PATH", ""))
        subprocess.run([tool, combine, "-o", str(tmp_path / "fat" / "f"), "--format=fatbin"], check=True, env=env)
        assert sorted(p.name for p in (tmp_path / "fat").iterdir()) == ["f.fatbin", "f.json"]
        assert (tmp_path / "fat" / "f.fatbin").read_bytes()[:4] == bytes.fromhex("50ed55ba")     # a fatbin's magic
        # fatbinary too is looked for first (with ptxas alone on PATH: MLIR's message after the whole pipeline)
        (tmp_path / "only").mkdir()
        os.symlink(ptxas, tmp_path / "only" / "ptxas")
        env = {"PATH": f"{tmp_path / 'only'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
        bad = subprocess.run([tool, combine, "-o", str(tmp_path / "only" / "f"), "--format=fatbin"],
                             capture_output=True, text=True, env=env)
        if bad.returncode:
            assert bad.stderr.startswith("fakv-compile: --format=fatbin needs fatbinary"), bad.stderr
