"""What a prepared GPU call (fakv._runtime.PreparedCall) is made of: the
kernels' specialisations, found through the cache's index without importing
the kernels and the DSL (a warm start) or compiled in parallel threads,
their launchers, and the argument templates each call fills in.

The API's slow path (interface.py) prepares a call after checking and
planning it; a recipe (recipes.py) prepares one from what an earlier
process's slow path gave. Neither needs the other's module here.
"""
import functools
import numbers
import os

from . import cache, runtime
from . import tensors as T
from .compiled import Compiled
from .errors import FakvError, capacity_error


def is_flag(x):
    """A bool as FlashAttention's bindings take one: a bool or an int, numpy's bool scalars too (not a str, which
    Python would take as true). (interface checks the API's flags by it; api.py makes them bools by it, the keys
    of both paths being of bools.)"""
    return isinstance(x, numbers.Integral) or (getattr(x, "shape", None) == () and str(getattr(x, "dtype", "")) == "bool")


class Lazy:
    """A kernel of fakv.kernels, with @fakv.jit options, imported only when
    it is compiled or run on the CPU path: the API's GPU calls specialise
    through specialise_all, which finds a kernel already compiled by any
    process through the cache's index, without importing the kernels and
    the DSL (a warm start). One object per (module, name, options)."""
    _made = {}

    def __init__(self, module, name, options):
        self.module, self.__name__, self.options, self._fn = module, name, options, None

    @classmethod
    def get(cls, module, name, **options):
        key = (module, name, tuple(sorted(options.items())))
        if key not in cls._made:
            cls._made[key] = cls(module, name, options)
        return cls._made[key]

    def with_options(self, **options):
        return Lazy.get(self.module, self.__name__, **dict(self.options, **options))

    def resolve(self):
        """The JITFunction (the kernel's module imported now)."""
        if self._fn is None:
            import importlib
            fn = getattr(importlib.import_module("fakv.kernels." + self.module), self.__name__)
            self._fn = fn.with_options(**self.options) if self.options else fn
        return self._fn

    def __getitem__(self, grid):
        return self.resolve()[grid]


def errors_for(like):
    """Where a kernel launched on `like`'s device reports bad data: the
    process's error word (a runtime.Pointer) on the GPU, a fresh int32 array
    on the CPU path."""
    if T.device(like) == "cuda":
        device = T.device_index(like)
        return runtime.Pointer(runtime.error_word(device=device), "i32", device)
    import numpy as np
    return np.zeros(1, np.int32)


def raw_allocator(torch, device):
    """torch's caching allocator as (alloc(nbytes, stream) -> address,
    delete(address)) on device `device` (an index), or (None, None) when
    this torch has no such binding. torch's binding allocates on the device
    torch holds current (c10::cuda::GetDevice), which a device guard's exit
    may leave other than the driver's current context (a device without a
    context yet: torch only notes it): then `device` is made current for
    the allocation (the prepared call's launches make the call's context
    current again: LaunchKernel.cpp's function())."""
    alloc = getattr(torch._C, "_cuda_cudaCachingAllocator_raw_alloc", None)
    delete = getattr(torch._C, "_cuda_cudaCachingAllocator_raw_delete", None)
    current, on_device = torch._C._cuda_getDevice, torch.cuda.device

    def alloc_on(nbytes, stream):
        if current() == device:
            return alloc(nbytes, stream)
        with on_device(device):
            return alloc(nbytes, stream)
    try:                                   # (the probe on `device` too, whatever torch holds current)
        delete(alloc_on(256, torch.cuda.current_stream(device).cuda_stream))
    except Exception:  # noqa: BLE001  (another signature: torch.empty instead)
        return None, None
    return alloc_on, delete


class SeqlensTensors:
    """An int (or absent) cache_seqlens as the address of a (batch,) int32
    tensor: one tensor per value and stream for eager calls (the last 64;
    filled in that stream's order, freed in it), and one for each call
    captured into a CUDA graph (`capturing`), kept for the process's life:
    the graph reads it at every replay, and its fill runs only when the
    graph does (an eager call never gets it). Returns the tensor: the
    prepared call holds it until its kernels are queued (another thread's
    call of the same signature may drop it from here meanwhile: its block,
    freed, could be filled with another value before this call's decode)."""

    def __init__(self, batch, capacity, device, seqlen_new=0, paged=False):
        self.batch, self.capacity, self.device, self.tensors = batch, capacity, device, {}
        self.seqlen_new, self.paged, self.captured = seqlen_new, paged, []

    def __call__(self, value, capturing=False, stream=0):
        if value is None:
            value = self.capacity
        t = None if capturing else self.tensors.get((value, stream))
        if t is None:
            if not (type(value) is int and 0 <= value <= self.capacity):
                raise FakvError(f"flash_attn_with_kvcache: cache_seqlens ({value}) must be in "
                                f"[0, {self.capacity}] (the cache's rows)")
            if value + self.seqlen_new > self.capacity:
                raise capacity_error(0, value, self.seqlen_new, self.capacity, self.paged)
            import torch
            t = torch.full((self.batch,), value, dtype=torch.int32, device=self.device)
            if capturing:
                self.captured.append(t)
            else:
                if len(self.tensors) >= 64:
                    self.tensors.clear()
                self.tensors[value, stream] = t
        return t


_POOL = None        # the compiling threads (specialise_all); a forked child has none of them: made again there


def _forget_pool():
    global _POOL
    _POOL = None


os.register_at_fork(after_in_child=_forget_pool)


def specialise_all(jobs, index=None):
    """The specialisations of (kernel, args, constexprs) jobs, compiled in
    parallel threads when there are several (the compiler releases the GIL).
    Jobs of fakv.kernels' own kernels (Lazy) are first looked up in the
    cache's index (under `index` when given: a recipe's), and indexed once
    found or compiled."""
    global _POOL
    if index is None:
        index = index_of(jobs)
    if index is not None:
        found = indexed(index)
        # (an entry of other kernels than the jobs': rewritten or corrupt, though its checksums hold: compiled)
        if found is not None and [c.name for c in found] == [fn.__name__ for fn, _, _ in jobs]:
            return found
        INDEXED.pop(index, None)
    # (with_kernels' calls mix a user's kernel with a lazy default one)
    jobs = [(fn.resolve() if isinstance(fn, Lazy) else fn, args, consts) for fn, args, consts in jobs]
    found = [fn.specialize_for(args, consts, compile=False) for fn, args, consts in jobs]   # the caches
    missing = [i for i, c in enumerate(found) if c is None]
    if len(missing) == 1 or (missing and _driver_assembles()):
        for i in missing:
            fn, args, consts = jobs[i]
            found[i] = fn.specialize_for(args, consts)
    elif missing:
        build = lambda i: jobs[i][0].specialize_for(jobs[i][1], jobs[i][2])      # noqa: E731
        try:
            if _POOL is None:        # kept: each compiling thread keeps its MLIR context
                from concurrent.futures import ThreadPoolExecutor
                _POOL = ThreadPoolExecutor(4, thread_name_prefix="fakv-compile")
            compiled = _POOL.map(build, missing)      # (submitted now; a compile's error comes below)
        except RuntimeError:         # no new threads at interpreter exit (an atexit function's first call)
            compiled = map(build, missing)
        for i, c in zip(missing, compiled):
            found[i] = c
    if index is not None and all(c.device == "cuda" and getattr(c, "entry", None) for c in found) \
            and cache.compiled_as_keyed():
        cache.store_index(index, [(c.entry, c.name, c.params, c.binary, c.facts) for c in found])
        INDEXED[index] = found          # (this process's next prepare: these, their kernels loaded once)
    return found


def _driver_assembles():
    """Whether the CUDA driver assembles PTX (FAKV_ASSEMBLER=driver, or no other found): its linker assembles for
    the calling thread's current context, which the compile pool's threads have none of, so jobs are compiled
    in the calling thread then."""
    from . import ptx
    try:
        return ptx.assembler()[0] == "driver"
    except Exception:  # noqa: BLE001  (none at all: the compile says so, wherever it runs)
        return False


def index_of(jobs):
    """The cache index's key of jobs that are all fakv.kernels' own (Lazy),
    else None (a with_kernels kernel's specialisations are not indexed)."""
    return index_key(jobs) if all(isinstance(fn, Lazy) for fn, _, _ in jobs) else None


def index_key(jobs):
    """The cache index's key of Lazy jobs: what their specialisations depend
    on besides the kernels' sources (cache.index_key adds those): each
    kernel and its options, the constexprs, each argument's type and
    divisibility (signature.py, as the JIT keys them)."""
    from .signature import arg_kind, divisible
    parts = []
    for fn, args, consts in jobs:
        runtime_args = [(i, v, arg_kind(v, str(i))[0]) for i, v in enumerate(args)]
        parts.append([fn.module, fn.__name__, sorted(fn.options.items()),
                      sorted((k, repr(v)) for k, v in consts.items()),
                      [t for _, _, t in runtime_args], divisible(runtime_args)])
    return cache.index_key(parts)


INDEXED = {}


def indexed(index):
    """The Compiled binaries of an index entry (kept per process, with
    those this process compiled or found by the JIT for it), or None when
    the entry is missing or does not check out."""
    found = INDEXED.get(index)
    if found is None:
        items = cache.load_index(index)
        if items is None:
            return None
        found = []
        for entry, name, params, binary, facts in items:
            c = Compiled(name, params, "cuda", None)
            c.binary, c.facts = binary, facts
            c.entry, c.cache, c.path = entry, "index", os.path.join(cache.cache_dir(), entry + ".cubin")
            found.append(c)
        INDEXED[index] = found
    return found


# decode.py's pointer parameters a PreparedCall fills in per call: Q, K, V,
# Table, Seqlens, Out, Lse, OutPart, LsePart, BatchIdx, Slopes, KNew, VNew,
# Cos, Sin, LeftPad.
DECODE_SLOTS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 24, 28, 35, 36, 40, 41, 32)


def jobs_of(decode, decode_args, decode_consts, combine, combine_args, combine_consts, q, copy_q):
    """The specialisation jobs of a call's kernels, with stand-ins (16-byte
    aligned null pointers, as torch's allocations are aligned) for what
    each call allocates (its outputs and partial results; q's copy)."""
    ptr, dev = runtime.Pointer, q.get_device()
    decode_args = list(decode_args)
    decode_args[5:9] = [ptr(0, T.dtype(q), dev), ptr(0, "f32", dev), ptr(0, "f32", dev), ptr(0, "f32", dev)]
    if decode_args[28] is None:
        decode_args[28] = ptr(0, "f32", dev)
    if copy_q:
        decode_args[0] = ptr(0, T.dtype(q), dev)
    jobs = [(decode, decode_args, decode_consts)]
    if combine is not None:
        combine_args = [ptr(0, "f32", dev), ptr(0, "f32", dev), ptr(0, T.dtype(q), dev), ptr(0, "f32", dev),
                        *combine_args[4:]]
        jobs.append((combine, combine_args, combine_consts))
    return jobs


def call(decode, decode_args, decode_consts, decode_grid, combine, combine_args, combine_consts,
         combine_grid, q, lse_shape, part_out, part_lse, return_lse, capacity, copy_q, seqlen_new, paged,
         early_decode=False, combine_slots=None, index=None):
    """The PreparedCall of a checked GPU call: decode and combine specialised and
    compiled (in parallel threads when both compile; `index`: their cache
    index key, when known), their launchers made; `early_decode`: decode
    launched programmatically too (interface._EARLY_DECODE_BYTES)."""
    jobs = jobs_of(decode, decode_args, decode_consts, combine, combine_args, combine_consts, q, copy_q)
    compiled = specialise_all(jobs, index)
    kernels_ = [runtime.GPUKernel.for_device(c, args).kernel for c, (_, args, _) in zip(compiled, jobs)]

    def template(args):
        # The slots' addresses are filled in per call; the others stay as
        # given (the error word's, the counters').
        return [v.data_ptr() if hasattr(v, "data_ptr") else v if isinstance(v, (int, float)) else 0
                for v in args]
    import torch
    decode_args, dev = jobs[0][1], q.get_device()
    combine_args = jobs[1][1] if combine is not None else []
    k_cache = decode_args[1]
    up = lambda n: -(-n // 64) * 64  # noqa: E731  (256-byte parts: the kernels assume 16-byte alignment)
    part_out, part_lse = 4 * up(part_out), 4 * up(part_lse)
    lse_bytes = 0 if return_lse else 4 * lse_shape[0] * lse_shape[1] * lse_shape[2]
    raw_alloc, raw_delete = raw_allocator(torch, dev)
    device = q.device                      # (the kept call holds no tensor of the call that prepared it)
    from . import _runtime
    runtime.bind_context_if_none(torch.cuda.current_device())   # (a thread whose first CUDA work this is)
    return _runtime.PreparedCall(
        decode=kernels_[0], decode_grid=tuple(decode_grid), decode_args=template(decode_args),
        decode_slots=DECODE_SLOTS, combine=kernels_[1] if combine is not None else None,
        combine_grid=tuple(combine_grid), combine_args=template(combine_args),
        cache_layout=tuple(k_cache.shape) + tuple(k_cache.stride()),
        ws_bytes=max(4, part_out + part_lse + lse_bytes), part_out_bytes=part_out, part_lse_bytes=part_lse,
        return_lse=bool(return_lse), copy_q=bool(copy_q), empty_like=torch.empty_like,
        empty_lse=functools.partial(torch.empty, lse_shape, dtype=torch.float32, device=q.device),
        raw_alloc=raw_alloc, raw_delete=raw_delete, stream=runtime.stream_getter(dev),
        seqlens_tensor=SeqlensTensors(q.shape[0], capacity, q.device, seqlen_new, paged),
        empty_workspace=lambda n: torch.empty(n // 4, dtype=torch.float32, device=device),
        early_decode=bool(early_decode), combine_slots=combine_slots)


# ---- the prepared calls the API's fast path runs, one per signature ---------------------------
# A torch call whose arguments have the shapes, strides, dtypes, devices,
# alignment and options of an earlier one runs that call's PreparedCall
# (api.py): kept by keep() under key(), found by run (the same bytes, in C).

# FAKV_MERGE_SPLITS=1: with several splits, the decode kernel's last split
# of each row merges them (kernels/splits.py's merge_splits, through
# fl.atomic_add on a counter per row): one launch instead of decode + combine.
# Not the default until measured on the GPU. interface.py plans it; its
# counters are one buffer per stream (calls on one stream run in turn), so a
# prepared call's key holds the mode and then the stream (key).
MERGE_SPLITS = os.environ.get("FAKV_MERGE_SPLITS") == "1"

# os.environ's own mapping (bytes on POSIX): a read of it costs a tenth of
# os.environ.get's, which is on every call's path; it sees os.environ's
# changes, as os.environ.get does.
_ENV, _CHECK_DATA = (os.environ._data, b"FAKV_CHECK_DATA") if isinstance(
    getattr(os.environ, "_data", None), dict) and os.name == "posix" else (os.environ, "FAKV_CHECK_DATA")
_MODES = {b"1": 1, "1": 1, b"0": 0, "0": 0}


def check_data():
    """FAKV_CHECK_DATA as 1 ("1": check cache_seqlens, block_table and
    cache_batch_idx on the host before every GPU launch, a copy to the host
    that waits for the GPU; not while a CUDA graph is captured), 0 ("0": no
    host checks on the CPU path either) or None (unset: the CPU path checks
    on the host, the GPU path does not). Kernels check and report bad data
    whatever it says."""
    return _MODES.get(_ENV.get(_CHECK_DATA))


_STREAMS = {}           # device index (None: the current device) -> runtime.stream_getter(it), once needed


def current_stream(q=None):
    """The handle of the current CUDA stream of q's device (None: of the current device). (api.py's fast path
    keys before it makes q's device current: the current device's stream there never matched the key the
    slow path made inside the guard, and every merging call on another device was prepared again.)"""
    device = q.get_device() if getattr(q, "is_cuda", False) else None
    get = _STREAMS.get(device)
    if get is None:
        get = _STREAMS[device] = runtime.stream_getter(device)
    return get()


tensor_type = None      # torch.Tensor, once a call has seen torch (api.py's fast path: calls of such a q)
_signature = None       # fakv._runtime.signature, then
run = None              # fakv._runtime.run_prepared, then: api.py's fast path
CALLS = {}              # key -> PreparedCall (or interface._ByLengths)
MAX_CALLS = 256
KEPT = set()            # the with_kernels kernels the keys name


def see_torch():
    """The fast path's tensor type and signature, once a GPU call is prepared."""
    global tensor_type, _signature, run
    if tensor_type is None:
        import torch
        from . import _runtime
        _runtime.set_tensor_type(torch.Tensor)
        tensor_type, _signature, run = torch.Tensor, _runtime.signature, _runtime.run_prepared


def extras(q=None):
    """What a call's key holds beyond its arguments: the data-check mode
    and, when decode merges its splits, the stream (q's device's)."""
    return check_data(), ((current_stream(q),) if MERGE_SPLITS else None)


def key(kernels, q, k_cache, v_cache, cache_seqlens, block_table, cache_batch_idx, alibi_slopes, k, v, rotary_cos,
        rotary_sin, cache_leftpad, softmax_scale, causal, window_size, softcap, rotary_interleaved, num_splits,
        return_softmax_lse):
    """(key, addresses) of a call (fakv._runtime.signature), or None when an
    argument is of a kind the key cannot hold. The calls that prepare make
    it here; api.py's fast path makes the same bytes in C (run: the 12
    tensors, the 7 options, then extras(), the kernels by identity)."""
    return _signature((q, k_cache, v_cache, cache_seqlens, block_table, cache_batch_idx, alibi_slopes, k, v,
                       rotary_cos, rotary_sin, cache_leftpad),
                      (softmax_scale, causal, window_size, softcap, rotary_interleaved, num_splits,
                       return_softmax_lse) + extras(q), kernels)


def keep(found_key, call, kernels):
    """Keeps a prepared call for the fast path."""
    if len(CALLS) >= MAX_CALLS:
        CALLS.clear()
        KEPT.clear()        # (no key names them now: with_kernels' pairs made and dropped no longer pile up)
    CALLS[found_key] = call
    KEPT.add(kernels)                                # the key holds their identities
