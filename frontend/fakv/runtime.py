"""Launching compiled kernels on torch tensors through fakv._runtime (the
extension over the CUDA driver in runtime/), on the current CUDA stream, and
the error word kernels report bad data in.

A parameter "ptr" takes a CUDA tensor (or an int address); integer and float
parameters take Python numbers; each tensor map the kernel's TMA copies need
is encoded from the tensor passed at the parameter it names (a KV cache) and
appended.
"""
import os
import sys
import threading

from .errors import DataError

_KINDS = {"ptr": "p", "i1": "b", "i8": "c", "i32": "i", "i64": "l", "f32": "f"}


def check_packing(name, grid, packing):
    """A kernel packed by fakv-pack-gqa runs grid[i] / packing[i] programs."""
    for axis, (g, p) in enumerate(zip(grid, packing)):
        if g % p:
            raise ValueError(f"{name}: grid axis {axis} is {g}, not a multiple of the {p} query heads "
                             f"that fakv-pack-gqa packs into one program")


def check_cluster(name, grid, cluster):
    """A kernel of clusters (fl.cluster_gather) runs whole clusters."""
    for axis, (g, c) in enumerate(zip(grid, cluster)):
        if g % c:
            raise ValueError(f"{name}: grid axis {axis} is {g}, not a multiple of the {c} programs of its "
                             f"clusters (fl.cluster_gather)")


class Pointer:
    """An address on (or mapped into) a CUDA device, passed to a kernel's
    pointer parameter of element type `dtype` ("f32", "i32", ...): memory
    that is not a tensor, such as the error word."""
    __slots__ = ("address", "dtype", "device")
    is_cuda = True

    def __init__(self, address, dtype, device=0):
        self.address, self.dtype, self.device = int(address), dtype, device

    def data_ptr(self):
        return self.address

    def get_device(self):
        return self.device

    def __repr__(self):
        return f"Pointer({self.address:#x}, {self.dtype})"


class GPUKernel:
    """A kernel of a cubin, with its launch facts (fakv-compile's JSON entry):
    a fakv._runtime.Kernel, which loads the cubin into each CUDA context that
    launches it and converts, packs and launches in one call."""

    @staticmethod
    def for_device(compiled, values):
        """The GPUKernel of a specialisation, checking that its tensor
        arguments are all on the current device (one on another GPU would be
        read through an address of the wrong device: an illegal address, or
        over NVLink with peer access)."""
        import torch
        devices = {v.get_device() for v in values if getattr(v, "is_cuda", False)}
        current = torch._C._cuda_getDevice()
        if len(devices) > 1:
            raise ValueError(f"{compiled.name}: the tensors are on several devices "
                             f"({', '.join(f'cuda:{d}' for d in sorted(devices))}); a kernel reads one device's")
        if devices and current not in devices:
            (device,) = devices
            raise ValueError(f"{compiled.name}: the tensors are on cuda:{device} but the current device is "
                             f"cuda:{current}; launch inside `with torch.cuda.device({device}):`")
        if compiled.kernel is None:
            compiled.kernel = GPUKernel(compiled.binary, compiled.facts["kernels"][0])
        return compiled.kernel

    def __init__(self, binary, facts):
        import torch
        from . import _runtime
        torch.empty(1, device="cuda")  # the current device's primary context is current from here on
        self.facts = facts
        kinds = facts["params"][: len(facts["params"]) - len(facts["tensormaps"])]
        self.nparams = len(kinds)
        self.kernel = _runtime.Kernel(binary, facts["name"], "".join(_KINDS[k] for k in kinds),
                                      [(tm["arg"], tm["rows"]) for tm in facts["tensormaps"]],
                                      facts["threads"], facts["smem_bytes"],
                                      tuple(facts.get("grid_packing", (1, 1, 1))),
                                      bool(facts.get("dependent_launch", False)))
        self.launch_raw = self.kernel.launch     # (gx, gy, gz, stream, *args)
        self._stream = stream_getter()

    def launch(self, grid, args, stream=None):
        gx, gy, gz = grid
        stream = self._stream() if stream is None else stream
        try:
            self.launch_raw(gx, gy, gz, stream, *args)
        except RuntimeError as e:
            # A thread whose first CUDA work this is has no current context (torch binds one lazily, and
            # none of its calls before the launch did): bound as torch would bind it, then launched.
            import torch
            try:
                bound = bind_context_if_none(torch.cuda.current_device())
            except RuntimeError:
                raise e from None
            if not bound:
                raise
            self.launch_raw(gx, gy, gz, stream, *args)


def bind_context_if_none(device):
    """In a thread with no current CUDA context (torch binds one lazily: a
    thread whose first CUDA work is fakv's has none), binds device
    `device`'s primary context, the one torch would bind, and returns True;
    returns False where the thread has a context already."""
    from . import _runtime
    if _runtime.current_context():
        return False
    _runtime.bind_primary_context(device)
    return True


def stream_getter(device=None):
    """A function returning the handle of the current CUDA stream of
    `device` (an index; None: the current device), as torch's own ops on a
    tensor of that device pick it, by torch's fastest way available."""
    import functools
    import torch
    raw, get_device = getattr(torch._C, "_cuda_getCurrentRawStream", None), getattr(torch._C, "_cuda_getDevice", None)
    if raw is not None and get_device is not None:
        return functools.partial(raw, device) if device is not None else lambda: raw(get_device())
    if device is not None:
        return lambda: torch.cuda.current_stream(device).cuda_stream
    return lambda: torch.cuda.current_stream().cuda_stream


# ---- the error word -----------------------------------------------------------------------
# Kernels that find bad data (a cache length past the cache, a block-table
# entry outside the cache's pages) mask it and store a code in one int32 of
# page-locked host memory, which the host reads without waiting for the GPU:
# the next API call (or fakv.synchronize()) raises DataError.

ERROR_KINDS = {1: "cache_seqlens", 2: "block_table", 3: "cache_batch_idx", 4: "cache_seqlens",
               5: "cache_leftpad", 6: "rotary_cos"}
_ROW_BITS = 24
ERROR_ROWS = 1 << _ROW_BITS     # a code holds its batch row below this: code % ERROR_ROWS
_WHAT = {1: "is negative or more than the cache holds",
         2: "has a block-table entry, among those its length uses, outside [0, num_blocks) (with cache_batch_idx: "
            "in the block_table row cache_batch_idx gives it, or that index is outside block_table's rows)",
         3: "is outside [0, the cache's batch)",
         4: "plus the new keys exceeds the capacity of the cache (max_num_blocks_per_seq * page_block_size "
            "addressable by block_table, when paged): nothing of this row was appended (other rows' new keys "
            "were: retry only the rows that failed)",
         5: "is negative or past the sequence's keys",
         6: "has fewer rows than the positions q is rotated at (cache_seqlens + seqlen_q - 1 when causal "
            "or local)"}
_word = None
_take = None        # fakv._runtime.take_word, once the word exists


def error_code(kind, row_base=0):
    """The code a kernel stores for bad data of `kind` (ERROR_KINDS) in
    batch row r: error_code(kind) + r."""
    return (kind << _ROW_BITS) + row_base


def error_word(context=None, device=None):
    """The address of the error word (allocated at first use, or by
    start_error_word's native thread: then waited for; `context`: the CUDA
    context to allocate in, made current in this thread; else, in a thread
    without a current context, `device`'s primary context is bound first:
    host memory is mapped in a context)."""
    global _word, _take
    if _word is None:
        with _word_lock:
            if _word is None:
                from . import _runtime
                _take = _runtime.take_word
                word = _early and _runtime.wait_host_mapped()
                if not word:      # (_word stays None until an allocation succeeds: a failure is retried)
                    if context is None and device is not None:
                        bind_context_if_none(device)
                    word = _runtime.host_mapped(64, context)
                _word = word
    return _word


_word_lock = threading.Lock()
os.register_at_fork(after_in_child=_word_lock._at_fork_reinit)    # (a thread of the parent's held it)
_early = False      # start_error_word started the allocation


def start_error_word():
    """When this thread has a current CUDA context already (torch
    initialised), begins allocating the error word in that context in a
    native thread (fakv._runtime.start_host_mapped): the driver pins a page
    (~0.5-1 ms on the H200) while a new process's first call does its
    Python work (this is called when the API is imported). error_word()
    waits for it; a failure there leaves the allocation, and its exception,
    to error_word()."""
    global _early
    torch = sys.modules.get("torch")
    if _word is not None or _early or torch is None or not torch.cuda.is_initialized():
        return
    try:
        from . import _runtime
        context = _runtime.current_context()
        if not context:
            return
        _runtime.start_host_mapped(64, context)
    except Exception:  # noqa: BLE001  (no extension, no driver: error_word() will say so)
        return
    _early = True
    import atexit
    atexit.register(_runtime.wait_host_mapped)      # (not inside the driver while the process exits)


def describe(code, where="a fakv kernel"):
    kind, row = code >> _ROW_BITS, code % ERROR_ROWS
    name = ERROR_KINDS.get(kind, f"argument kind {kind}")
    return (f"{where} found bad data: {name} of batch row {row} {_WHAT.get(kind, 'is out of range')}; "
            f"the outputs of that call are not valid (nothing was read out of bounds). On the GPU, "
            f"FAKV_CHECK_DATA=1 checks the data before every launch (waiting for the GPU)")


def raise_pending():
    """Raises DataError if a kernel reported bad data since the last check
    (kernels still running may report later)."""
    if _word is not None:
        code = _take(_word)
        if code:
            raise DataError(describe(code))


def synchronize(device=None):
    """Waits for `device` (a torch device or index; None: the current one),
    then raises DataError if a fakv kernel reported bad data. After calls on
    another device than the current one, name theirs: a kernel still
    running there reports later."""
    try:
        import torch
    except ImportError:          # (the CPU path without torch: its kernels report as they return)
        torch = None
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize(device)
    raise_pending()
