"""fakv/lengths_hint.py: whether a batch's lengths are ragged, from an
earlier call's lengths copied to the host without waiting. The CUDA side
(a pinned buffer, a non-blocking copy, an event) is a stand-in here that
records the copies and finishes them when told; test/gpu/test_frontend_gpu.py
runs the real one on the GPU."""
import sys
import types

import numpy as np
import pytest

from fakv import lengths_hint


class _Lengths:
    """A (batch,) int32 'CUDA tensor': an address and its values."""

    def __init__(self, values, address=0x1000):
        self.values, self.address = list(values), address
        self.shape, self.device = (len(values),), types.SimpleNamespace(index=0)

    def data_ptr(self):
        return self.address


class _Host:
    """The pinned buffer: copy_ records a copy that lands when its event is done."""

    def __init__(self, copies, shape):
        self.copies, self.values = copies, [0] * shape[0]

    def copy_(self, src, non_blocking=False):
        assert non_blocking, "the copy must not wait for the GPU"
        self.copies.append((self, list(src.values)))

    def tolist(self):
        return list(self.values)


class _Event:
    def __init__(self, gpu):
        self.gpu, self.done = gpu, True

    def record(self, stream):
        assert stream is self.gpu.stream, "recorded on the stream of the lengths' device"
        self.done = False
        self.gpu.pending.append(self)

    def query(self):
        assert not self.gpu.capturing, "an event query while a CUDA graph is captured"
        assert self.gpu.mode == 2, "an event query outside relaxed capture mode (another thread's capture)"
        if self.gpu.query_fails:
            raise RuntimeError("operation not permitted when stream is capturing")
        return self.done


@pytest.fixture
def gpu(monkeypatch):
    """A stand-in torch whose copies land when gpu.finish() is called."""
    gpu = types.SimpleNamespace(copies=[], pending=[], stream=object(), capturing=False, allocations=0, mode=0,
                                modes=[], query_fails=False)

    def finish():
        for host, values in gpu.copies:
            host.values = values
        for event in gpu.pending:
            event.done = True
        gpu.copies.clear()
        gpu.pending.clear()

    def empty(shape, dtype, pin_memory):
        assert gpu.mode == 2, "a page pinned outside relaxed capture mode"
        gpu.allocations += 1
        return _Host(gpu.copies, shape)

    def exchange_capture_mode(mode):          # (fakv._runtime's: the thread's mode set, the old one returned)
        gpu.modes.append(mode)
        old, gpu.mode = gpu.mode, mode
        return old
    gpu.finish = finish
    from fakv import _runtime
    monkeypatch.setattr(_runtime, "exchange_capture_mode", exchange_capture_mode)
    torch = types.SimpleNamespace(
        int32="int32", empty=empty,
        cuda=types.SimpleNamespace(Event=lambda: _Event(gpu), current_stream=lambda device: gpu.stream))
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(lengths_hint, "ENABLED", True)
    lengths_hint.forget()
    yield gpu
    lengths_hint.forget()


def call(lens, gpu, capturing=False):
    """What interface does for one call: the hint before the launch, the copy after it."""
    gpu.capturing = capturing
    answer = lengths_hint.ragged(lens, 2048, capturing)
    lengths_hint.copy_after(lens, capturing)
    gpu.capturing = False
    return answer


@pytest.mark.parametrize("lengths,ragged", [
    ([2047, 100, 700, 1], True), ([2000, 1990, 2047, 1900], False), ([0, 0, 2047, 0], True),
    ([5000, 9000], False),              # clamped to the capacity (2048): equal
    ([1000, 1286], False), ([1000, 1287], True),    # mean 1143: ragged past 1143 + 142 + 1 = 1286, not at it
    ([1600] * 15 + [-1600], False),     # -1600 clamped to 0: mean 1500, 1600 within 1688 (unclamped: 1576)
    ([], False), ([7], False)])
def test_is_ragged_as_the_kernel(lengths, ragged):
    """kernels/splits.py's near_equal: ragged when the longest (clamped to
    [0, capacity]) is more than mean // 8 + 1 above the mean of n // batch."""
    assert lengths_hint.is_ragged(np.array(lengths, np.int32), 2048) == ragged


def test_answer_follows_copies_that_have_landed(gpu):
    lens = _Lengths([2047, 100, 700, 1])
    assert not call(lens, gpu)                      # nothing on the host yet; a copy started after the launch
    assert len(gpu.copies) == 1 and gpu.allocations == 1
    assert not call(lens, gpu)                      # the copy has not landed: the answer so far, no new copy
    assert len(gpu.copies) == 1
    gpu.finish()
    assert call(lens, gpu)                          # read, and the next copy started behind this call
    assert len(gpu.copies) == 1 and gpu.allocations == 1
    lens.values = [2000, 2000, 2000, 2000]          # the lengths change (on the GPU)
    assert call(lens, gpu)                          # still the last copy's answer
    gpu.finish()
    assert call(lens, gpu)                          # the copy started before the change; now one after it
    gpu.finish()
    assert not call(lens, gpu)


def test_copy_lands_before_it_is_read(gpu):
    """The pinned buffer is read only once its event is done, and no copy
    starts into it before it has been read."""
    lens = _Lengths([2047, 1, 1, 1])
    call(lens, gpu)
    host = lengths_hint._FOLLOWED[lengths_hint._key(lens)].host
    host.values = [2047, 1, 1, 1]                   # (what an unfinished copy might have left: not read)
    assert not call(lens, gpu) and len(gpu.copies) == 1


def test_capture_reads_and_copies_nothing(gpu):
    """While a CUDA graph is captured: the answer so far, no copy (a copy
    would be captured into the graph), no allocation and no event query."""
    lens = _Lengths([2047, 1, 1, 1])
    assert not call(lens, gpu, capturing=True)
    assert gpu.copies == [] and gpu.allocations == 0 and lengths_hint._FOLLOWED == {}
    call(lens, gpu)
    gpu.finish()
    assert call(lens, gpu, capturing=True) is False     # landed but not read during capture (query asserts)
    assert gpu.copies == []
    assert call(lens, gpu)


def test_followed_by_address_and_batch(gpu):
    """Each (address, batch) is followed on its own; a new tensor at an old
    one's address gets the old answer until its own copy is read."""
    a, b = _Lengths([2047, 1, 1, 1], 0x1000), _Lengths([9, 9, 9, 9], 0x2000)
    for t in (a, b):
        call(t, gpu)
    gpu.finish()
    assert call(a, gpu) and not call(b, gpu)
    gpu.finish()
    reused = _Lengths([100, 100, 100, 100], 0x1000)
    assert call(reused, gpu)                         # (a's copy, read before)
    gpu.finish()
    assert not call(reused, gpu)
    assert not call(_Lengths([2047, 1], 0x1000), gpu)   # another batch size: its own


def test_queries_and_pinning_run_in_relaxed_capture_mode(gpu):
    """The event's query and the pinned buffer's allocation are "unsafe" CUDA calls: in the thread's default
    (global) capture mode they invalidate a CUDA graph another thread is capturing in global mode, and raise.
    They run relaxed, the thread's mode restored after; a query that raises all the same gives the answer so
    far (the hint never fails a call)."""
    lens = _Lengths([2047, 1, 1, 1])
    call(lens, gpu)
    assert gpu.allocations == 1 and gpu.modes == [2, 0] and gpu.mode == 0
    gpu.finish()
    gpu.query_fails = True
    assert not call(lens, gpu) and gpu.mode == 0    # (its query raised: not read, no new copy)
    gpu.query_fails = False
    assert call(lens, gpu) and gpu.mode == 0


def test_oldest_dropped_past_the_limit(gpu, monkeypatch):
    monkeypatch.setattr(lengths_hint, "_MAX_TENSORS", 2)
    tensors = [_Lengths([2047, 1], 0x1000 * (i + 1)) for i in range(3)]
    for t in tensors:
        call(t, gpu)
    assert list(lengths_hint._FOLLOWED) == [lengths_hint._key(t) for t in tensors[1:]]


def test_a_failing_copy_drops_the_tensor(gpu, monkeypatch):
    """No pinned memory (or any failure of the copy): no hint for that
    tensor, and the call goes on."""
    def no_pinned(*args, **kwargs):
        raise RuntimeError("no pinned memory")
    monkeypatch.setattr(sys.modules["torch"], "empty", no_pinned)
    lens = _Lengths([2047, 1, 1, 1])
    assert not call(lens, gpu) and not call(lens, gpu)
    assert lengths_hint._FOLLOWED == {}


def test_off(gpu, monkeypatch):
    """FAKV_LENGTHS_HINT=0: never ragged, nothing copied."""
    monkeypatch.setattr(lengths_hint, "ENABLED", False)
    lens = _Lengths([2047, 1, 1, 1])
    for _ in range(3):
        assert not call(lens, gpu)
        gpu.finish()
    assert lengths_hint._FOLLOWED == {} and gpu.allocations == 0


def test_loaded_by_the_first_plan_that_asks():
    # A fresh process: the API loads without the module (a warm start of a plan that does not depend on
    # the lengths never imports it); the first question about the lengths loads it, with the same answer.
    from fresh_process import run_fresh
    script = ("import sys, numpy as np, fakv\n"
              "fakv.flash_attn_with_kvcache\n"
              "from fakv import interface\n"
              "before = 'fakv.lengths_hint' in sys.modules\n"
              "lengths = np.array([1000, 40, 3000, 10], np.int32)\n"
              "answer = interface._ragged(lengths, 4096, False, False)\n"
              "from fakv import lengths_hint\n"
              "print(before, answer, interface.lengths_hint is lengths_hint)\n")
    assert run_fresh(script) == ["False", "True", "True"]       # (a ragged batch: 10 to 3000 of 4096)
