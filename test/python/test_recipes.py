"""fakv/recipes.py (on unless FAKV_RECIPES=0): a GPU call the fast path
keeps leaves its PreparedCall's recipe on disk, and a process without that
signature prepares the call from it, without the checks and the plan. Here
torch is a stand-in (tensors with a layout and an address; the PreparedCall
a recorder); test/gpu runs the real one."""
import os
import contextlib
import subprocess
import sys
import types

import pytest

from fakv import FakvError, api, interface, prepare, recipes, runtime


class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return "torch." + self.name


BF16, I32 = _Dtype("bfloat16"), _Dtype("int32")


class Tensor:
    """A contiguous CUDA tensor: its layout and an address."""
    __module__ = "torch"
    is_cuda = True
    _next = [0x10000]

    def __init__(self, shape, dtype=BF16):
        self.shape, self.dtype = tuple(shape), dtype
        self.device = types.SimpleNamespace(type="cuda", index=0)
        self.address = self._next[0]
        self._next[0] += 1 << 20

    def stride(self):
        out, n = [], 1
        for d in reversed(self.shape):
            out.append(n)
            n *= d
        return tuple(reversed(out))

    def get_device(self):
        return 0

    def data_ptr(self):
        return self.address

    def __setitem__(self, index, value):
        pass


@pytest.fixture
def gpu(monkeypatch, tmp_path):
    """The GPU side stood in: torch, the device's properties, the error word,
    and prepare.call recording what it was given (its PreparedCall returns "out")."""
    torch = types.ModuleType("torch")
    torch.Tensor, torch.float16, torch.bfloat16, torch.float32, torch.int32 = Tensor, None, BF16, None, I32
    torch.empty = lambda shape, dtype, device: Tensor(shape, dtype)
    current = [0]                                   # the current CUDA device

    @contextlib.contextmanager
    def device(index):
        before, current[0] = current[0], index
        try:
            yield
        finally:
            current[0] = before
    torch.cuda = types.SimpleNamespace(is_current_stream_capturing=lambda: False, device=device)
    torch._C = types.SimpleNamespace(_cuda_getDevice=lambda: current[0])
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setenv("FAKV_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(recipes, "ENABLED", True)
    monkeypatch.setattr(interface.T, "device_properties", lambda x: (132, 50 << 20, 3352))
    errors = runtime.Pointer(0x1000, "i32", 0)
    monkeypatch.setattr(prepare, "errors_for", lambda like: errors)
    prepared, planned, devices = [], [], []

    def record(*args, **kwargs):
        prepared.append((args, kwargs))
        devices.append(current[0])
        return lambda addresses, q, seqlens: "out"
    monkeypatch.setattr(prepare, "call", record)
    real_plan = interface.plan
    monkeypatch.setattr(interface, "plan", lambda *a, **k: planned.append(a) or real_plan(*a, **k))
    monkeypatch.setitem(interface._AS_IMPORTED, "plan", interface.plan)    # (the recorder stands for the plan)
    monkeypatch.setattr(recipes, "_patched", False)
    monkeypatch.setattr(prepare, "CALLS", {})
    monkeypatch.setattr(prepare, "tensor_type", None)
    return types.SimpleNamespace(prepared=prepared, planned=planned, tmp=tmp_path, devices=devices,
                                 current=current)


def _call(batch=8, seqlen=8192, page=256, lengths=None, **options):
    q = Tensor((batch, 1, 32, 128))
    k, v = Tensor((batch * seqlen // page, page, 8, 128)), Tensor((batch * seqlen // page, page, 8, 128))
    lens, table = Tensor((batch,), I32) if lengths is None else lengths, Tensor((batch, seqlen // page), I32)
    return lambda **more: api.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens, block_table=table,
                                                             **dict(options, **more))


def _new_process(monkeypatch):
    """What a new process has: no prepared call, no tensor type seen, no plan patched yet."""
    monkeypatch.setattr(prepare, "CALLS", {})
    monkeypatch.setattr(prepare, "tensor_type", None)
    monkeypatch.setattr(recipes, "_patched", False)


def _same(a, b):
    if isinstance(a, runtime.Pointer):
        return isinstance(b, runtime.Pointer) and (a.address, a.dtype, a.device) == (b.address, b.dtype, b.device)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, prepare.Lazy) or isinstance(a, Tensor):
        return a is b
    return a == b and type(a) is type(b)


def test_a_new_process_prepares_from_the_recipe(gpu, monkeypatch):
    call = _call(causal=True)
    assert call() == "out" and len(gpu.prepared) == 1 and gpu.planned
    assert len(list((gpu.tmp / "recipes").iterdir())) == 1
    _new_process(monkeypatch)
    gpu.planned.clear()
    assert call() == "out"
    assert not gpu.planned, "prepared from the recipe: no plan"
    (slow, slow_kw), (restored, restored_kw) = gpu.prepared
    assert _same(slow, restored) and _same(slow_kw, restored_kw)
    # the kernels' cache index key, kept in the recipe: the one the slow path's call looked up
    decode, decode_args, decode_consts, _, combine, combine_args, combine_consts, _, q = slow[:9]
    jobs = prepare.jobs_of(decode, decode_args, decode_consts, combine, combine_args, combine_consts, q, slow[14])
    assert restored_kw["index"] == prepare.index_key(jobs) is not None
    assert call() == "out" and len(gpu.prepared) == 2          # then kept as the slow path's would be


def test_a_call_is_prepared_on_qs_device(gpu, monkeypatch):
    """FlashAttention's CUDA guard: with another device current, the slow path's call and the one prepared
    from a recipe are prepared with q's device current (api._on_device_of), the caller's current after."""
    call = _call()
    gpu.current[0] = 1
    assert call() == "out"
    _new_process(monkeypatch)
    gpu.planned.clear()
    assert call() == "out" and not gpu.planned        # (from the recipe)
    assert gpu.devices == [0, 0] and gpu.current[0] == 1


def test_an_int_cache_seqlens_gets_buffers_for_its_lengths_tensor(gpu, monkeypatch):
    # (the slow path makes a (batch,) tensor of the int; the recipe names it a buffer: PreparedCall
    # fills its slots per call from the int, as for the slow path's)
    call = _call(lengths=5000)
    call()
    _new_process(monkeypatch)
    gpu.planned.clear()
    assert call() == "out" and not gpu.planned
    (first, _), (again, _) = gpu.prepared
    made = [i for i, v in enumerate(first[1]) if isinstance(v, Tensor) and v.shape == (8,)]
    assert made and all(_same(again[1][i], runtime.Pointer(0, "i32", 0)) for i in made)
    rest = [i for i in range(len(first[1])) if i not in made]
    assert all(_same(first[1][i], again[1][i]) for i in rest) and _same(first[2:], again[2:])


def test_a_different_call_or_switch_takes_the_slow_path(gpu, monkeypatch):
    """Each of these misses its recipe and plans (the slow path); the last, a switch that a new process reads
    from its environment both where the recipes key it and where the interface was imported, misses by the
    key alone (session 37's review: with only the recipes' switches changed, recipes were off altogether and
    a key without the switches passed too)."""
    _call(causal=True)()
    _call(causal=True)()
    assert len(gpu.planned) == 1                        # (kept: the second call does not plan)
    _new_process(monkeypatch)
    gpu.planned.clear()
    _call(causal=True)()
    assert gpu.planned == []                            # the same call in a new process: its recipe
    for step, (make, more) in enumerate([(_call(causal=True), dict(softcap=30.0)),     # another option
                                         (_call(batch=4, causal=True), {})]):          # another shape
        _new_process(monkeypatch)
        make(**more)
        assert len(gpu.planned) == step + 1
    _new_process(monkeypatch)
    switches = [("FAKV_SWAP_AB", "0")]
    monkeypatch.setattr(recipes, "_SWITCHES", switches)
    monkeypatch.setattr(interface, "ENV_AS_IMPORTED", switches)
    assert recipes.plans_as_keyed()                     # (recipes still on: only the key tells)
    _call(causal=True)()                                # another switch
    assert len(gpu.planned) == 3


def test_a_bad_recipe_takes_the_slow_path(gpu, monkeypatch):
    call = _call()
    call()
    (path,) = (gpu.tmp / "recipes").iterdir()
    good = path.read_bytes()
    path.write_text('{"decode": 1}')
    _new_process(monkeypatch)
    gpu.planned.clear()
    assert call() == "out" and gpu.planned and len(gpu.prepared) == 2
    # Damaged into another valid recipe (a grid of one split fewer would leave part of out unwritten): its
    # checksum, the first line, does not match.
    sha, _, data = good.partition(b"\n")
    assert b'"decode_grid": [' in data
    path.write_bytes(sha + b"\n" + data.replace(b'"decode_grid": [', b'"decode_grid": [1, ', 1))
    _new_process(monkeypatch)
    gpu.planned.clear()
    assert call() == "out" and gpu.planned and len(gpu.prepared) == 3


def test_not_for_host_checks_nor_with_recipes_off(gpu, monkeypatch):
    monkeypatch.setenv("FAKV_CHECK_DATA", "1")
    no_checks = lambda *a, **k: None  # noqa: E731  (the host checks stood in: they read the data)
    monkeypatch.setattr(interface, "_check_contents", no_checks)
    monkeypatch.setitem(interface._AS_IMPORTED, "_check_contents", no_checks)
    assert recipes.plans_as_keyed()                     # (only the check mode keeps the recipe out)
    _call()()
    assert not (gpu.tmp / "recipes").exists()
    monkeypatch.delenv("FAKV_CHECK_DATA")
    monkeypatch.setattr(recipes, "ENABLED", False)
    _call()()
    assert not (gpu.tmp / "recipes").exists()


def test_encode_names_arguments_the_error_word_and_buffers():
    q, lens = Tensor((1, 1, 8, 64)), Tensor((1,), I32)
    errors, scratch = runtime.Pointer(0x1000, "i32", 0), Tensor((1,), I32)
    items = recipes.encode([q, lens, errors, scratch, 3, 0.5, True, None], (q, None, None, lens), errors)
    assert items == [{"arg": 0}, {"arg": 3}, {"errors": "i32"}, {"buffer": "i32"}, 3, 0.5, True, None]
    back = recipes.decode_values(items, (q, None, None, lens), errors, 0)
    assert back[:3] == [q, lens, errors] and back[4:] == [3, 0.5, True, None]
    assert _same(back[3], runtime.Pointer(0, "i32", 0))
    assert recipes.encode([object()], (q,), errors) is None


@pytest.mark.parametrize("setting", [None, "0", "1"])
def test_on_unless_FAKV_RECIPES_is_0(setting):
    env = {k: v for k, v in os.environ.items() if k != "FAKV_RECIPES"}
    env.update({} if setting is None else {"FAKV_RECIPES": setting})
    out = subprocess.run([sys.executable, "-c", "from fakv import recipes; print(recipes.ENABLED)"], env=env,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(setting != "0")


def test_plans_patched_in_process_neither_write_nor_use_recipes(gpu, monkeypatch):
    # Tests and benches patch fakv.interface's switches, constants or functions in process; a recipe's key
    # names only the environment's FAKV_* switches, so a patched process must neither leave its plan under
    # that key nor run a recipe of the environment's plan in place of its own; nor after the patch is
    # undone (interface._plan's cache may still hold its plans).
    _new_process(monkeypatch)
    call = _call(causal=True)
    with monkeypatch.context() as m:
        m.setattr(interface, "_CLUSTER_SPLITS", not interface._CLUSTER_SPLITS)
        assert interface.patched() and not recipes.plans_as_keyed()
        call()
    assert not interface.patched() and not recipes.plans_as_keyed()      # (for the rest of the process)
    _call(batch=4, causal=True)()
    assert not (gpu.tmp / "recipes").exists()
    _new_process(monkeypatch)
    call()                                              # the environment's plan: its recipe written
    assert len(list((gpu.tmp / "recipes").iterdir())) == 1
    real_plan = interface.plan
    for name, value in (("_SWAP_AB", not interface._SWAP_AB), ("MAX_SPLITS", 8),
                        ("plan", lambda *a, **k: real_plan(*a, **k)),
                        ("num_splits_heuristic", lambda *a, **k: 1)):
        with monkeypatch.context() as m:
            m.setattr(interface, name, value)
            _new_process(monkeypatch)
            gpu.planned.clear()
            call()
            assert gpu.planned, f"{name} patched: planned, not prepared from the environment's recipe"
    _new_process(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(prepare, "MERGE_SPLITS", True)
        assert not recipes.plans_as_keyed()
    assert recipes.plans_as_keyed()


@pytest.mark.parametrize("bad", ["bool", "float", "numpy", "list"])
def test_arguments_of_other_kinds_get_no_recipe_and_the_slow_paths_error(gpu, monkeypatch, bad):
    # (recipes are looked for before the slow path's checks: an argument of a kind no recipe holds must
    # reach those checks, not fail in the recipe key)
    import numpy as np
    q, k, v = Tensor((8, 1, 32, 128)), Tensor((8, 4096, 8, 128)), Tensor((8, 4096, 8, 128))
    lens = {"bool": True, "float": 100.0, "numpy": np.full(8, 100, np.int32), "list": [100] * 8}[bad]
    assert recipes.key_of((q, k, v, lens, None, None, None, None, None, None, None, None),
                          (None, False, (-1, -1), 0.0, True, 0, False), None) is None
    with pytest.raises(FakvError, match="`cache_seqlens` must be " + ("on q's device" if bad == "numpy" else
                                                                   "an int or a contiguous int32 tensor")):
        api.flash_attn_with_kvcache(q, k, v, cache_seqlens=lens)


def test_a_call_the_fast_path_cannot_keep_reads_no_recipe(gpu, monkeypatch):
    # A q of a tensor subclass: the fast path's key (the C signature) does not take it, so its calls are
    # never kept; they must not read and prepare a recipe only to throw it away before the slow path.
    class Sub(Tensor):
        __module__ = "torch"
    _call()()
    assert len(list((gpu.tmp / "recipes").iterdir())) == 1
    _new_process(monkeypatch)
    _call()()                                           # the recipe serves a plain q
    assert len(gpu.prepared) == 2
    _new_process(monkeypatch)
    loads = []
    real_load = recipes.load
    monkeypatch.setattr(recipes, "load", lambda k: loads.append(k) or real_load(k))
    q, k, v = Sub((8, 1, 32, 128)), Tensor((256, 256, 8, 128)), Tensor((256, 256, 8, 128))
    api.flash_attn_with_kvcache(q, k, v, cache_seqlens=Tensor((8,), I32), block_table=Tensor((8, 32), I32))
    assert not loads and len(gpu.prepared) == 3         # the slow path's prepare only
