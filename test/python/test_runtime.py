"""fakv._runtime without a GPU: it loads (the CUDA driver is opened only
when needed), says why when the driver is missing, and builds the
signatures the API keys its prepared calls on."""
import sys
import pytest

from fakv import _runtime


class FakeTensor:
    """What signature() reads of a torch tensor."""

    def __init__(self, shape, stride, dtype="bf16", device=0, ptr=4096):
        self.shape, self._stride, self.dtype, self._device, self._ptr = tuple(shape), tuple(stride), dtype, device, ptr

    def stride(self):
        return self._stride

    def get_device(self):
        return self._device

    def data_ptr(self):
        return self._ptr


BF16, F16 = "bf16", "f16"          # interned strings: one object each, like torch's dtypes


@pytest.fixture(autouse=True)
def _tensor_type():
    _runtime.set_tensor_type(FakeTensor)
    yield
    from fakv import prepare
    if prepare.tensor_type is not None:     # (torch's, once a call has seen it: the API's keys read it again)
        _runtime.set_tensor_type(prepare.tensor_type)


def key(*tensors, scalars=(None, False, (-1, -1), 0.0, 0, False, ""), objects=(None, None)):
    found = _runtime.signature(tuple(tensors), tuple(scalars), tuple(objects))
    return None if found is None else found[0]


def test_signature_tells_apart_what_the_kernels_depend_on():
    base = FakeTensor((2, 1, 8, 64), (512, 512, 64, 1))
    same = FakeTensor((2, 1, 8, 64), (512, 512, 64, 1), ptr=8192)      # another address, also aligned
    assert key(base) == key(same)
    variants = [FakeTensor((2, 1, 8, 128), (1024, 1024, 128, 1)), FakeTensor((2, 1, 8, 64), (1024, 512, 64, 1)),
                FakeTensor((2, 1, 8, 64), (512, 512, 64, 1), dtype=F16),
                FakeTensor((2, 1, 8, 64), (512, 512, 64, 1), device=1),
                FakeTensor((2, 1, 8, 64), (512, 512, 64, 1), ptr=4104)]  # not 16-byte aligned
    keys = {key(base)} | {key(v) for v in variants}
    assert len(keys) == 1 + len(variants)
    assert len({key(base, None), key(base, 5), key(base, base)}) == 3
    # Scalars by type and value: 1, 1.0 and True differ.
    assert len({key(base, scalars=(s,)) for s in (None, 1, 1.0, True, 2, (1, 2), [1, 2], "1")}) == 7
    assert key(base, scalars=((1, 2),)) == key(base, scalars=([1, 2],))
    # Objects by identity.
    a, b = object(), object()
    assert key(base, objects=(a,)) != key(base, objects=(b,)) and key(base, objects=(a,)) == key(base, objects=(a,))


def test_signature_addresses_and_unknown_kinds():
    t = FakeTensor((4,), (1,), ptr=123456)
    found = _runtime.signature((t, None, 7), (), ())
    assert found[1] == (123456, 0, 0)
    assert _runtime.signature((3.5,), (), ()) is None                  # not a tensor, an int or None
    assert _runtime.signature((t,), (object(),), ()) is None            # an option of an unknown kind
    assert _runtime.signature((t,), (2 ** 70,), ()) is None


def test_signature_of_nested_and_numpy_options():
    """A list holding itself, or tuples nested deeper than an option's pair, are no key (the recursion crashed
    the process); numpy's float64 (a float subclass: softmax_scale=1 / np.sqrt(d)) is keyed as the float of
    its value (it had no key: every such call took the slow path and prepared its call again)."""
    import numpy as np
    t = FakeTensor((4,), (1,))
    loop = [-1]
    loop.append(loop)
    deep = ()
    for _ in range(100000):
        deep = (deep,)
    assert key(t, scalars=(loop,)) is None and key(t, scalars=(deep,)) is None
    assert key(t, scalars=(((1, 2), 3),)) is not None                   # (two levels: still keyed)
    assert key(t, scalars=(np.float64(0.125),)) == key(t, scalars=(0.125,)) != key(t, scalars=(0.25,))


def test_the_fast_path_finds_what_the_signature_keyed():
    """run_prepared (the API's fast path: key, lookup and call in one C
    call) builds signature()'s key for the same arguments, runs the entry
    it finds with the addresses, q and cache_seqlens, and returns None when
    there is none or an argument cannot be keyed; the entry's errors
    propagate."""
    q = FakeTensor((2, 1, 8, 64), (512, 512, 64, 1), ptr=4096)
    cache = FakeTensor((2, 256, 2, 64), (32768, 128, 64, 1), ptr=8192)
    lens = FakeTensor((2,), (1,), dtype="i32", ptr=65536)
    tensors = (q, cache, cache, lens) + (None,) * 8
    options = (None, False, (-1, -1), 0.0, True, 0, False)
    kernels, extras = (None, None), (1, None)
    seen = []

    def entry(addresses, q_, seqlens):
        seen.append((addresses, q_, seqlens))
        return "out"

    calls = {_runtime.signature(tensors, options + extras, kernels)[0]: entry}
    assert _runtime.run_prepared(calls, kernels, extras, *tensors, *options) == "out"
    assert seen == [((4096, 8192, 8192, 65536) + (0,) * 8, q, lens)]
    # Another mode, option, kernel, address alignment: not found.
    assert _runtime.run_prepared(calls, kernels, (0, None), *tensors, *options) is None
    assert _runtime.run_prepared(calls, kernels, extras, *tensors, *options[:-1], True) is None
    assert _runtime.run_prepared(calls, (object(), None), extras, *tensors, *options) is None
    moved = FakeTensor((2, 1, 8, 64), (512, 512, 64, 1), ptr=4100)
    assert _runtime.run_prepared(calls, kernels, extras, moved, *tensors[1:], *options) is None
    assert _runtime.run_prepared(calls, kernels, extras, 3.5, *tensors[1:], *options) is None
    assert len(seen) == 1
    # The stream the merging plan adds to the extras: another key, found as such.
    merging = (1, (0x5000,))
    calls[_runtime.signature(tensors, options + merging, kernels)[0]] = lambda *a: "merging"
    assert _runtime.run_prepared(calls, kernels, merging, *tensors, *options) == "merging"
    assert _runtime.run_prepared(calls, kernels, (1, (0x6000,)), *tensors, *options) is None
    # An entry that has no call yet (interface._ByLengths for a new lengths hint) gives None too.
    calls = {k: (lambda *a: None) for k in calls}
    assert _runtime.run_prepared(calls, kernels, extras, *tensors, *options) is None
    calls = {k: (lambda *a: 1 / 0) for k in calls}
    with pytest.raises(ZeroDivisionError):
        _runtime.run_prepared(calls, kernels, extras, *tensors, *options)

    class Broken(FakeTensor):
        def get_device(self):
            raise RuntimeError("no device")

    _runtime.set_tensor_type(Broken)                           # (an accessor's error is the call's)
    broken = Broken((2, 1, 8, 64), (512, 512, 64, 1))
    with pytest.raises(RuntimeError, match="no device"):
        _runtime.run_prepared(calls, kernels, extras, broken, *tensors[1:], *options)
    broken.get_device = lambda: "cuda:0"                       # (not an int: a TypeError, not a key)
    with pytest.raises(TypeError):
        _runtime.run_prepared(calls, kernels, extras, broken, *tensors[1:], *options)
    with pytest.raises(TypeError, match="12 tensors, 7 options"):
        _runtime.run_prepared(calls, kernels, extras, *tensors)


def test_driver_missing_is_a_clear_error():
    try:
        address = _runtime.host_mapped(64)
    except RuntimeError as e:
        assert "cannot load the CUDA driver (libcuda.so.1)" in str(e) or "cuInit failed" in str(e), str(e)
    else:                                                               # a machine with a GPU
        assert address and _runtime.take_word(address) == 0
    for call in (lambda: _runtime.host_mapped(64, None), _runtime.current_context):
        try:
            got = call()
        except RuntimeError as e:
            assert "CUDA" in str(e)
        else:                                                           # (a GPU: an address, a context)
            assert isinstance(got, int)
    with pytest.raises(TypeError):
        _runtime.host_mapped(64, "a context")
    try:
        sms, l2, gbps = _runtime.device_properties(0)
    except RuntimeError as e:                                           # no driver, or no device 0
        assert "fakv_device_properties" in str(e)
    else:
        assert sms > 0 and l2 > 0 and gbps >= 0
    with pytest.raises(TypeError):
        _runtime.device_properties("0")
    with pytest.raises(OverflowError):
        _runtime.device_properties(2 ** 32)
    for address in (0, 2):                          # (NULL, or not an int32's: it was read and written)
        with pytest.raises(ValueError, match="is not the address of an int32"):
            _runtime.take_word(address)


def test_the_error_words_native_thread_gives_its_page_or_none():
    # start_host_mapped: host_mapped's work in a native thread; wait_host_mapped joins it: the page (a
    # machine with a GPU), or None where it failed (host_mapped then raises why), and None again after.
    from fakv import runtime
    if runtime._early and runtime._word is None:   # (fakv.api imported with CUDA initialised: its page pending)
        pytest.skip("this process's error word is being allocated by the API's own thread")
    assert _runtime.wait_host_mapped() is None                          # none pending
    _runtime.start_host_mapped(64, None)
    with pytest.raises(RuntimeError, match="pending"):
        _runtime.start_host_mapped(64, None)
    address = _runtime.wait_host_mapped()
    try:
        _runtime.host_mapped(64)
    except RuntimeError:
        assert address is None                                          # no driver here
    else:
        assert address and _runtime.take_word(address) == 0
    assert _runtime.wait_host_mapped() is None
    with pytest.raises(TypeError):
        _runtime.start_host_mapped(64, "a context")


def test_a_forked_child_never_joins_its_parents_error_word_thread():
    # A child of fork has no copy of the thread: joining it there could wait forever (at exit too: atexit
    # waits), and the page would be the parent's. The child gets None (on a GPU machine too, where the
    # parent gets its page); here, without a driver, this checks the child neither hangs nor raises.
    import os
    from fakv import runtime
    if runtime._early and runtime._word is None:
        pytest.skip("this process's error word is being allocated by the API's own thread")
    _runtime.start_host_mapped(64, None)
    pid = os.fork()
    if pid == 0:
        os._exit(0 if _runtime.wait_host_mapped() is None else 3)
    _, status = os.waitpid(pid, 0)
    _runtime.wait_host_mapped()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_index_kinds_are_the_jits_types():
    """The API's index keys arguments by signature.arg_kind (text, without
    ir.py); the JIT by arg_type: the same type, the same divisibility."""
    import numpy as np
    from fakv.runtime import Pointer
    from fakv.signature import arg_kind, arg_type, divisible
    values = [np.zeros(4, np.float16), np.zeros(3, np.int32)[1:], Pointer(32, "bf16", 0), Pointer(8, "f32", 0),
              7, 32, 2 ** 40, True, 0.5]
    kinds = [arg_kind(v, "x") for v in values]
    types = [arg_type(v, "x") for v in values]
    assert [(repr(t), gpu) for t, gpu in types] == kinds
    assert [k for k, _ in kinds][2:] == ["ptr<bf16>", "ptr<f32>", "i32", "i32", "i64", "i1", "f32"]
    as_kinds = [(i, v, k) for i, (v, (k, _)) in enumerate(zip(values, kinds))]
    as_types = [(i, v, t) for i, (v, (t, _)) in enumerate(zip(values, types))]
    found = divisible(as_kinds)
    assert found == divisible(as_types)
    assert {2, 5, 6} <= set(found) and not {1, 3, 4, 7, 8} & set(found)     # (0: as numpy aligned it)
    with pytest.raises(TypeError, match="cannot pass str"):
        arg_kind("text", "x")


def test_kernel_arguments_are_checked():
    with pytest.raises(ValueError, match="unknown parameter kind"):
        _runtime.Kernel(b"", "k", "px", [], 128, 0)
    with pytest.raises(ValueError, match="not a pointer"):
        _runtime.Kernel(b"", "k", "pi", [(1, 32)], 128, 0)
    kernel = _runtime.Kernel(b"", "k", "pif", [], 128, 0, (1, 4, 1))
    with pytest.raises(TypeError, match="takes 3 arguments, got 1"):
        kernel.launch(1, 1, 1, 0, 5)
    with pytest.raises(ValueError, match="not a multiple of the 4 query heads"):
        kernel.launch(1, 6, 1, 0, 0, 1, 1.0)
    with pytest.raises(TypeError, match="does not fit its parameter"):
        kernel.launch(1, 4, 1, 0, 0, 2 ** 40, 1.0)
    # A kernel that waits for the grids before it (its launch facts' dependent_launch).
    _runtime.Kernel(b"", "k", "pi", [], 128, 0, (1, 1, 1), True)
    _runtime.Kernel(b"", "k", "pi", [], 128, 0, dependent_launch=False)
    with pytest.raises(ValueError, match="more than 256 kernel parameters"):
        _runtime.Kernel(b"", "k", "p" * 257, [], 128, 0)
    with pytest.raises(ValueError, match="more than 8 tensor maps"):
        _runtime.Kernel(b"", "k", "p" * 9, [(i, 32) for i in range(9)], 128, 0)
    # Initialised once (the PreparedCalls made of it sized their slots by its kinds); never launched unmade.
    with pytest.raises(TypeError, match="initialised once"):
        kernel.__init__(b"", "k", "p" * 5, [], 128, 0)
    with pytest.raises(TypeError, match="not initialised"):
        _runtime.Kernel.__new__(_runtime.Kernel).launch(1, 1, 1, 0)
    # Sizes in range (PyArg's "I" wrapped -1 and 2^32 + 1 without a word).
    for bad in (dict(threads=-1), dict(smem=-5), dict(packing=(-1, 1, 1))):
        with pytest.raises(ValueError, match="threads must be positive"):
            _runtime.Kernel(**dict(dict(image=b"", name="k", kinds="p", tensormaps=[], threads=128, smem=0), **bad))
    with pytest.raises(OverflowError):
        _runtime.Kernel(b"", "k", "p", [], 128, 2 ** 32 + 1)
    with pytest.raises(ValueError, match="-1 rows a box"):
        _runtime.Kernel(b"", "k", "p", [(0, -1)], 128, 0)


def test_a_kernel_whose_init_failed_stays_unmade():
    """Kind and tensor-map checks come before anything is set: a Kernel whose init failed is not launched
    (it packed the unknown kind as an i1 and went on) and can be initialised again."""
    kernel = _runtime.Kernel.__new__(_runtime.Kernel)
    with pytest.raises(ValueError, match="unknown parameter kind 'x'"):
        kernel.__init__(b"", "k", "px", [], 128, 0)
    with pytest.raises(TypeError, match="not initialised"):
        kernel.launch(1, 1, 1, 0, 0, 1)
    with pytest.raises(ValueError, match="which is not a pointer"):
        kernel.__init__(b"", "k", "pi", [(0, 32), (1, 32)], 128, 0)
    with pytest.raises(TypeError, match="not initialised"):
        kernel.launch(1, 1, 1, 0, 0, 1)
    kernel.__init__(b"", "k", "pi", [(0, 32)], 128, 0)
    with pytest.raises(TypeError, match="initialised once"):
        kernel.__init__(b"", "k", "pi", [], 128, 0)


def test_sequences_changed_while_they_are_read_are_not_read_freed():
    """An argument's __index__ (or data_ptr) may run Python code that empties the list PreparedCall or
    Kernel is reading: it read the freed items (a segfault); each list is read through a copy now."""
    decode = _runtime.Kernel(b"", "decode", "i" * 42, [], 128, 0)
    args = [0] * 42

    class Shrinks:
        def __init__(self, seq):
            self.seq = seq

        def __index__(self):
            self.seq.clear()
            return 0
    args[0] = Shrinks(args)
    call = dict(decode=decode, decode_grid=(1, 1, 1), decode_args=args, decode_slots=list(range(16)),
                combine=None, combine_grid=(1, 1, 1), combine_args=[], cache_layout=(1,) * 8, ws_bytes=4,
                part_out_bytes=0, part_lse_bytes=0, return_lse=False, copy_q=False, empty_like=None,
                empty_lse=None, raw_alloc=None, raw_delete=None, stream=None, seqlens_tensor=None,
                empty_workspace=None)
    with pytest.raises(ValueError, match="decode slot 0 is not a pointer parameter"):   # ("i" kinds: read whole)
        _runtime.PreparedCall(**call)
    pointers = _runtime.Kernel(b"", "decode", "p" * 42, [], 128, 0)
    slots = list(range(16))
    slots[0] = Shrinks(slots)
    with pytest.raises((RuntimeError, ValueError)):    # (no driver here: the context check; with one, the slots)
        _runtime.PreparedCall(**dict(call, decode=pointers, decode_args=[0] * 42, decode_slots=slots))
    maps = [(0, 32), (0, 32)]
    maps[0] = (Shrinks(maps), 32)
    kernel = _runtime.Kernel(b"", "k", "p", maps, 128, 0)
    with pytest.raises(TypeError, match="takes 1 arguments"):
        kernel.launch(1, 1, 1, 0)


def test_prepared_call_sizes_are_in_range():
    """ws_bytes and friends, and the caches' layout, are 0 to 2^64 - 1 (PyArg's "K" wrapped -1)."""
    decode = _runtime.Kernel(b"", "decode", "p" * 42, [], 128, 0)
    call = dict(decode=decode, decode_grid=(1, 1, 1), decode_args=[0] * 42, decode_slots=list(range(16)),
                combine=None, combine_grid=(1, 1, 1), combine_args=[], cache_layout=(1,) * 8, ws_bytes=4,
                part_out_bytes=0, part_lse_bytes=0, return_lse=False, copy_q=False, empty_like=None,
                empty_lse=None, raw_alloc=None, raw_delete=None, stream=None, seqlens_tensor=None,
                empty_workspace=None)
    for bad in (dict(ws_bytes=-1), dict(part_out_bytes=2 ** 64 + 7), dict(cache_layout=(1,) * 7 + (-1,))):
        with pytest.raises(OverflowError):
            _runtime.PreparedCall(**dict(call, **bad))
    with pytest.raises(TypeError):
        _runtime.PreparedCall(**dict(call, ws_bytes=4.0))


def test_a_cpp_exception_is_a_python_error_not_an_abort(tmp_path):
    """A std::bad_alloc in the runtime (a key of a 600 MiB option, memory capped) is MemoryError; it
    unwound into CPython's frames and aborted the process (std::terminate)."""
    import subprocess
    import sys
    script = tmp_path / "bad_alloc.py"
    script.write_text(
        "import os, resource\n"
        "from fakv import _runtime\n"
        "_runtime.set_tensor_type(type)\n"
        "option = 'x' * (600 << 20)\n"
        "vm = int(open('/proc/self/statm').read().split()[0]) * os.sysconf('SC_PAGE_SIZE')\n"
        "resource.setrlimit(resource.RLIMIT_AS, (vm + (300 << 20), resource.getrlimit(resource.RLIMIT_AS)[1]))\n"
        "try:\n"
        "    _runtime.signature((), (option,), ())\n"
        "    print('no error')\n"
        "except MemoryError:\n"
        "    print('MemoryError')\n")
    import os
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "MemoryError", (done.returncode, done.stdout, done.stderr)


def test_prepared_call_arguments_are_checked():
    """A PreparedCall's slots are pointer parameters of its kernels, the
    default combine slots included (a combine of fewer parameters would have
    its slots written past their end); one never initialised is not run."""
    decode = _runtime.Kernel(b"", "decode", "p" * 42, [], 128, 0)
    small = _runtime.Kernel(b"", "combine", "pp", [], 128, 0)
    args = dict(decode=decode, decode_grid=(1, 1, 1), decode_args=[0] * 42, decode_slots=list(range(16)),
                combine=small, combine_grid=(1, 1, 1), combine_args=[0, 0], cache_layout=(1,) * 8, ws_bytes=4,
                part_out_bytes=0, part_lse_bytes=0, return_lse=False, copy_q=False, empty_like=None,
                empty_lse=None, raw_alloc=None, raw_delete=None, stream=None, seqlens_tensor=None,
                empty_workspace=None)
    with pytest.raises(ValueError, match="combine slot 2 is not a pointer parameter"):
        _runtime.PreparedCall(**args)
    with pytest.raises(ValueError, match="decode slot -2 is not a pointer parameter"):
        _runtime.PreparedCall(**dict(args, decode_slots=[2 ** 32] + list(range(1, 16))))
    with pytest.raises(TypeError, match="not initialised"):
        _runtime.PreparedCall.__new__(_runtime.PreparedCall)((0,) * 12, None, None)
    # One whose init failed past its kernels (here: no driver, so no context) is not run either.
    made = _runtime.PreparedCall.__new__(_runtime.PreparedCall)
    with pytest.raises(RuntimeError):
        made.__init__(**dict(args, combine=None, combine_args=[]))
    with pytest.raises(TypeError, match="not initialised"):
        made((0,) * 12, None, None)


def test_host_mapped_sizes_are_checked():
    for f in (_runtime.host_mapped, _runtime.start_host_mapped):
        with pytest.raises(ValueError, match="-1 bytes"):
            f(-1, None)


def test_the_api_keys_a_call_the_same_way_twice(monkeypatch):
    """flash_attn_with_kvcache's fast path and the call that prepares key a
    call through one function, whatever FAKV_CHECK_DATA holds (a key that
    differed would never be found again: every call would take the slow
    path)."""
    from fakv import prepare
    monkeypatch.setattr(prepare, "_signature", _runtime.signature)
    t = FakeTensor((2, 1, 8, 64), (512, 512, 64, 1))
    args = ((None, None), t, t, t, None, None, None, None, None, None, None, None, None, None, False, (-1, -1), 0.0,
            True, 0, False)
    for mode in (None, "1", "0", "2"):
        if mode is None:
            monkeypatch.delenv("FAKV_CHECK_DATA", raising=False)
        else:
            monkeypatch.setenv("FAKV_CHECK_DATA", mode)
        first, second = prepare.key(*args), prepare.key(*args)
        assert first is not None and first[0] == second[0]
        found = {first[0]: lambda *a: ("found", mode)}       # (the fast path's key is the same bytes)
        assert _runtime.run_prepared(found, args[0], prepare.extras(), *args[1:]) == ("found", mode)
    monkeypatch.setenv("FAKV_CHECK_DATA", "1")
    checked = prepare.key(*args)[0]
    monkeypatch.delenv("FAKV_CHECK_DATA")
    assert prepare.key(*args)[0] != checked
    # New keys, rotary and left padding are in the key (a call with them is prepared too).
    appending = args[:8] + (t, t) + args[10:]
    assert prepare.key(*appending)[0] != prepare.key(*args)[0]
    assert prepare.key(*appending)[1][7:9] == (t.data_ptr(), t.data_ptr())
    interleaved = appending[:17] + (False,) + appending[18:]
    assert prepare.key(*interleaved)[0] != prepare.key(*appending)[0]
    # FAKV_MERGE_SPLITS: the mode, and a prepared call (and its split
    # counters) per stream, even the default stream's (0).
    plain = prepare.key(*args)[0]
    monkeypatch.setattr(prepare, "MERGE_SPLITS", True)
    monkeypatch.setattr(prepare, "current_stream", lambda q=None: 0)
    on_0 = prepare.key(*args)[0]
    monkeypatch.setattr(prepare, "current_stream", lambda q=None: 8)
    assert len({plain, on_0, prepare.key(*args)[0]}) == 3


def test_flags_given_as_ints_find_the_call_kept_for_bools(monkeypatch):
    """causal=1 (FlashAttention's bindings take ints as flags): the slow path keeps the call under causal=True,
    the fast path looked it up under the int, never found it, and every such call was planned and prepared
    again (a recipe written to disk each time)."""
    import numpy as np
    import fakv
    from fakv import prepare
    monkeypatch.setattr(prepare, "_signature", _runtime.signature)
    monkeypatch.setattr(prepare, "tensor_type", FakeTensor)
    monkeypatch.setattr(prepare, "run", _runtime.run_prepared)
    t = FakeTensor((2, 1, 8, 64), (512, 512, 64, 1))
    args = ((None, None), t, t, t, None, None, None, None, None, None, None, None, None, None, True, (-1, -1), 0.0,
            False, 0, True)
    kept = prepare.key(*args)[0]                   # (as interface keeps it: its flags are bools)
    monkeypatch.setattr(prepare, "CALLS", {kept: lambda *a: "kept"})
    for causal, interleaved, lse in ((True, False, True), (1, 0, 1), (np.True_, np.False_, np.int64(1))):
        assert fakv.flash_attn_with_kvcache(t, t, t, causal=causal, rotary_interleaved=interleaved,
                                            return_softmax_lse=lse) == "kept", (causal, interleaved, lse)


def test_prepared_call_slots_name_decode_parameters():
    """The parameters of kernels/decode.py a PreparedCall fills in per call,
    in runtime/PreparedCall.cpp's Slot order: a reordered decode signature
    would otherwise get addresses in the wrong parameters."""
    import inspect
    from fakv import prepare
    from fakv.kernels.decode import decode
    names = list(inspect.signature(decode.fn).parameters)
    assert [names[i] for i in prepare.DECODE_SLOTS] == [
        "Q", "K", "V", "Table", "Seqlens", "Out", "Lse", "OutPart", "LsePart", "BatchIdx", "Slopes", "KNew",
        "VNew", "Cos", "Sin", "LeftPad"]
    assert names[34] == "Counters"              # (interface: decode_args[34], the merge's counters)


def test_launch_stream_is_the_current_stream_of_the_tensors_device(monkeypatch):
    """A prepared call launches on the current stream of q's device, as
    torch's own ops on q do (runtime.stream_getter(device)), not on the
    current device's when they differ; without a device, the current
    device's. (A stand-in for torch: its raw-stream and device calls.)"""
    import sys
    import types
    from fakv import runtime
    asked = []
    fake = types.ModuleType("torch")
    fake._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda d: asked.append(d) or 1000 + d,
                                    _cuda_getDevice=lambda: 0)
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert runtime.stream_getter(1)() == 1001 and asked == [1]
    assert runtime.stream_getter()() == 1000 and asked == [1, 0]


def test_a_launch_refuses_tensors_of_another_device(monkeypatch):
    """runtime.GPUKernel.for_device: a launch whose tensors are on another device than the current one, or on
    several devices, is refused (only the first tensor's device was compared: [cuda:0, cuda:1] launched on
    device 0 with a device-1 address; a review, session 39)."""
    import sys
    import types
    from fakv import runtime

    class Tensor:
        is_cuda = True

        def __init__(self, device):
            self.device = device

        def get_device(self):
            return self.device

    fake = types.SimpleNamespace(_C=types.SimpleNamespace(_cuda_getDevice=lambda: 0))
    monkeypatch.setitem(sys.modules, "torch", fake)
    compiled = types.SimpleNamespace(name="k", kernel="loaded")
    assert runtime.GPUKernel.for_device(compiled, [Tensor(0), 3, Tensor(0)]) == "loaded"
    assert runtime.GPUKernel.for_device(compiled, [1.0, 2]) == "loaded"          # (no tensor: the current device)
    for values, message in (([Tensor(0), Tensor(1)], r"several devices \(cuda:0, cuda:1\)"),
                            ([Tensor(1), Tensor(0)], r"several devices \(cuda:0, cuda:1\)"),
                            ([Tensor(1), 5], "on cuda:1 but the current device is cuda:0")):
        with pytest.raises(ValueError, match=message):
            runtime.GPUKernel.for_device(compiled, values)


def test_the_drivers_assembler_compiles_in_the_calling_thread(monkeypatch):
    """prepare.specialise_all compiles several missing specialisations in a pool of threads, but not when the
    CUDA driver assembles the PTX: its linker targets the calling thread's current context, which the pool's
    threads have none of (a review, session 39)."""
    import threading
    from fakv import prepare, ptx

    class Fn:
        def __init__(self):
            self.threads = []

        def specialize_for(self, args, consts, compile=True):
            if not compile:
                return None
            self.threads.append(threading.current_thread().name)
            return "compiled"

    for kind, pooled in (("driver", False), ("nvjitlink", True)):
        monkeypatch.setattr(ptx, "assembler", lambda kind=kind: (kind, "somewhere"))
        fns = [Fn(), Fn()]
        assert prepare.specialise_all([(f, (), {}) for f in fns]) == ["compiled", "compiled"]
        threads = [t for f in fns for t in f.threads]
        assert all(t.startswith("fakv-compile") for t in threads) if pooled else \
            threads == [threading.current_thread().name] * 2, (kind, threads)


def test_the_error_word_binds_a_context_first(monkeypatch):
    """prepare.errors_for on a GPU tensor, in a thread without a CUDA context (a new process's first call prepared
    from a recipe, before anything bound one): the tensor's device's primary context is bound before the error word's
    host memory is mapped (which needs one: the driver refused it, and the call raised; a review, session 39). Not
    when a context is current, nor once the word exists."""
    from fakv import prepare, runtime
    order, bound = [], []
    monkeypatch.setattr(runtime, "_word", None)
    monkeypatch.setattr(runtime, "_early", False)
    monkeypatch.setattr(_runtime, "current_context", lambda: bound[-1] if bound else 0)

    def host_mapped(n, context=None):
        order.append("host_mapped")
        if not bound:
            raise RuntimeError("fakv_host_mapped: cuMemHostAlloc: invalid device context")
        return 0x1000

    monkeypatch.setattr(_runtime, "host_mapped", host_mapped)
    monkeypatch.setattr(_runtime, "bind_primary_context", lambda i: (order.append(f"bind {i}"), bound.append(7)))

    class Q:
        __module__ = "torch"
        is_cuda = True

        def get_device(self):
            return 3

    word = prepare.errors_for(Q())
    assert (word.address, word.device) == (0x1000, 3) and order == ["bind 3", "host_mapped"]
    prepare.errors_for(Q())                                     # (the word exists: nothing more)
    monkeypatch.setattr(runtime, "_word", None)
    runtime.error_word(device=3)                                # (a context current: none bound)
    assert order == ["bind 3", "host_mapped", "host_mapped"]

def test_a_failed_error_word_is_retried(monkeypatch):
    """A first allocation of the error word that raised left it False (not None): never retried, and every later
    call, the CPU path's too, failed in raise_pending with "take_word: 0x(nil) is not the address of an int32"
    (a review, session 41). The failure is raised, and the next call allocates it."""
    from fakv import runtime
    monkeypatch.setattr(runtime, "_word", None)
    monkeypatch.setattr(runtime, "_early", False)
    monkeypatch.setattr(_runtime, "current_context", lambda: 7)
    results = [RuntimeError("fakv_host_mapped: cuMemHostAlloc: out of memory"), 0x2000]

    def host_mapped(n, context=None):
        r = results.pop(0)
        if isinstance(r, Exception):
            raise r
        return r

    monkeypatch.setattr(_runtime, "host_mapped", host_mapped)
    with pytest.raises(RuntimeError, match="out of memory"):
        runtime.error_word()
    assert runtime._word is None
    assert runtime.error_word() == 0x2000 and results == []


def test_the_kept_kernels_go_with_the_calls_that_name_them(monkeypatch):
    """The prepared calls are dropped together at MAX_CALLS; the with_kernels pairs their keys named stayed
    for ever (each pair of a program that makes kernels as it goes, with its compiled code)."""
    from fakv import prepare
    monkeypatch.setattr(prepare, "CALLS", {})
    monkeypatch.setattr(prepare, "KEPT", set())
    pairs = [(object(), None) for _ in range(prepare.MAX_CALLS + 1)]
    for i, pair in enumerate(pairs):
        prepare.keep(b"key%d" % i, "call", pair)
    assert list(prepare.CALLS) == [b"key%d" % prepare.MAX_CALLS] and prepare.KEPT == {pairs[-1]}


def test_a_launch_in_a_thread_without_a_context_binds_one(monkeypatch):
    """GPUKernel.launch (a @fakv.jit kernel's) in a thread whose first CUDA work it is: the driver refuses the
    launch, the current device's primary context is bound and the launch made again, once. A launch refused in a
    thread that has a context is the launch's own error, raised as it came; so is the first refusal when no context
    can be bound (runtime.bind_context_if_none, which prepare.py and error_word use too)."""
    import types
    from fakv import runtime
    torch = types.ModuleType("torch")
    torch.cuda = types.SimpleNamespace(current_device=lambda: 2)
    monkeypatch.setitem(sys.modules, "torch", torch)
    bound, launches = [], []
    monkeypatch.setattr(_runtime, "current_context", lambda: bound[-1] if bound else 0)

    def launch_raw(gx, gy, gz, stream, *args):
        launches.append((gx, gy, gz, stream) + args)
        if not bound:
            raise RuntimeError("cuLaunchKernel: invalid device context")

    kernel = object.__new__(runtime.GPUKernel)
    kernel.launch_raw, kernel._stream = launch_raw, lambda: 5
    monkeypatch.setattr(_runtime, "bind_primary_context", lambda i: bound.append(("primary", i)))
    kernel.launch((1, 2, 3), (10, 11))
    assert bound == [("primary", 2)] and launches == [(1, 2, 3, 5, 10, 11)] * 2
    assert runtime.bind_context_if_none(0) is False and bound == [("primary", 2)]

    def refuse(*a):                                     # a context is current: the launch's error, not retried
        launches.append(a)
        raise RuntimeError("cuLaunchKernel: too many resources requested for launch")
    kernel.launch_raw, launches[:] = refuse, []
    with pytest.raises(RuntimeError, match="too many resources"):
        kernel.launch((1, 1, 1), ())
    assert len(launches) == 1

    bound.clear()                                       # no context, and none can be bound: the launch's error
    kernel.launch_raw = launch_raw

    def cannot_bind(i):
        raise RuntimeError("fakv_bind_primary_context: cuDevicePrimaryCtxRetain: no CUDA-capable device")
    monkeypatch.setattr(_runtime, "bind_primary_context", cannot_bind)
    with pytest.raises(RuntimeError, match="invalid device context"):
        kernel.launch((1, 1, 1), ())
