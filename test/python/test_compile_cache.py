"""Compiling for the GPU without a GPU: PTX assembled in process
(fakv.ptx), kernels compiled in parallel threads and processes, and the
disk cache they share (keyed on the kernel source, checksummed)."""
import concurrent.futures
import hashlib
import json
import os
import stat
import subprocess
import sys
import warnings

import pytest

from fakv import _fakv, cache, ptx
from needs import needs_assembler

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# One flash_attn_with_kvcache call in compile-only mode; prints how each kernel was found: through the
# cache's index (the kernels not imported), or by the JIT (a disk-cache hit, or a miss: compiled).
SCRIPT = """
import sys, numpy as np, ml_dtypes, fakv
from fakv import interface, prepare
q = np.zeros((1, 1, 8, 64), ml_dtypes.bfloat16); k = np.zeros((1, 4096, 2, 64), ml_dtypes.bfloat16)
fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=200, num_splits=3)
found = {id(c): c for cs in prepare.INDEXED.values() for c in cs}
if "fakv.kernels.decode" in sys.modules:
    decode, combine = interface._kernels()
    found.update((id(c), c) for fn in (decode, *decode._variants.values(), combine) for c in fn._compiled.values())
print(sorted(c.cache for c in found.values()))
"""


def run_script(cache_dir, **env):
    env = dict(os.environ, FAKV_CACHE_DIR=str(cache_dir), FAKV_COMPILE_ONLY="1",
               PYTHONPATH=os.path.join(ROOT, "frontend"), **env)
    return subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def entries(cache_dir):
    return sorted(f[:-5] for f in os.listdir(cache_dir) if f.endswith(".json"))


@needs_assembler
def test_assemblers_make_cubins():
    """Every assembler found here turns the decode kernel's PTX into an ELF
    cubin with the kernel in it."""
    ir = open(os.path.join(ROOT, "kernels", "decode.mlir")).read()
    text, facts = _fakv.compile(ir, "ptx", 2, True, "sm_90a", 0, 0)
    name = json.loads(facts)["kernels"][0]["name"]
    made = 0
    for kind in ("nvjitlink", "ptxas"):
        os.environ["FAKV_ASSEMBLER"] = kind
        ptx.reset()
        try:
            cubin = ptx.assemble(text)
        except ptx.AssemblerError as e:
            if "no PTX assembler found" in str(e):
                continue
            raise
        finally:
            del os.environ["FAKV_ASSEMBLER"]
            ptx.reset()
        assert cubin[:4] == b"\x7fELF" and name.encode() in cubin
        made += 1
    assert made >= 1
    with pytest.raises(ptx.AssemblerError, match="could not assemble"):
        ptx.assemble(text.replace(".entry", ".bogus_directive"))
    os.environ["FAKV_ASSEMBLER"] = "nvcc"               # (a name it does not know: said so, not "none found")
    ptx.reset()
    try:
        with pytest.raises(ptx.AssemblerError, match="FAKV_ASSEMBLER=nvcc: nvjitlink, ptxas or driver"):
            ptx.assemble(text)
    finally:
        del os.environ["FAKV_ASSEMBLER"]
        ptx.reset()


def test_an_assembler_asked_for_by_path_is_not_passed_over(monkeypatch):
    """FAKV_NVJITLINK / FAKV_PTXAS that do not load or run are errors naming them (a typo fell back to another
    assembler without a word)."""
    for env, match in ((dict(FAKV_ASSEMBLER="nvjitlink", FAKV_NVJITLINK="/nonexistent/libnvJitLink.so"),
                        "FAKV_NVJITLINK=/nonexistent"),
                       (dict(FAKV_ASSEMBLER="ptxas", FAKV_PTXAS="/nonexistent/ptxas"),
                        "FAKV_PTXAS=/nonexistent/ptxas: not an executable file")):
        with monkeypatch.context() as m:
            for k, v in env.items():
                m.setenv(k, v)
            ptx.reset()
            try:
                with pytest.raises(ptx.AssemblerError, match=match):
                    ptx.assembler()
            finally:
                ptx.reset()


def test_threads_compile_in_parallel():
    """Two kernels compiled at once in two threads (the GIL released, a
    context per thread) give exactly what they give one after the other."""
    sources = [open(os.path.join(ROOT, "kernels", f)).read() for f in ("decode.mlir", "combine.mlir")]
    one_by_one = [_fakv.compile(ir, "llvm", 2, True, "sm_90a", 0, 0) for ir in sources]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for _ in range(2):
            together = list(pool.map(lambda ir: _fakv.compile(ir, "llvm", 2, True, "sm_90a", 0, 0), sources))
            assert together == one_by_one


@needs_assembler
def test_processes_share_one_cache(tmp_path):
    """Four processes compiling the same kernels into one empty cache at
    once all succeed and leave whole entries and one index entry; a fifth
    finds every kernel there through the index."""
    procs = [run_script(tmp_path) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        assert out.strip() in ("['miss', 'miss']", "['hit', 'miss']", "['hit', 'hit']", "['miss', 'hit']")
    keys = entries(tmp_path)
    assert len(keys) == 2 and not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert len(os.listdir(tmp_path / "index")) == 1
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAKV_CACHE_DIR", str(tmp_path))
        assert all(cache.load(k) is not None for k in keys)
    p = run_script(tmp_path)
    out, err = p.communicate(timeout=600)
    assert out.strip() == "['index', 'index']", err


@needs_assembler
def test_corrupt_entries_are_recompiled(tmp_path):
    """A truncated cubin (its checksum no longer matches) or a JSON that
    does not parse is a miss: compiled again and replaced. The index holds
    its own copies of the cubins (one file read on a warm start), each
    checksummed: a changed byte makes the whole index entry a miss."""
    p = run_script(tmp_path)
    assert p.communicate(timeout=600)[0].strip() == "['miss', 'miss']"
    first, second = entries(tmp_path)
    (index,) = os.listdir(tmp_path / "index")
    data = bytearray((tmp_path / "index" / index).read_bytes())
    data[-1] ^= 0xFF                                   # the last cubin's last byte
    (tmp_path / "index" / index).write_bytes(bytes(data))
    with open(tmp_path / (first + ".cubin"), "r+b") as f:
        f.truncate(100)
    (tmp_path / (second + ".json")).write_text("{not json")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FAKV_CACHE_DIR", str(tmp_path))
        assert cache.load(first) is None and cache.load(second) is None
        assert cache.load_index(index[:-4]) is None
        p = run_script(tmp_path)
        assert p.communicate(timeout=600)[0].strip() == "['miss', 'miss']"
        assert cache.load(first) is not None and cache.load(second) is not None
        items = cache.load_index(index[:-4])
        assert [(e, b) for e, _, _, b, _ in items] == [(k, cache.load(k)[0]) for k in (e for e, *_ in items)]
    p = run_script(tmp_path)
    assert p.communicate(timeout=600)[0].strip() == "['index', 'index']"
    (tmp_path / "index" / index).write_bytes(bytes(data[:50]))  # a truncated index entry: the JIT's disk cache
    p = run_script(tmp_path)
    assert p.communicate(timeout=600)[0].strip() == "['hit', 'hit']"


@needs_assembler
def test_unwritable_cache_warns_and_runs(tmp_path):
    """A cache directory that cannot be written: one warning, and the
    kernels still compile (kept in memory)."""
    (tmp_path / "a-file").write_text("")
    p = run_script(tmp_path / "a-file" / "cache")             # cannot be created, even by root
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert out.strip() == "['miss', 'miss']" and err.count("cannot write the kernel cache") == 1


def test_source_key_follows_the_kernel():
    """The disk cache's key changes with a kernel's source, with the
    kernels it calls and with the plain globals it names, and with nothing
    else."""
    import types
    src = ("import fakv\nimport fakv.language as fl\nN = {n}\n\n@fakv.jit\ndef helper(x):\n    return x * {k}\n\n"
           "@fakv.jit\ndef kernel(X):\n    fl.store(X, helper(fl.full((N,), 1.0)), (0,), (1,))\n")

    def key(n, k, tmp):
        path = os.path.join(tmp, f"k_{n}_{k}.py")
        with open(path, "w") as f:
            f.write(src.format(n=n, k=k))
        mod = types.ModuleType("m")
        mod.__file__ = path
        exec(compile(src.format(n=n, k=k), path, "exec"), mod.__dict__)
        return mod.kernel.source_key()

    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        base = key(4, 2.0, tmp)
        assert key(4, 2.0, tmp) == base
        assert key(8, 2.0, tmp) != base                         # a global it names
        assert key(4, 3.0, tmp) != base                         # a kernel it calls


def test_source_key_follows_kernels_in_a_container():
    """A kernel picking a helper out of a global tuple (`OPS[0](x)`): the tuple was keyed by repr(), an object's
    address (a miss in every process; a stale cubin where the address repeated): now by the helpers' source keys
    and a plain function's code."""
    import types
    import tempfile
    src = ("import fakv\nimport fakv.language as fl\n\n@fakv.jit\ndef scale(x):\n    return x * {k}\n\n"
           "def plain(v):\n    return v + {k}\n\nOPS = (scale, {{'f': plain}})\n\n"
           "@fakv.jit\ndef kernel(X):\n    fl.store(X, OPS[0](fl.full((4,), 1.0)), (0,), (1,))\n")

    def key(k, tmp, name):
        path = os.path.join(tmp, f"{name}.py")
        with open(path, "w") as f:
            f.write(src.format(k=k))
        mod = types.ModuleType(name)
        mod.__file__ = path
        exec(compile(src.format(k=k), path, "exec"), mod.__dict__)
        return mod.kernel.source_key()

    with tempfile.TemporaryDirectory() as tmp:
        assert key(2.0, tmp, "a") == key(2.0, tmp, "a")          # (other objects, other addresses: one key)
        assert key(2.0, tmp, "a") != key(3.0, tmp, "a")          # the helper edited: another key


def test_source_key_follows_a_modules_kernel(tmp_path, monkeypatch):
    """A kernel calling another module's kernel as `module.kernel(...)`:
    its key changes with that kernel's source (it had hashed the module's
    name only: an edited helper module kept the old cubin)."""
    import types
    helper_src = "import fakv\n\n@fakv.jit\ndef kern(x):\n    return x * {k}\n\nSCALE = {k}\n"
    kernel_src = ("import fakv\nimport fakv.language as fl\nimport fakv_test_helpers as helpers\n\n@fakv.jit\n"
                  "def kernel(X):\n    fl.store(X, helpers.kern(fl.full((4,), 1.0)), (0,), (1,))\n")

    def key(k):
        helper = types.ModuleType("fakv_test_helpers")
        helper.__file__ = str(tmp_path / f"helpers_{k}.py")
        with open(helper.__file__, "w") as f:
            f.write(helper_src.format(k=k))
        exec(compile(helper_src.format(k=k), helper.__file__, "exec"), helper.__dict__)
        monkeypatch.setitem(sys.modules, "fakv_test_helpers", helper)
        mod = types.ModuleType("m")
        mod.__file__ = str(tmp_path / f"kernel_{k}.py")
        with open(mod.__file__, "w") as f:
            f.write(kernel_src)
        exec(compile(kernel_src, mod.__file__, "exec"), mod.__dict__)
        return mod.kernel.source_key()

    assert key(2.0) != key(3.0)


def test_a_rewritten_kernel_file_is_read_again(tmp_path):
    """A kernel file rewritten and executed again (a reload, a notebook)
    gives the new text and key, though Python's line cache held the old
    one; a variant (with_options) keeps its kernel's text."""
    import linecache
    import types
    src = "import fakv\nimport fakv.language as fl\n\n@fakv.jit\ndef kernel(X):\n    fl.store(X, fl.full((4,), {v}), (0,), (1,))\n"
    path = str(tmp_path / "rewritten.py")

    def load(v):
        with open(path, "w") as f:
            f.write(src.format(v=v))
        os.utime(path, ns=(v * 10**9, v * 10**9))              # (another mtime, whatever the clock)
        mod = types.ModuleType("rewritten")
        mod.__file__ = path
        exec(compile(src.format(v=v), path, "exec"), mod.__dict__)
        return mod.kernel

    first = load(1)
    assert linecache.getlines(path) and "1)" in "".join(first._file_lines)
    second = load(2)
    assert "fl.full((4,), 2)" in "".join(second._file_lines) and second.source_key() != first.source_key()
    variant = first.with_options(stages=3)
    assert variant._file_lines == first._file_lines


def test_cache_dir_defaults(monkeypatch, tmp_path):
    """FAKV_CACHE_DIR, else $XDG_CACHE_HOME/fakv when it is an absolute
    path, else ~/.cache/fakv (an empty or relative XDG_CACHE_HOME had put
    the cache under the current directory)."""
    monkeypatch.delenv("FAKV_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    home = os.path.join(str(tmp_path), ".cache", "fakv")
    for xdg, want in (("", home), ("rel/dir", home), (str(tmp_path / "x"), str(tmp_path / "x" / "fakv"))):
        monkeypatch.setenv("XDG_CACHE_HOME", xdg)
        assert cache.cache_dir() == want
    monkeypatch.setenv("FAKV_CACHE_DIR", "/somewhere")
    assert cache.cache_dir() == "/somewhere"
    monkeypatch.setenv("FAKV_CACHE_DIR", "~/fakv-cache")               # (an ENV line: no shell expanded it)
    assert cache.cache_dir() == os.path.join(str(tmp_path), "fakv-cache")
    # A relative one: the folder it names when first used, wherever the process goes after (it had split the
    # cache over the folders a process changed into).
    monkeypatch.setenv("FAKV_CACHE_DIR", "relative-fakv-cache-test")
    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path / "a")
    assert cache.cache_dir() == str(tmp_path / "a" / "relative-fakv-cache-test")
    monkeypatch.chdir(tmp_path)
    assert cache.cache_dir() == str(tmp_path / "a" / "relative-fakv-cache-test")
    cache._RELATIVE.pop("relative-fakv-cache-test")


def test_an_entry_too_deep_to_parse_is_a_miss(tmp_path, monkeypatch):
    """An entry's .json nested past Python's recursion limit raised RecursionError out of every later process's
    load; like other corrupt entries it is a miss (then recompiled). So are facts that are not a dict."""
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    assert cache.store("k", b"cubin", {"name": "k"})
    assert cache.load("k") == (b"cubin", {"name": "k"})
    entry = tmp_path / "k.json"
    good = entry.read_text()
    entry.write_text("[" * 100000)
    assert cache.load("k") is None
    entry.write_text(good.replace('{"name": "k"}', "null"))
    assert cache.load("k") is None


def test_edited_facts_are_misses(tmp_path, monkeypatch):
    """The checksum covers the launch facts (and an index's names and parameters), not only the cubin: facts
    damaged into other valid JSON (threads 128 -> 168: a wrong launch) are a miss, then recompiled."""
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    facts = {"threads": 128, "smem_bytes": 1024}
    assert cache.store("k", b"cubin", facts) and cache.load("k") == (b"cubin", facts)
    entry = tmp_path / "k.json"
    entry.write_text(entry.read_text().replace("128", "168"))
    assert cache.load("k") is None
    cache.store_index("i", [("entry", "kernel", [1, 2], b"cubin", facts)])
    index = tmp_path / "index" / "i.bin"
    good = index.read_bytes()
    for old, new in ((b"128", b"168"), (b'"kernel"', b'"kernal"'), (b"[1, 2]", b"[1, 3]")):
        index.write_bytes(good.replace(old, new, 1))
        assert cache.load_index("i") is None, new


def test_a_fifo_in_an_entrys_place_is_a_miss(tmp_path, monkeypatch):
    """A FIFO where an entry, an index or a recipe file belongs is read without blocking: a miss (a plain
    open() waited for a writer for ever), then replaced by the entry stored; so is a device."""
    import threading
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    from fakv import recipes
    (tmp_path / "index").mkdir()
    (tmp_path / "recipes").mkdir()
    for name in ("k.json", "index/i.bin", "recipes/r.json"):
        os.mkfifo(tmp_path / name)
    got = {}
    t = threading.Thread(target=lambda: got.update(entry=cache.load("k"), index=cache.load_index("i"),
                                                   recipe=recipes.load("r")), daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), "a read of a FIFO blocked"
    assert got == {"entry": None, "index": None, "recipe": None}
    assert cache.store("k", b"cubin", {"threads": 128}) and cache.load("k") == (b"cubin", {"threads": 128})
    os.symlink("/dev/zero", tmp_path / "z.json")         # (read for ever, as plain open() would)
    assert cache.load("z") is None


def test_a_folder_others_can_write_is_not_used(tmp_path, monkeypatch):
    """Session 57's review of the runtime: entries were read from, and written into, a folder anyone could
    write (FAKV_CACHE_DIR=/tmp/fakv: a planted cubin ran, a planted recipe's grid wrote past its workspace, a
    link planted at a writer's temporary name was written through). Such a folder is used neither way, with
    one warning; fakv's own folders are 0700 and its files 0600, made new (never through a link)."""
    from fakv import recipes
    shared = tmp_path / "shared"
    monkeypatch.setenv("FAKV_CACHE_DIR", str(shared))
    umask = os.umask(0o002)        # (Ubuntu's: a folder made before its cache folder was 0775, then refused)
    try:
        cache.write_quietly(str(shared / "recipes" / "r.json"), b"x")
    finally:
        os.umask(umask)
    assert cache.store("k", b"cubin", {"threads": 128}) and cache.load("k") == (b"cubin", {"threads": 128})
    assert {stat.S_IMODE(p.stat().st_mode) for p in (shared, shared / "recipes")} == {0o700}
    assert {stat.S_IMODE(p.stat().st_mode) for p in shared.rglob("*") if p.is_file()} == {0o600}
    own = tmp_path / "own"                # group-writable, the group the user's own (a user private group)
    own.mkdir()
    os.chmod(own, 0o775)
    monkeypatch.setenv("FAKV_CACHE_DIR", str(own))
    if cache._own_group(own.stat().st_gid):
        assert cache.store("k", b"cubin", {}) and cache.load("k") == (b"cubin", {})
    open_ = tmp_path / "open"
    open_.mkdir()
    open_.chmod(0o1777)                         # (as /tmp)
    (open_ / "k.cubin").write_bytes(b"planted")
    (open_ / "k.json").write_text(json.dumps({"facts": {"threads": 128}, "sha256": cache.checksum(b"planted",
                                                                                                 {"threads": 128})}))
    (open_ / "recipes").mkdir(mode=0o700)             # (a folder of this user's, in one anyone can write)
    recipe = json.dumps({"decode_grid": [1048576, 1, 1]}).encode()
    (open_ / "recipes" / "r.json").write_bytes(hashlib.sha256(recipe).hexdigest().encode() + b"\n" + recipe)
    monkeypatch.setenv("FAKV_CACHE_DIR", str(open_))
    with pytest.warns(RuntimeWarning, match=r"is not yours alone \(owner uid \d+, mode 1777\): not used"):
        assert cache.load("k") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # (one warning a folder)
        assert cache.load("k") is None and not cache.store("j", b"cubin", {})
        assert recipes.load("r") is None
        cache.write_quietly(recipes._path("s"), b"x")
        cache.store_index("i", [])
    assert sorted(p.name for p in open_.iterdir()) == ["k.cubin", "k.json", "recipes"]
    assert [p.name for p in (open_ / "recipes").iterdir()] == ["r.json"]
    # A link at a temporary name is not followed, nor is a name in use overwritten.
    victim = tmp_path / "victim"
    victim.write_text("mine")
    monkeypatch.setattr(cache, "_temporary", lambda path: path + ".1.1.tmp")
    monkeypatch.setenv("FAKV_CACHE_DIR", str(shared))
    os.symlink(victim, str(shared / "q") + ".1.1.tmp.cubin")
    with pytest.warns(RuntimeWarning, match="cannot write the kernel cache"):
        assert not cache.store("q", b"cubin", {})
    assert victim.read_text() == "mine" and cache.load("q") is None


def test_malformed_index_entries_are_misses(tmp_path, monkeypatch):
    """Index files that do not parse or check out are misses, never an
    exception: heads that are not lists of entries, sizes that are not
    counts, bytes left over, deep nesting."""
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    cubin = b"\x7fELF-not-really"
    cache.store_index("k", [("entry", "kernel", [1, 2], cubin, {"smem": 1})])
    assert cache.load_index("k") == [("entry", "kernel", [1, 2], cubin, {"smem": 1})]
    good = dict(entry="e", name="n", params=[], facts={}, size=len(cubin), sha256=cache.checksum(cubin, "e", "n", [], {}))
    (tmp_path / "index" / "good.bin").write_bytes(json.dumps([good]).encode() + b"\n" + cubin)
    assert cache.load_index("good") == [("e", "n", [], cubin, {})]         # (each head below spoils it)
    heads = [b"{}", b"7", b'"text"', b"[1]", json.dumps([dict(good, size=-1)]).encode(),
             json.dumps([dict(good, size="3")]).encode(), json.dumps([dict(good, params="ab")]).encode(),
             json.dumps([{k: v for k, v in good.items() if k != "sha256"}]).encode(), b"[" * 100000,
             b"\xff\xfe", json.dumps([good]).encode()]
    for i, head in enumerate(heads):
        body = cubin + (b"left over" if i == len(heads) - 1 else b"")
        (tmp_path / "index" / f"bad{i}.bin").write_bytes(head + b"\n" + body)
        assert cache.load_index(f"bad{i}") is None, head[:40]


_EDIT_SCRIPT = """
import os, sys, numpy as np, ml_dtypes, fakv
from fakv import cache, prepare
q = np.zeros((1, 1, 8, 64), ml_dtypes.bfloat16); k = np.zeros((1, 256, 2, 64), ml_dtypes.bfloat16)
if sys.argv[1] == "edit":
    import fakv.kernels.decode                       # read now (a variant's module importing it at start)
    with open(os.path.join(os.environ["FAKV_KERNELS"], "decode.py"), "a") as f:
        f.write("# edited\\n")                       # then the file changes (an editor, a pull) before a call
elif sys.argv[1] == "switch":
    fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=200, num_splits=1)   # indexed
    os.environ["FAKV_KERNELS"] = sys.argv[2]         # then another folder of kernels, in the same process
    k = np.zeros((1, 512, 2, 64), ml_dtypes.bfloat16)
fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=200, num_splits=1)
print(len(prepare.INDEXED), cache.compiled_as_keyed())
"""


@needs_assembler
def test_the_index_holds_what_the_kernel_files_say(tmp_path):
    """The cache's index is keyed by the kernels' files (a warm start reads no kernel), so a process stores
    an entry only when what it compiled is what those files say: not after a kernel file changed since it was
    read, nor after $FAKV_KERNELS changed (each stored the old code's binary under the new files' key, and
    every later process ran it)."""
    import shutil
    kernels = tmp_path / "kernels"
    shutil.copytree(os.path.join(ROOT, "kernels"), kernels)

    def run(*args, cache_dir, kernels_dir=None):
        env = {k: v for k, v in os.environ.items() if k != "FAKV_KERNELS"}
        env.update(FAKV_CACHE_DIR=str(cache_dir), FAKV_COMPILE_ONLY="1", PYTHONPATH=os.path.join(ROOT, "frontend"))
        if kernels_dir:
            env["FAKV_KERNELS"] = str(kernels_dir)
        p = subprocess.run([sys.executable, "-c", _EDIT_SCRIPT, *args], capture_output=True, text=True, timeout=600,
                           env=env)
        assert p.returncode == 0, p.stderr
        index = cache_dir / "index"
        return p.stdout.split() + [str(len(os.listdir(index)) if index.exists() else 0)]

    assert run("edit", cache_dir=tmp_path / "a", kernels_dir=kernels) == ["0", "False", "0"]
    assert run("plain", cache_dir=tmp_path / "a", kernels_dir=kernels) == ["1", "True", "1"]   # the files now
    assert run("switch", str(kernels), cache_dir=tmp_path / "b") == ["1", "False", "1"]       # the first call's


@needs_assembler
def test_an_index_of_other_kernels_is_not_used(tmp_path, monkeypatch):
    """An index entry whose checksums hold but whose kernels are not the call's (their order swapped: decode's
    binary where combine's is expected, say, by a rewrite or a bug) was taken as it was; it is compiled (from the
    cache's entries) and indexed again, right."""
    env = {k: v for k, v in os.environ.items() if k != "FAKV_KERNELS"}
    env.update(FAKV_CACHE_DIR=str(tmp_path), FAKV_COMPILE_ONLY="1", PYTHONPATH=os.path.join(ROOT, "frontend"))

    script = ("import numpy as np, ml_dtypes, fakv\nq = np.zeros((1, 1, 8, 64), ml_dtypes.bfloat16)\n"
              "k = np.zeros((1, 4096, 2, 64), ml_dtypes.bfloat16)\n"                 # (long splits: no cluster)
              "fakv.flash_attn_with_kvcache(q, k, k, cache_seqlens=4000, num_splits=2)\n")   # (decode, combine)

    def run():
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
        assert p.returncode == 0, p.stderr
        [path] = list((tmp_path / "index").iterdir())
        head, _, body = path.read_bytes().partition(b"\n")
        return path, json.loads(head), body

    path, head, body = run()
    names = [k["name"] for k in head]
    assert len(names) == 2 and names[0] != names[1], names
    first, second = body[:head[0]["size"]], body[head[0]["size"]:]
    path.write_bytes(json.dumps(head[::-1]).encode() + b"\n" + second + first)    # swapped, checksums intact
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    assert [k[1] for k in cache.load_index(path.stem)] == names[::-1]
    _, head, _ = run()
    assert [k["name"] for k in head] == names


_SOURCES_SCRIPT = """
import os, subprocess, sys, numpy as np
front, kdir, edit = sys.argv[1:4]
sys.path[:0] = [front, kdir]
import kern                                         # imports fakv (this copy of it)
from fakv import cache
x = [np.zeros(4, np.float32)]
path = os.path.join(front, "fakv", edit)
if sys.argv[4] == "before":                         # changed before the first key (language.py already read)
    with open(path, "a") as f:
        f.write("# edited\\n")
    # a process of the files now stores V=1 under their key, which this one (older code) must not load
    subprocess.run([sys.executable, "-c", "import sys; sys.path[:0] = %r; import kern, numpy as np; "
                    "kern.kernel.specialize_for([np.zeros(4, np.float32)], {'V': 1.0})" % [front, kdir]], check=True)
    print(kern.kernel.specialize_for(x, {"V": 1.0}).cache)
else:                                               # changed after a first compile (codegen / ptx read later)
    print(kern.kernel.specialize_for(x, {"V": 1.0}).cache)
    with open(path, "a") as f:
        f.write("# edited\\n")
    print(kern.kernel.specialize_for(x, {"V": 2.0}).cache)
print(cache.sources_as_imported())
"""


@needs_assembler
@pytest.mark.parametrize("edit", ["language.py", "ptx.py", "interface.py"])
@pytest.mark.parametrize("when", ["before", "after"])
def test_sources_changed_under_a_process_reach_no_other(tmp_path, edit, when):
    """The frontend's files are read when first imported (codegen and ptx at a first compile, long after the
    key's hash of them): a file changed under a running process (an edit, a pull, a reinstall) made it store
    the old code's binary under the new files' key (or the new code's under the old key), and a later process
    loaded it. Now a process whose package files changed since it imported fakv neither loads nor stores."""
    import shutil
    front = tmp_path / "frontend"
    shutil.copytree(os.path.join(ROOT, "frontend", "fakv"), front / "fakv",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "kern.py").write_text("import fakv\nimport fakv.language as fl\n\n@fakv.jit\n"
                                      "def kernel(X, V: fl.constexpr):\n"
                                      "    fl.store(X, fl.full((4,), V), (0,), (1,))\n")
    cache_dir = tmp_path / "cache"
    env = {k: v for k, v in os.environ.items() if k not in ("FAKV_KERNELS", "PYTHONPATH")}
    env.update(FAKV_CACHE_DIR=str(cache_dir), FAKV_COMPILE_ONLY="1", PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run([sys.executable, "-c", _SOURCES_SCRIPT, str(front), str(tmp_path), edit, when],
                       capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr
    if when == "before":
        assert p.stdout.split() == ["miss", "False"]        # not the other process's entry
        assert len(entries(cache_dir)) == 1                 # (that process's only)
    else:
        assert p.stdout.split() == ["miss", "miss", "False"]
        assert len(entries(cache_dir)) == 1                 # V=1's only: V=2 was compiled by changed code


def test_a_dead_writers_temporary_files_are_removed(tmp_path, monkeypatch):
    """A process killed between writing an entry's temporary files and renaming them (the OOM killer, a
    preempted node) left them for ever, a decode cubin's megabytes each time: a process's first store to a
    folder removes those an hour old, and no other file (a writer's of now, an entry, a stranger's)."""
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(cache, "_swept", set())
    index = tmp_path / "index"
    index.mkdir()
    old = [tmp_path / ("a" * 32 + ".1.2.tmp.cubin"), tmp_path / ("a" * 32 + ".1.2.tmp.json"),
           index / ("b" * 32 + ".bin.1.2.tmp")]
    kept = [tmp_path / ("c" * 32 + ".3.4.tmp.cubin"), index / ("d" * 32 + ".bin.3.4.tmp"),
            tmp_path / ("e" * 32 + ".json"), tmp_path / "notes.tmp.txt"]
    strangers = [tmp_path / n for n in ("report.tmp", "editor.swp.tmp", "model.tmp.cubin", "results.tmp.json",
                                        "a.1.2.tmp", "x" * 32 + ".1.2.tmp")]      # (any ".tmp" name went)
    kept += strangers
    for i, path in enumerate(old + kept):
        path.write_bytes(b"x")
        if path in old or path.name.startswith("e") or path in strangers or path.name == "notes.tmp.txt":
            os.utime(path, (0, 7200 * (i + 1)))       # (1970: old)
    assert cache.store("f" * 32, b"cubin", {"n": 1})
    cache.store_index("0" * 32, [])
    assert not [p for p in old if p.exists()]
    assert all(p.exists() for p in kept)
    assert cache.load("f" * 32) == (b"cubin", {"n": 1})


_FN_SCRIPT = """
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import kern
print(kern.kernel.specialize_for([np.zeros(4, np.float32)], {"F": getattr(kern, sys.argv[2])}).cache)
"""


@needs_assembler
def test_a_function_constexpr_is_found_by_a_later_process(tmp_path):
    """A plain function passed as a constexpr was keyed with its address on disk too: every process compiled
    the kernel again and added an entry. Keyed by what it reads, a later process loads it; one that reads a
    value keyed by its type only (a list past 1000 items, another file's function) keeps the address (two
    functions of one text may differ there) and compiles in each process, as before."""
    (tmp_path / "kern.py").write_text(
        "import posixpath\nimport fakv\nimport fakv.language as fl\n\nBIG = [1.0] * 2000\n\n"
        "def one():\n    return 1.0\n\n"
        "def big():\n    return BIG[0]\n\n"
        "def other_file():\n    return 1.0 if posixpath.join else 2.0\n\n"
        "join = posixpath.join\n\ndef other_function():\n    return 1.0 if join else 2.0\n\n"
        "@fakv.jit\ndef kernel(X, F: fl.constexpr):\n    fl.store(X, fl.full((4,), F()), (0,), (1,))\n")
    env = {k: v for k, v in os.environ.items() if k != "FAKV_KERNELS"}
    env.update(FAKV_CACHE_DIR=str(tmp_path / "cache"), FAKV_COMPILE_ONLY="1",
               PYTHONPATH=os.path.join(ROOT, "frontend"))

    def run(name):
        p = subprocess.run([sys.executable, "-c", _FN_SCRIPT, str(tmp_path), name], capture_output=True, text=True,
                           timeout=600, env=env)
        assert p.returncode == 0, p.stderr
        return p.stdout.strip()

    assert [run("one"), run("one")] == ["miss", "hit"]
    assert [run("other_file"), run("other_file")] == ["miss", "hit"]   # (a module: by its name)
    assert [run("big"), run("big")] == ["miss", "miss"]
    assert [run("other_function"), run("other_function")] == ["miss", "miss"]


def test_a_relative_kernels_folder_stays_where_it_was(tmp_path, monkeypatch):
    """$FAKV_KERNELS relative, then a chdir: the kernels were imported from the first folder and keyed by the
    second's files (as a relative $FAKV_CACHE_DIR already was, it is pinned where first met)."""
    (tmp_path / "a" / "kernels").mkdir(parents=True)
    (tmp_path / "b" / "kernels").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a")
    monkeypatch.setenv("FAKV_KERNELS", "kernels")
    monkeypatch.setattr(cache, "_RELATIVE", {})
    first = cache.kernel_dirs()
    monkeypatch.chdir(tmp_path / "b")
    assert cache.kernel_dirs() == first and first[0] == str(tmp_path / "a" / "kernels")
