"""Whether a batch's cache_seqlens are ragged, as the planner's hint: read
from an earlier call's lengths, copied to the host asynchronously (no call
waits for the GPU).

The launch of a call is planned from shapes (interface._plan); the kernels
read cache_seqlens on the GPU. One plan depends on the lengths themselves:
a batch of one wave over long caches runs one program per sequence, so a
ragged batch lasts as long as its longest sequence, while kernels/splits.py's
ADAPTIVE launch (4 splits, each sequence using as many as the lengths call
for) costs an equal-length batch a few percent (docs/decisions.md, "Ragged
batches"). So a call of such a shape asks `ragged(seqlens)`: the answer comes
from the lengths of an earlier call with the same cache_seqlens tensor (a
decode loop's lengths grow by one a step: how ragged they are changes
slowly), copied to pinned host memory behind that call (copy_after, once
it is launched) on its device's current stream and read by a later call
once the copy has finished; False until one has. A stale answer only
costs time: the kernel decides from the lengths it reads either way.
FAKV_LENGTHS_HINT=0: never ragged (the plan from shapes only).
"""
import contextlib
import os

_RELAXED = 2            # CU_STREAM_CAPTURE_MODE_RELAXED
ENABLED = os.environ.get("FAKV_LENGTHS_HINT") != "0"
_MAX_TENSORS = 64       # tensors followed at once (more: the oldest dropped)


def is_ragged(lengths, capacity):
    """kernels/splits.py's test, on the host: some length (clamped to [0,
    capacity]) is more than 1/8 (and one) above the mean."""
    n = [min(max(int(x), 0), capacity) for x in lengths]
    if not n:
        return False
    longest, mean = max(n), sum(x // len(n) for x in n)
    return longest > mean + mean // 8 + 1


class _Follow:
    """One cache_seqlens tensor's pinned host copy, the event that marks it
    done, whether it has been read, and the answer so far."""
    __slots__ = ("host", "event", "read", "ragged")

    def __init__(self, host, event):
        self.host, self.event, self.read, self.ragged = host, event, False, False


_FOLLOWED = {}          # (address, batch, device) -> _Follow


def _key(seqlens):
    return seqlens.data_ptr(), seqlens.shape[0], seqlens.device.index


def ragged(seqlens, capacity, capturing=False):
    """The hint for a call with the int32 CUDA tensor `seqlens`, before it
    is launched: whether the last lengths copied from it (copy_after) were
    ragged (is_ragged); False until a copy has finished. A finished copy is
    read here (not while a CUDA graph is captured: the answer so far).
    Followed by address: a new tensor at an old one's address gets the old
    answer until a copy of its own has been read."""
    if not ENABLED:
        return False
    follow = _FOLLOWED.get(_key(seqlens))
    if follow is None:
        return False
    if not capturing and not follow.read:
        try:
            with _relaxed():
                done = follow.event.query()
        except Exception:  # noqa: BLE001  (the hint never fails a call: the answer so far)
            return follow.ragged
        if done:
            follow.ragged, follow.read = is_ragged(follow.host.tolist(), capacity), True
    return follow.ragged


@contextlib.contextmanager
def _relaxed():
    """The calling thread in relaxed stream-capture mode: an event's query and a page pinned are "unsafe"
    calls that invalidate a CUDA graph another thread captures in torch's default global mode (and raise
    here), though they touch none of its streams (session 54's review; runtime/fakv_runtime.cpp's
    RelaxedCapture does the same for module loads)."""
    from . import _runtime
    old = _runtime.exchange_capture_mode(_RELAXED)
    try:
        yield
    finally:
        _runtime.exchange_capture_mode(old)


def copy_after(seqlens, capturing=False):
    """After a call with `seqlens` is launched: starts a copy of its lengths
    to the host behind it, on the current stream of its device, unless the
    last copy has not been read yet (or a CUDA graph is being captured).
    The first copy of a tensor allocates its pinned buffer. A failure drops
    the tensor (the hint stays False for it): the hint never fails a call."""
    if not ENABLED or capturing:
        return
    key = _key(seqlens)
    follow = _FOLLOWED.get(key)
    if follow is not None and not follow.read:
        return
    try:
        import torch
        with _relaxed():        # (a page pinned, the event made at its first record)
            if follow is None:
                if len(_FOLLOWED) >= _MAX_TENSORS:
                    _FOLLOWED.pop(next(iter(_FOLLOWED)))
                follow = _FOLLOWED[key] = _Follow(torch.empty(seqlens.shape, dtype=torch.int32, pin_memory=True),
                                                  torch.cuda.Event())
            follow.host.copy_(seqlens, non_blocking=True)   # (torch: on the current stream of seqlens' device)
            follow.event.record(torch.cuda.current_stream(seqlens.device))
        follow.read = False
    except Exception:  # noqa: BLE001  (no pinned memory, another device's event, ...: no hint for it)
        _FOLLOWED.pop(key, None)


def forget():
    """Drops every followed tensor (tests)."""
    _FOLLOWED.clear()
