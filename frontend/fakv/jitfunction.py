"""@fakv.jit: kernels compiled on first call, specialised on their argument
types and constexprs, cached in memory and on disk, launched on the GPU
(CUDA tensors) or on the CPU path (numpy arrays and CPU tensors).

    @fakv.jit
    def kernel(X, Y, n, BLOCK: fl.constexpr): ...
    kernel[(grid_x, grid_y, grid_z)](x, y, n, BLOCK=128)
"""
import collections
import enum
import functools
import hashlib
import inspect
import json
import numbers
import linecache
import os
import sys
import threading
import types as _types

from . import _gc_paused, cache, compiler
from . import language as fl
from .compiler import dump_ir
from .errors import CompilationError, DataError, FakvError
from .ir import PtrType
from .runtime import GPUKernel, Pointer, check_cluster, check_packing
from .compiled import Compiled
from .signature import address, arg_type, divisible, extent

compile_only = cache.compile_only
cache_dir = cache.cache_dir

# @fakv.jit's on/off options for the GPU lowering, each the kernel's unit attribute of that name (fakv.swap_ab, ...).
_UNIT_OPTIONS = ("swap_ab", "gather_pages", "row_boxes")
# numpy arrays a kernel names, up to this size, are looked at by their bytes each launch (changed in place: seen);
# larger ones by identity.
_WATCHED_ARRAY_BYTES = 1 << 12
# Held while a kernel's source key is computed or its watched names looked at: one thread at a time (a second
# thread read the first's placeholder key, "computing:NAME", and keyed a disk entry by it: no source in it).
_KEYS = threading.RLock()
os.register_at_fork(after_in_child=_KEYS._at_fork_reinit)    # (a thread of the parent's held it)


class JITFunction:
    __fakv_inline__ = True     # called from a kernel, codegen inlines it (codegen needs no import of jit)

    def __init__(self, fn, stages=2, warp_specialize=True, registers=(0, 0), pack_gqa=None, swap_ab=False,
                 gather_pages=False, row_boxes=False, ctas_per_sm=0, warm_pages=0):
        self.fn = fn
        if pack_gqa not in (None, 0, 1, 2):
            raise ValueError(f"{fn.__name__}: pack_gqa is a grid axis (0, 1 or 2) or None, got {pack_gqa!r}")
        if type(ctas_per_sm) is not int or not 0 <= ctas_per_sm <= 32:
            raise ValueError(f"{fn.__name__}: ctas_per_sm is a number of blocks an SM (0: as many as fit), "
                             f"got {ctas_per_sm!r}")
        if type(stages) is not int or not 1 <= stages <= 8:      # (fakv-pipeline's kMaxStages)
            raise ValueError(f"{fn.__name__}: stages is a number of ring stages in [1, 8], got {stages!r}")
        if type(warp_specialize) is not bool:                  # (the binding's TypeError named no option)
            raise ValueError(f"{fn.__name__}: warp_specialize is True or False, got {warp_specialize!r}")
        if type(warm_pages) is not int or not 0 <= warm_pages <= 8:
            raise ValueError(f"{fn.__name__}: warm_pages is a number of tiles ahead in [0, 8] (0: none), "
                             f"got {warm_pages!r}")
        if not (isinstance(registers, (tuple, list)) and len(registers) == 2
                and all(type(r) is int for r in registers)):      # (the pass checks their values)
            raise ValueError(f"{fn.__name__}: registers is (producer, consumer) registers per thread, two ints "
                             f"((0, 0): none), got {registers!r}")
        self._jit_options = dict(stages=stages, warp_specialize=warp_specialize, registers=tuple(registers),
                                 pack_gqa=pack_gqa, swap_ab=bool(swap_ab), gather_pages=bool(gather_pages),
                                 row_boxes=bool(row_boxes), ctas_per_sm=ctas_per_sm, warm_pages=warm_pages)
        self._variants = {}
        self._function = None
        self._source_key, self._key_version = None, None
        self._watched, self._cells, self._callees, self._containers, self._watch_values = None, [], [], [], None
        # The kernel's file, read now (it may be a temporary file, gone by
        # the first launch); parsed at the first code generation. Python's
        # line cache first checked against the file (it keeps what it read
        # before: a file rewritten and imported again would give the old
        # text, and the old kernel its key).
        linecache.checkcache(fn.__code__.co_filename)
        self._file_lines = list(linecache.getlines(fn.__code__.co_filename, fn.__globals__))
        # The parameters, read off the code object (inspect.signature is slow
        # for a warm start): kernels take positional-or-keyword parameters.
        code = fn.__code__
        self.params = list(code.co_varnames[:code.co_argcount])
        if code.co_kwonlyargcount or code.co_posonlyargcount or \
                code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
            raise TypeError(f"{fn.__name__}: a kernel takes plain parameters (no *args, **kwargs, keyword-only "
                            f"or positional-only ones)")
        defaults = fn.__defaults__ or ()
        self._defaults = dict(zip(self.params[len(self.params) - len(defaults):], defaults))
        annotations = getattr(fn, "__annotations__", {})
        # (under `from __future__ import annotations` an annotation is its text: fl.constexpr, tl.constexpr or
        # constexpr, however the module named fakv.language)
        self.constexprs = [p for p in self.params
                           if annotations.get(p) is fl.constexpr or isinstance(annotations.get(p), fl.constexpr)
                           or (isinstance(annotations.get(p), str)
                               and annotations[p].replace(" ", "").rpartition(".")[2] == "constexpr")]
        self.options = {"stages": stages, "warp_specialize": warp_specialize}
        if tuple(registers) != (0, 0):      # setmaxnreg: (producer, consumer) registers per thread
            self.options["registers"] = list(registers)
        if ctas_per_sm:                     # the launch's shared memory (compiler.with_occupancy)
            self.options["ctas_per_sm"] = ctas_per_sm
        if warm_pages:                      # the kernel's fakv.warm_pages
            self.options["warm_pages"] = warm_pages
        # The GPU lowering's switches (jit's docstring), each a unit attribute `fakv.<name>` on the kernel.
        self.options.update((name, True) for name in _UNIT_OPTIONS if self._jit_options[name])
        names = self.params
        self._constexpr_positions = frozenset(i for i, n in enumerate(names) if n in self.constexprs)
        self._compiled = {}
        self._fast = {}   # argument kinds -> (specialisation, positions of its parameters)
        self._epoch = 0   # bumped when those are cleared: a specialisation made across it is not kept (_KEYS)
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    @property
    def function(self):
        """The source and AST the code generator walks (parsed on first use)."""
        if self._function is None:
            from . import codegen          # (not on a warm start's path)
            self._function = codegen.Function(self.fn, self._file_lines)
        return self._function

    def function_source(self):
        """The lines of the kernel's definition."""
        if self._file_lines:
            return inspect.getblock(self._file_lines[self.fn.__code__.co_firstlineno - 1:])
        return self.function.source.splitlines(keepends=True)    # (codegen's: a clear error where there is none)

    def source_key(self):
        """A hash of what this kernel's IR is made from besides its arguments:
        its source, the kernels it calls (their keys, recursively) and the
        values of the plain globals it names, with the frontend's and the
        compiler's versions. A disk-cache hit needs no code generation.
        Recomputed when a global (or closure variable) it names changed
        (`watch`): a later launch compiles with the new value, under a new key."""
        with _KEYS:
            self.watch()
            version = cache.frontend_version()      # (another assembler's: ptx.reset())
            if self._source_key is None or self._key_version != version:
                # (the placeholder: mutually recursive kernels, in this thread only, no loop)
                self._source_key, self._key_version = f"computing:{self.fn.__qualname__}", version
                try:
                    self._source_key = self._compute_source_key()
                except BaseException:
                    self._source_key = None
                    raise
            return self._source_key

    def _compute_source_key(self):
        """source_key's hash, computed."""
        h = hashlib.sha256(cache.frontend_version().encode())
        if self._file_lines:      # the function's file (cheaper than cutting the function out)
            h.update(f"{self.fn.__qualname__}:{self.fn.__code__.co_firstlineno}:".encode())
            h.update("".join(self._file_lines).encode())
        else:
            h.update("".join(self.function_source()).encode())
        names = sorted(_names(self.fn.__code__))
        for name in names:
            if name not in self.fn.__globals__:
                continue
            value = self.fn.__globals__[name]
            if isinstance(value, _types.ModuleType):
                self._module_key(h, name, value, names, ())
            else:
                h.update(self._key_part(name, value).encode())
        for name, cell in zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ()):
            try:
                h.update(self._key_part(f"closure {name}", cell.cell_contents).encode())
            except ValueError:                 # (an empty cell)
                pass
        return h.hexdigest()

    def _module_key(self, h, name, module, names, outer):
        """What a module the kernel names adds to its key: its name, and what the kernel may name of it
        (`module.attr`, `pkg.sub.attr`: codegen resolves those too), modules inside it followed."""
        h.update(f"{name}=module:{module.__name__}".encode())
        if module is fl or module.__name__.split(".")[0] == "fakv" or module in outer:
            return                               # (the frontend's version keys fakv's own; a cycle once)
        for attr in names:
            try:
                member = getattr(module, attr, None)
            except Exception:  # noqa: BLE001  (a module's own __getattr__ failing)
                member = None
            if isinstance(member, _types.ModuleType):
                self._module_key(h, f"{name}.{attr}", member, names, outer + (module,))
                continue
            part = self._key_part(f"{name}.{attr}", member)
            if part:
                h.update(part.encode())

    def watch(self):
        """Forget what this process compiled when a global or closure variable the kernel, or a kernel it
        calls, names now has another value than when it was keyed (Python's rule: a function sees the
        current globals), so that the next launch generates and keys its code again. One flat look at all
        such names a launch: identity first; small lists, dicts and sets by their text (changed in place).
        Kernels held by closure variables are followed like called ones."""
        with _KEYS:
            self._watch()

    def _watch(self):
        if self._watched is None:
            self._watched, self._cells, self._callees = [], [], []
            todo, seen, helpers = [self], set(), []
            while todo:                       # this kernel and the kernels it calls, each once
                k = todo.pop()
                if id(k) in seen:
                    continue
                seen.add(id(k))
                if k is not self:
                    self._callees.append(k)
                g, attrs, reached = k.fn.__globals__, _names(k.fn.__code__), []
                for name in sorted(_global_names(k.fn.__code__)):
                    value = g.get(name)
                    if isinstance(value, _types.ModuleType):
                        if value is not fl and value.__name__ != "fakv":
                            for attr in sorted(attrs):
                                if attr in value.__dict__:
                                    self._watched.append((value.__dict__, attr))
                                    reached.append(value.__dict__[attr])
                    elif name in g:
                        self._watched.append((g, name))
                        reached.append(value)
                self._cells += list(k.fn.__closure__ or ())
                reached += [c.cell_contents for c in k.fn.__closure__ or () if _filled(c)]
                # Kernels are followed, plain functions watched one level (below), whether named, reached as
                # `module.name` or held in a tuple, list or dict the kernel names (`OPS[0](x)`).
                for v in (v for r in reached for v in _held(r)):
                    (todo if isinstance(v, JITFunction) else helpers).append(v)
            self._own = (len(self._watched), len(self._cells))     # (the kernels' own: _generate)
            # The plain functions those name (a helper the kernel calls at compile time): the globals and closure
            # variables they read, one level, as _function_text keys them (a helper reading a changed global
            # kept the kernel's old code and keyed a new specialisation with it on disk).
            for fn in (f for h in helpers for f in _plain_functions(h)):
                self._watched += [(fn.__globals__, n) for n in sorted(_global_names(fn.__code__))
                                  if n in fn.__globals__ and not isinstance(fn.__globals__[n], _types.ModuleType)]
                self._cells += list(fn.__closure__ or ())
            self._watch_values = None
        now = self._watch_now()
        seen = self._watch_values
        if seen is not None and (len(seen) != len(now) or any(
                a is not b and _changed(a, b) for a, b in zip(seen, now))):
            for k in [self] + self._callees:  # (the kernels it calls may be others now: found again; a callee
                k._source_key, k._watched = None, None     # launched itself no longer sees the change: its
                k._compiled.clear()                        # code is made again too)
                k._fast.clear()
                k._epoch += 1
            return self._watch()
        self._watch_values = now

    def _watch_now(self, objects=None):
        """The watched values now (containers as their _watch_text), of `objects` where given (those of
        _watched_objects)."""
        now = self._watched_objects() if objects is None else list(objects)     # (a launch's: no copy)
        if self._watch_values is None:        # (the containers looked at by their content: found once)
            self._containers = [i for i, v in enumerate(now) if _looked_into(v)]
        for i in self._containers:
            now[i] = _watch_text(now[i])
        return now

    def _keep(self, c, baseline):
        """Keeps specialisation c (under c.key) where no launch dropped this kernel's specialisations since
        its values were taken (another thread's launch saw a change: c may be of the old values), in the same
        hold of the lock as that check; after code generation (_generate's baseline: the epoch and the values
        it was generated from; none where its values did not settle: not kept), those values made the new
        baseline: what the helpers it ran changed of what they read (a memo, a counter) is not a change (each
        launch compiled again); what changed since still is. A disk-cache hit's baseline: (epoch, None)."""
        if baseline is None:
            return
        epoch, values = baseline
        with _KEYS:
            if epoch == self._epoch:
                if values is not None:
                    self._watch_values = values
                self._compiled[c.key] = c

    def _key_part(self, name, value):
        """What a global (or a module's attribute) the kernel names adds to
        its key: a kernel's key, a plain value's repr, else nothing."""
        if isinstance(value, JITFunction):
            part = "" if value is self else f"{name}=jit:{value.source_key()}"
            defaults = value.fn.__defaults__ or ()         # (evaluated where it was defined: not in its file)
            return part + "".join(self._key_part(f"{name} default {i}", d) for i, d in enumerate(defaults))
        if isinstance(value, numbers.Number):
            value = _normalized(value)                  # (numpy scalars as Python numbers)
        if isinstance(value, (bool, int, float, str, bytes, type(None), tuple, list, fl.constexpr, dict, set,
                              frozenset)) or _is_ndarray(value):
            return f"{name}={_canonical(value)}"
        text = _callable_text(value)                    # a plain function (decorated, or a partial): its code
        if text:
            return f"{name}=fn:{text}"
        # A Python class or an object of one (a config the kernel reads `Cfg.SCALE` of): its attributes. Not
        # looked at by watch() (by identity there): a change in place reaches this process's next compile's
        # key, not its compiled code; another process's key always (it ran the old code from disk).
        return f"{name}={_canonical(value)}" if _keyed_global(value) else ""

    @property
    def pack_gqa(self):
        """The grid axis fakv-pack-gqa packs, or None."""
        return self._jit_options["pack_gqa"]

    def with_options(self, **options):
        """This kernel with other `@fakv.jit` options (stages=3, say): the
        same function, compiled and cached separately; one object per set
        of options (self when nothing changes)."""
        current = self._jit_options
        if all(k in current and current[k] == v for k, v in options.items()):
            return self                  # the API's common case, once per call
        unknown = set(options) - set(current)
        if unknown:
            raise TypeError(f"{self.__name__}.with_options: unknown option(s) {sorted(unknown)}")
        merged = dict(current, **options)
        key = tuple(sorted(merged.items(), key=lambda kv: kv[0]))
        variant = self._variants.get(key)
        if variant is None:
            with _KEYS:                  # (two threads asking at once: one object, its specialisations kept)
                variant = self._variants.get(key)
                if variant is None:
                    variant = JITFunction(self.fn, **merged)
                    variant._file_lines = self._file_lines       # (this kernel's text, not the file's now)
                    self._variants[key] = variant
        return variant

    def clear(self):
        """Forget every specialisation compiled in this process (the disk
        cache stays)."""
        with _KEYS:
            self._compiled.clear()
            self._fast.clear()
            self._epoch += 1

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(grid, *args, **kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"launch {self.__name__} with a grid: {self.__name__}[grid](...); "
                           f"call it directly only from another kernel")

    # ---- specialisation ---------------------------------------------------------------

    @property
    def signature(self):
        """inspect's signature of the kernel function."""
        return inspect.signature(self.fn)

    def _bound(self, args, kwargs):
        """Parameter name -> value for a launch, as Python would bind them."""
        if len(args) > len(self.params):
            raise TypeError(f"{self.__name__} takes {len(self.params)} arguments, got {len(args)}")
        bound = dict(zip(self.params, args))
        for k, v in kwargs.items():
            if k not in self.params:
                raise TypeError(f"{self.__name__} got an unexpected keyword argument '{k}'")
            if k in bound:
                raise TypeError(f"{self.__name__} got multiple values for argument '{k}'")
            bound[k] = v
        missing = [p for p in self.params if p not in bound and p not in self._defaults]
        if missing:
            raise TypeError(f"{self.__name__} missing required argument(s): {', '.join(missing)}")
        return {p: bound[p] if p in bound else self._defaults[p] for p in self.params}

    def bind(self, args, kwargs):
        constexprs, types, runtime, on_gpu = {}, {}, [], set()
        for name, value in self._bound(args, kwargs).items():
            if name in self.constexprs:
                value = value.value if isinstance(value, fl.constexpr) else value
                if isinstance(value, numbers.Number):
                    value = _normalized(value)    # (a numpy scalar: Python's arithmetic at compile time, one key)
                constexprs[name] = value
                continue
            t, gpu = arg_type(value, name)
            types[name] = t
            runtime.append((name, value, t))
            if gpu is not None:
                on_gpu.add(gpu)
        if len(on_gpu) > 1:
            raise ValueError(f"{self.__name__}: tensors on the GPU and the CPU in one launch")
        device = "cuda" if on_gpu == {True} else "cpu"
        if compile_only():
            device = "cuda"
        return constexprs, types, runtime, device

    def specialize_for(self, args, kwargs, compile=True):
        """The specialisation a launch with these arguments runs (compiled,
        or found in the caches, now); with compile=False, None when it is in
        neither cache."""
        self.watch()
        constexprs, types, runtime, device = self.bind(args, kwargs)
        return self.specialize(constexprs, types, device, divisible(runtime) if device == "cuda" else (), compile)

    def ir(self, *args, **kwargs):
        """The fakv IR of the specialisation these arguments select."""
        constexprs, types, runtime, _ = self.bind(args, kwargs)
        return self._ir(constexprs, types, divisible(runtime))[0]

    def _ir(self, constexprs, types, divisibility=()):
        from . import codegen
        cg = codegen.CodeGen(self.function)
        warm = self._jit_options["warm_pages"]
        attrs = (() if self.pack_gqa is None else (f"fakv.pack_gqa = {self.pack_gqa} : i32",)) + tuple(
            f"fakv.{name}" for name in _UNIT_OPTIONS if self._jit_options[name]) + (
            (f"fakv.warm_pages = {warm} : i32",) if warm else ())
        func, params = cg.kernel(self.__name__, types, constexprs, divisibility, attrs)
        return "module {\n  " + func + "\n}\n", params

    def specialize(self, constexprs, types, device, divisibility=(), compile=True):
        """The specialisation for these constexprs, argument types and
        divisibility on `device`: from memory, the disk cache (GPU) or
        compiled (None instead with compile=False)."""
        key = (device, tuple(sorted((k, _constexpr_text(v)) for k, v in constexprs.items())),
               tuple((k, repr(t)) for k, t in types.items()), tuple(divisibility))
        c = self._compiled.get(key)
        if c is None:
            with _gc_paused:                # (loading or compiling: fakv/__init__.py's _GCPaused)
                params = [p for p in self.params if p not in constexprs]
                c = Compiled(self.__name__, params, device,
                             lambda: self._ir(constexprs, types, divisibility)[0])
                c.key = key
                loaded = self._load_gpu(c, key) if device == "cuda" else None
                if loaded is not None:
                    self._keep(c, (loaded, None))
                elif not compile:
                    return None
                else:
                    baseline = self._generate(c, key)
                    if dump_ir():
                        print(f"// fakv IR of {self.__name__} {dict(constexprs)}\n{c.ir}", file=sys.stderr)
                    if device == "cuda":
                        self._compile_gpu(c, store=baseline is not None)
                    else:
                        self._compile_cpu(c, types)
                    self._keep(c, baseline)     # (not kept: run now, generated again by the next launch)
        return c

    # ---- GPU ----------------------------------------------------------------------------

    def _load_gpu(self, c, key):
        """Names c's disk-cache entry and loads it when it is there: this kernel's epoch at its naming (for
        _keep), or None."""
        with _KEYS:
            self._name_entry(c, key, self.source_key())
            epoch = self._epoch
        hit = cache.load(c.entry)
        if hit is None:
            return None
        c.binary, c.facts = hit
        c.cache = "hit"
        return epoch

    def _name_entry(self, c, key, source_key):
        opts = dict(self.options, chip="sm_90a")
        text = json.dumps([self.pack_gqa, source_key, key[1:], opts], sort_keys=True)
        c.entry = hashlib.sha256(text.encode()).hexdigest()[:32]
        c.path = os.path.join(cache_dir(), c.entry + ".cubin")

    def _generate(self, c, key):
        """c's IR, generated from the values that name its disk entry (GPU): the source key is made again
        now, from the values code generation is about to read (the kept one may predate a change watch() does
        not see: a container past its size, a module's module's attribute; an entry stored under it held code
        of other values, which another process with the old values hit), and before generation, so that a
        memo a helper fills while it runs still hits in the next process. A global of the kernel's own (or
        its callees', or their closure variables) rebound meanwhile (another thread) gave code of the new
        value under the old key (on disk, and kept in memory for good: the change taken as the baseline):
        the code is generated again, up to three times, each time after watch() (which drops the
        specialisations made from the old values). Returns the baseline for _keep (this kernel's epoch and
        the watched values the code was generated from), or None where a rebinding never stopped: then the
        code is neither stored on disk nor kept. Taken as the helpers' own, not a change: a kernel's global
        changed in place (a memo the kernel names too) and any global only a plain helper reads (another
        thread's changes of those are not told apart)."""
        for _ in range(3):
            with _KEYS:
                self._watch()                  # (a change since: the old values' specialisations dropped)
                epoch, watched, own_names, own_cells = self._epoch, self._watched, *self._own
                objects = self._watched_objects()
                seen = self._watch_now(objects)
                fresh = self._compute_source_key() if c.device == "cuda" else None    # (the CPU path: no entry)
                if fresh is not None and fresh != self._source_key:     # (later lookups by it too)
                    self._name_entry(c, key, fresh)
                    self._source_key = fresh
            c.regenerate()
            with _KEYS:
                if self._epoch != epoch or self._watched is not watched:
                    continue
                after = self._watched_objects()
                now = self._watch_now(after)
            own = list(range(own_names)) + list(range(len(watched), len(watched) + own_cells))
            if not any(objects[i] is not after[i] and _changed(seen[i], now[i]) for i in own):
                return epoch, now
        return None

    def _watched_objects(self):
        """The watched names' objects now (what a rebinding changes; _watch_now's texts change in place too)."""
        return [space.get(name) for space, name in self._watched] + [
            cell.cell_contents if _filled(cell) else None for cell in self._cells]

    def _compile_gpu(self, c, store=True):
        c.binary, c.facts = compiler.compile_gpu(self.__name__, c.ir, dict(self.options, chip="sm_90a"))
        if store and cache.sources_as_imported():     # (else the code compiled may not be what the key names)
            cache.store(c.entry, c.binary, c.facts)
        c.cache = "miss"

    # ---- CPU ----------------------------------------------------------------------------

    def _compile_cpu(self, c, types):
        c.cpu = compiler.compile_cpu(self.__name__, c.ir, c.params, types)
        c.kinds = [("ptr" if isinstance(types[p], PtrType) else types[p].dtype) for p in c.params]
        c.cache = "cpu"

    # ---- launching ------------------------------------------------------------------------

    def _key(self, args, kwargs, compiling):
        """The fast-path key: the kind of each runtime argument, the value of
        each constexpr, and whether launches only compile. None when a value
        cannot be keyed (the launch then takes the slow path)."""
        cpos = self._constexpr_positions
        try:
            kinds = tuple(_constexpr_key(a) if i in cpos else _kind(a) for i, a in enumerate(args))
            kw = tuple((k, _constexpr_key(v) if k in self.constexprs else _kind(v)) for k, v in kwargs.items())
            key = (kinds, kw, compiling)
            hash(key)
            return key
        except TypeError:
            return None

    def run(self, grid, *args, stream=None, **kwargs):
        # A launch like an earlier one (same argument kinds and constexpr
        # values) skips binding and specialising: the host cost of a cached
        # launch.
        compiling = compile_only()
        self.watch()
        try:
            key = self._key(args, kwargs, compiling)
        except _Normalize:          # numpy scalars, int subclasses, DLPack arrays of other libraries
            args = tuple(map(_normalized, args))
            kwargs = {k: _normalized(v) for k, v in kwargs.items()}
            key = self._key(args, kwargs, compiling)
        fast = self._fast.get(key) if key is not None else None
        if fast is None:
            constexprs, types, runtime, device = self.bind(args, kwargs)
            # The CPU lowering has no use for divisibility: one module serves all.
            c = self.specialize(constexprs, types, device, divisible(runtime) if device == "cuda" else ())
            positions = [self.params.index(p) for p in c.params]
            if key is not None and all(i < len(args) for i in positions):
                with _KEYS:
                    if self._compiled.get(c.key) is c:   # (not where it was not kept, or dropped since)
                        if len(self._fast) >= 1024:
                            self._fast.clear()
                        self._fast[key] = (c, positions)
            by_name = {name: value for name, value, _ in runtime}
            values = [by_name[p] for p in c.params]
        else:
            c, positions = fast
            values = [args[i] for i in positions]
        if callable(grid):             # (Triton's grid(meta): every argument by name, defaults included)
            meta = {**self._defaults, **dict(zip(self.params, args)), **kwargs}
            grid = grid({k: v.value if isinstance(v, fl.constexpr) else v for k, v in meta.items()})
        if type(grid) is not tuple or not 1 <= len(grid) <= 3 or not all(type(g) is int for g in grid):
            grid = _grid(self.__name__, grid)
        grid = (grid + (1, 1, 1))[:3]
        if min(grid) < 0:
            raise ValueError(f"{self.__name__}[{grid}]: the grid's sizes are >= 0")
        if max(grid) >= 2 ** 31 or (c.device == "cuda" and max(grid[1:]) > 65535):
            raise ValueError(f"{self.__name__}[{grid}]: CUDA's grid holds up to 2**31 - 1 programs on axis 0 and "
                             f"65535 on axes 1 and 2")
        if c.device == "cuda":
            if compiling:
                return c
            kernel = GPUKernel.for_device(c, values)
            check_cluster(self.__name__, grid, kernel.facts.get("cluster", (1, 1, 1)))
            kernel.launch(grid, values, stream)
        else:
            call, extents = [], []
            for v, kind in zip(values, c.kinds):
                call.append(("ptr", address(v)) if kind == "ptr" else (kind, v))
                if kind == "ptr":
                    extents.append(extent(v))
            check_packing(self.__name__, grid, c.cpu.grid_packing.get(compiler.cpu_symbol(self.__name__), (1, 1, 1)))
            call += [("i32", int(g)) for g in grid]
            faults = c.cpu.call("__fakv_launch", call, extents)
            if faults & 2:
                raise DataError(f"kernel `{self.__name__}` read or wrote outside the arrays it was given (a load or "
                                f"store without bounds= or mask=?), or wrote a read-only one, on the CPU path; those "
                                f"accesses were skipped (loads gave 0). On the GPU they read or corrupt other memory")
            if faults & 1:
                raise DataError(f"kernel `{self.__name__}` divided an integer by zero (or INT_MIN by -1) on "
                                f"the CPU path; the GPU gives an unspecified value there")
        return c


_PLAIN = (bool, int, float, str, bytes, type(None), tuple, frozenset)
_REPR_KEYED = frozenset((int, bool, float, str, bytes, type(None)))     # (keyed by their repr as they are)


def _constexpr_text(value):
    """A constexpr's part of a specialisation's key (_canonical): for a kernel (a score_mod passed as a
    constexpr, say) its source key (what it calls and the globals it names included: looked at again each
    time), for a plain function its code and the values it reads: those alone where each was keyed by its
    content (another process loads the binary from the disk cache); with the object (an address, in this
    process only) where one was keyed by its type only (a global of another file's function, a large list:
    two functions of one text may differ there)."""
    if type(value) is JITFunction:
        return f"jit:{value.source_key()}"
    before = _UNKEYED.count
    try:
        text = _callable_text(value)
    except (CompilationError, FakvError, KeyboardInterrupt):
        raise
    except Exception:  # noqa: BLE001  (an object's own __class__ or __getattr__ failing: _canonical's rule)
        text = None
    if text:        # (the object too where part of it was keyed by its type only: _UNKEYED)
        return f"fn:{text}" if _UNKEYED.count == before else f"fn:{text}:{_identity(value)}"
    return _canonical(value)


def _is_ndarray(value):
    return type(value).__module__ == "numpy" and type(value).__name__ == "ndarray"


def _canonical(value, depth=0, memo=None):
    """A value as key text, one text a value: reprs, but sets in sorted order and numpy arrays by dtype, shape
    and a hash of their bytes (numpy's repr elides past 1000 elements and rounds to 8 digits: two tables
    differing in one entry shared a key), containers element by element, Python classes and their instances
    and default-repr objects by their attributes (_object_text), enum members by class, name and value.
    A container or object met again in one text is keyed once (memo: a list holding itself three times
    took exponential time); one met inside itself, or nested deeper than _KEY_DEPTH, by its type's name.
    Inside something (depth > 0) a repr holding an address (a lock, a builtin method) is its type's name: an
    address made the key another in every process. A value whose keying raises (its own __repr__, a dead
    weak proxy) is keyed by its type and identity."""
    t = type(value)
    if t in _REPR_KEYED:
        return repr(value)
    if depth > _KEY_DEPTH:
        _UNKEYED.count += 1
        return f"deep:{t.__module__}.{t.__qualname__}"
    memo = {} if memo is None else memo
    found = memo.get(id(value))
    if found is not None:
        return found[1] if found[1] is not None else f"cycle:{t.__module__}.{t.__qualname__}"
    memo[id(value)] = (value, None)     # (in progress; held, so that no temporary of the walk takes its id)
    try:
        text = _keyed(value, t, depth, memo)
    except (CompilationError, FakvError, KeyboardInterrupt):
        raise
    except Exception:  # noqa: BLE001  (a user's __repr__ or attribute failing, a dead weak proxy)
        _UNKEYED.count += 1
        text = f"{t.__module__}.{t.__qualname__}@{_identity(value)}"
    memo[id(value)] = (value, text)
    return text


def _keyed(value, t, depth, memo):
    """_canonical's text of a value not keyed by its repr alone."""
    inner = depth + 1
    if isinstance(value, fl.constexpr):
        return f"constexpr({_canonical(value.value, inner, memo)})"
    np = sys.modules.get("numpy")
    if np is not None and isinstance(value, np.ndarray):
        dtype = value.dtype.str if value.dtype.fields is None else repr(value.dtype.descr)
        if value.dtype == object:
            data = _canonical(value.tolist(), inner, memo)
        else:
            data = hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest()
        text = f"ndarray({dtype},{value.shape},{data})"
        if t is not np.ndarray:             # (np.ma, np.matrix: the subclass and what it holds besides)
            text = f"{t.__module__}.{t.__qualname__}:{text}:{_canonical(getattr(value, '__dict__', {}), inner, memo)}"
        return text
    if isinstance(value, (tuple, list, collections.deque, set, frozenset, dict)):
        # Subclasses (a namedtuple, a defaultdict) named by their class's text: its fields, its factory.
        kind = t.__name__ if t in (tuple, list, set, frozenset, dict) else _object_text(t, inner, memo)
        if isinstance(value, collections.defaultdict):
            kind += f"[{_canonical(value.default_factory, inner, memo)}]"
        if isinstance(value, dict):
            items = sorted(f"{_canonical(k, inner, memo)}:{_canonical(v, inner, memo)}" for k, v in value.items())
        else:
            items = [_canonical(v, inner, memo) for v in value]
            if isinstance(value, (set, frozenset)):
                items.sort()
        return f"{kind}({','.join(items)})"
    # A kernel or a plain function in a container (`OPS = (scale, shift)`): its source key or code, as a global
    # of its own is keyed (a repr holds an address: a miss in every process, or a stale hit where one repeats).
    if isinstance(value, JITFunction):
        return f"jit:{value.source_key()}"
    if isinstance(value, enum.Enum):
        return f"enum:{t.__module__}.{t.__qualname__}.{value.name}={_canonical(value.value, inner, memo)}"
    text = _callable_text(value, inner, memo)
    if text:
        return f"fn:{text}"
    if isinstance(value, type) and value.__flags__ & _HEAP_TYPE or (
            t.__flags__ & _HEAP_TYPE or t.__repr__ is object.__repr__ or t is _types.SimpleNamespace):
        text = _object_text(value, inner, memo)
        if text is not None:
            return text
    text = repr(value)
    if " at 0x" in text:          # (an address: inside something by the type alone, else by its identity)
        _UNKEYED.count += 1
        return f"{t.__module__}.{t.__qualname__}" + ("" if depth else f"@{_identity(value)}")
    return text


_KEY_DEPTH = 16                         # (_canonical's nesting; objects: _OBJECT_DEPTH levels of it)
_OBJECT_DEPTH = 6
_HEAP_TYPE = 1 << 9                     # (Py_TPFLAGS_HEAPTYPE: a class defined in Python)
_METHODS = (_types.FunctionType, staticmethod, classmethod, property)
# Counts the values keyed by their type (or identity) only, not their content: past the depths, an address in a
# repr, a keying that raised, a helper's global of another kind (_function_text). A function constexpr whose
# text took none is keyed by it alone (the disk cache serves it to a later process); else by its object too.
# Per thread: another thread keying meanwhile made a fully keyed function's key this process's own (its binary
# stored under an entry no other process finds).
class _Count(threading.local):
    count = 0


_UNKEYED = _Count()


def _identity(value):
    """An object's identity in key text: its address and this process's token. (The address alone went to
    the disk cache's entry names: a forked worker, or a process without address randomisation, had the same
    address for another value and loaded the binary compiled for that.)"""
    return f"{_PROCESS[0]}:{id(value):x}"


_PROCESS = [os.urandom(8).hex()]
os.register_at_fork(after_in_child=lambda: _PROCESS.__setitem__(0, os.urandom(8).hex()))


def _object_text(value, depth, memo):
    """A class defined in Python, or an object of one (or with the default repr: an address), as key text:
    its class's module and name and the attributes it holds, by content (a class's own and its bases', an
    object's own and its class's; of the dunders only methods: __call__, __init__ ...), objects in them
    likewise while depth < _OBJECT_DEPTH (deeper: by their class). None for an object without a plain
    __dict__ (its repr then). repr named a class only, and a dataclass by its fields' reprs: two classes of
    one name from a factory, or one whose attribute changed, shared a kernel (on disk too)."""
    cls = value if isinstance(value, type) else type(value)
    name = f"object:{cls.__module__}.{cls.__qualname__}"
    spaces = [c.__dict__ for c in reversed(cls.__mro__) if c is not object]
    if not isinstance(value, type):
        try:
            own = object.__getattribute__(value, "__dict__")
        except Exception:  # noqa: BLE001  (slots, or a __dict__ that is a property raising)
            own = _slots(value, cls)
        if type(own) is not dict:
            return None
        spaces.append(own)
    if depth >= _OBJECT_DEPTH:
        _UNKEYED.count += 1
        return name
    attrs = {}
    for space in spaces:
        attrs.update((k, v) for k, v in space.items() if type(k) is str and (
            not (k.startswith("__") and k.endswith("__")) or isinstance(v, _METHODS)))
    parts = []
    for key in sorted(attrs):
        v = attrs[key]
        if isinstance(v, (staticmethod, classmethod)):
            v = v.__func__
        elif isinstance(v, property):
            v = v.fget
        parts.append(f"{key}={_canonical(v, depth + 1, memo)}")
    return f"{name}({','.join(parts)})"


def _slots(value, cls):
    """An object's __slots__ values as a dict (None where it has no slots, or one cannot be read plainly)."""
    names = [n for c in cls.__mro__ for n in ((c.__dict__.get("__slots__") or ()) if not isinstance(
        c.__dict__.get("__slots__"), str) else (c.__dict__["__slots__"],))]
    if not names:
        return None
    own = {}
    for n in names:
        try:
            own[n] = object.__getattribute__(value, n)
        except AttributeError:       # (an unset slot)
            continue
        except Exception:  # noqa: BLE001
            return None
    return own


def _callable_text(value, depth=0, memo=None):
    """A plain function's key text (_function_text), through what decorates or binds it (functools.wraps's
    __wrapped__, lru_cache, functools.partial, a bound method's object: each layer's code and arguments
    keyed; a builtin by its name); None for anything else (a class, an object)."""
    parts = []
    for layer in _callable_layers(value):
        if isinstance(layer, functools.partial):
            parts.append(f"partial({_canonical(layer.args, depth + 1, memo)},"
                         f"{_canonical(layer.keywords, depth + 1, memo)})")
        elif isinstance(layer, _types.MethodType):
            parts.append(f"method({_canonical(layer.__self__, depth + 1, memo)})")
        elif isinstance(layer, _types.BuiltinFunctionType):
            owner = getattr(layer, "__self__", None)
            bound = "" if owner is None or isinstance(owner, _types.ModuleType) else \
                f"({_canonical(owner, depth + 1, memo)})"
            parts.append(f"builtin:{getattr(layer, '__module__', None)}.{layer.__qualname__}{bound}")
        elif isinstance(layer, _types.FunctionType):
            parts.append(_function_text(layer, depth, memo))
    return ";".join(parts) or None


def _callable_layers(value):
    """A callable's layers, outermost first: a functools.partial (then its func), a bound method (then its
    function), a builtin (the last), a plain function, and what __wrapped__ (functools.wraps, lru_cache) leads
    to from any of them; other values are passed through (the callers pick what they key)."""
    seen = set()
    while value is not None and id(value) not in seen:
        seen.add(id(value))
        yield value
        if isinstance(value, functools.partial):
            value = value.func
        elif isinstance(value, _types.MethodType):
            value = value.__func__
        elif isinstance(value, _types.BuiltinFunctionType):
            return
        else:
            try:
                value = getattr(value, "__wrapped__", None)
            except Exception:  # noqa: BLE001  (an object's own __getattr__ failing)
                value = None


def _function_text(fn, depth=0, memo=None):
    """What a plain function's result may depend on, as a hash: its code (the code nested in it too:
    comprehensions, lambdas, inner functions, by content, not by the address their repr holds), its
    defaults (keyword-only ones too) and closure values, the values of the globals it names (one level:
    plain values, numbers, arrays, Python classes and their objects; lists, dicts and sets of up to
    _WATCHED_ITEMS items, as watch() looks at them; anything else, larger containers too, by its type),
    and the text of the file it was defined in (the helpers it calls there, however deep)."""
    code, parts = fn.__code__, []
    for v in list(fn.__defaults__ or ()) + sorted((fn.__kwdefaults__ or {}).items()) + \
            [c.cell_contents for c in fn.__closure__ or () if _filled(c)] + \
            [fn.__globals__.get(n) for n in sorted(_global_names(code))]:
        if _keyed_global(v):
            parts.append(_canonical(v, depth + 1, memo))
        elif isinstance(v, _types.ModuleType):
            parts.append(f"module:{v.__name__}")
        else:       # (a function of the same file: the file's text below holds its code)
            if not (isinstance(v, _types.FunctionType) and v.__code__.co_filename == code.co_filename):
                _UNKEYED.count += 1
            parts.append(type(v).__name__)
    text = repr((fn.__qualname__, _code_digest(code), parts))
    return hashlib.sha256(text.encode()).hexdigest()


def _keyed_global(v):
    """Whether a helper's global (or default, or closure value) is keyed by its value (_function_text)."""
    t = type(v)
    if isinstance(v, _PLAIN) or isinstance(v, numbers.Number) or _is_ndarray(v):
        return True
    if t in (list, dict, set):
        return len(v) <= _WATCHED_ITEMS
    return (isinstance(v, type) and bool(v.__flags__ & _HEAP_TYPE)) or t is _types.SimpleNamespace or (
        bool(t.__flags__ & _HEAP_TYPE) and not isinstance(v, (_types.FunctionType, JITFunction)))


_CODE_DIGESTS = {}      # id(code) -> (code, digest): kept alive, so an id is never another code's


def _code_digest(code):
    """_code_text and the text of its file, hashed once a code object (a file edited and imported again makes
    new code objects)."""
    found = _CODE_DIGESTS.get(id(code))
    if found is None or found[0] is not code:
        if len(_CODE_DIGESTS) >= 4096:
            _CODE_DIGESTS.clear()
        text = repr((_code_text(code), _file_digest(code.co_filename)))
        found = _CODE_DIGESTS[id(code)] = (code, hashlib.sha256(text.encode()).hexdigest())
    return found[1]


def _code_text(code):
    """A code object's content as text: bytecode, names and constants, nested code objects likewise."""
    consts = [_code_text(c) if isinstance(c, _types.CodeType) else _canonical(c) for c in code.co_consts]
    return repr((code.co_code, code.co_names, consts))


_FILE_DIGESTS = {}      # (path, size, mtime) -> the file's sha256


def _file_digest(path):
    """The sha256 of a source file's text ("" where there is none: a REPL's or exec's code)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return ""
    key = (path, st.st_size, st.st_mtime_ns)
    if key not in _FILE_DIGESTS:
        try:
            with open(path, "rb") as f:
                _FILE_DIGESTS[key] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            return ""
    return _FILE_DIGESTS[key]


def _filled(cell):
    try:
        cell.cell_contents
        return True
    except ValueError:
        return False


def _held(value):
    """A value, then what it holds one level down when it is a tuple, list, dict (its values), set or frozenset
    of up to _WATCHED_ITEMS items."""
    yield value
    if type(value) in (tuple, list, dict, set, frozenset) and len(value) <= _WATCHED_ITEMS:
        yield from (value.values() if type(value) is dict else value)


def _plain_functions(value):
    """The plain functions a value is, through what decorates or binds it (_callable_layers)."""
    return [layer for layer in _callable_layers(value) if isinstance(layer, _types.FunctionType)]


_WATCHED_ITEMS = 1000    # containers looked into by content up to this many items (larger: by identity)


def _looked_into(value):
    """Whether _watch compares a value by its content (_watch_text) rather than by identity: lists, dicts and
    sets of up to _WATCHED_ITEMS items, arrays of up to _WATCHED_ARRAY_BYTES, and tuples and frozensets holding
    any of those (a tuple holding a list changed in place was missed)."""
    t = type(value)
    if t in (list, dict, set):
        return len(value) <= _WATCHED_ITEMS
    if t in (tuple, frozenset):
        return len(value) <= _WATCHED_ITEMS and any(type(v) not in _REPR_KEYED for v in value)
    return _is_ndarray(value) and value.nbytes <= _WATCHED_ARRAY_BYTES


def _watch_text(value, depth=0, seen=None):
    """A watched container's content as text, looked at each launch: plain values by repr, arrays of up to
    _WATCHED_ARRAY_BYTES by a hash of their bytes (larger ones, and containers past _WATCHED_ITEMS items or
    nested deeper than 8, by identity), containers element by element, anything else by identity. (repr
    elided a 2000-element array in a dict: a change there was missed.)"""
    t = type(value)
    if t in _REPR_KEYED:
        return repr(value)
    if _is_ndarray(value) and value.nbytes <= _WATCHED_ARRAY_BYTES:
        return _canonical(value)
    seen = set() if seen is None else seen
    if t in (list, tuple, set, frozenset, dict) and len(value) <= _WATCHED_ITEMS and depth < 8 and \
            id(value) not in seen:                 # (one met again in the walk: by identity; it is held)
        seen.add(id(value))
        items = value.items() if t is dict else ((None, v) for v in value)
        inner = [f"{_watch_text(k, depth + 1, seen)}:{_watch_text(v, depth + 1, seen)}" for k, v in items]
        return f"{t.__name__}({','.join(sorted(inner) if t in (set, frozenset, dict) else inner)})"
    return f"{t.__name__}@{id(value)}"


def _changed(a, b):
    """Whether a watched value changed: not the same object and not an equal plain value (a comparison that
    fails counts as a change)."""
    if a is b:
        return False
    try:
        if not (type(a) in _PLAIN and type(a) is type(b) and bool(a == b)):
            return True
        # Equal is not the same where it compiles otherwise: 0.0 and -0.0, (3,) and (3.0,) (a kernel dividing
        # by the one or multiplying by the other kept the old code).
        return type(a) in (float, tuple, frozenset) and _watch_text(a) != _watch_text(b)
    except Exception:  # noqa: BLE001
        return True


@functools.lru_cache(maxsize=4096)
def _global_names(code):
    """The names a function's code (and the code nested in it) loads as globals."""
    import dis
    names = set()
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
            names.add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, _types.CodeType):
            names |= _global_names(const)
    return frozenset(names)


def _names(code):
    """The global and attribute names a function's code (and the code nested
    in it) refers to."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, _types.CodeType):
            names |= _names(const)
    return names


def _grid(name, grid):
    """A launch grid as a tuple of 1 to 3 ints (an int is a 1-D grid)."""
    if isinstance(grid, numbers.Integral) and not isinstance(grid, bool):
        return (int(grid),)
    if not isinstance(grid, (tuple, list)) or not 1 <= len(grid) <= 3 or \
            not all(isinstance(g, numbers.Integral) and not isinstance(g, bool) for g in grid):
        raise ValueError(f"{name}[grid]: the grid is 1 to 3 ints (or a function of the arguments giving them), "
                         f"got {grid!r}")
    return tuple(int(g) for g in grid)


class _Normalize(Exception):
    """An argument to convert before keying: see _normalized."""


def _is_foreign(value):
    return hasattr(value, "__dlpack__") and not type(value).__module__.startswith(("torch", "numpy"))


def _normalized(value):
    """numpy scalars and int/float subclasses as Python numbers; a DLPack
    array of another library (CuPy, JAX, ...) as a torch tensor over the same
    memory."""
    import numbers
    import numpy as np
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return _normalized(value.item())
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if _is_foreign(value):
        import torch
        return torch.from_dlpack(value)
    return value


def _constexpr_key(value):
    """A constexpr's value, keyed as specialize() keys it (1, 1.0 and True
    differ)."""
    if isinstance(value, fl.constexpr):
        value = value.value
    t = type(value)
    return t, (repr(value) if t in _REPR_KEYED else _constexpr_text(value))


def _kind(value):
    """What of an argument selects a specialisation (hashable): its type,
    dtype, device and divisibility by 16."""
    t = type(value)
    if t is int:
        if -2**31 <= value < 2**31:
            return 1, value % 16 == 0
        if -2**63 <= value < 2**63:
            return 2, value % 16 == 0
        raise TypeError                  # past 64 bits: no key, bind() refuses it by name
    if t is float or t is bool:
        return t
    if t is Pointer:
        return t, value.dtype, value.device, value.address % 16 == 0
    if hasattr(value, "data_ptr"):       # torch
        return t, value.dtype, value.get_device(), value.data_ptr() % 16 == 0
    if t.__module__.startswith("numpy"):
        if getattr(value, "ndim", 0) == 0 or not hasattr(value, "ctypes"):
            raise _Normalize()           # a numpy scalar
        return t, value.dtype, address(value) % 16 == 0
    if isinstance(value, (int, float)) or _is_foreign(value):
        raise _Normalize()
    return t                             # bind() says what is wrong with it


def jit(fn=None, *, stages=2, warp_specialize=True, registers=(0, 0), pack_gqa=None, swap_ab=False,
        gather_pages=False, row_boxes=False, ctas_per_sm=0, warm_pages=0):
    """Make `fn` a fakv kernel (see the module docstring). `pack_gqa=axis`:
    the kernel is written per query head h = program_id(axis) with kv head
    h // GROUP (GROUP a constexpr); fakv-pack-gqa packs the GROUP heads of a
    kv head into one program (launch it over the per-head grid). GPU options:
    `stages` (K/V ring depth), `warp_specialize` (a producer warpgroup issues
    the copies), `registers` ((producer, consumer) registers per thread moved
    with setmaxnreg; (0, 0): none), `swap_ab` (a dot of fewer than 64 rows and
    a multiple of 64 columns runs as wgmmas of its transposes, both operands
    from shared memory: less tensor work for few rows), `gather_pages` (a
    paged load of pages smaller than its tile is gathered by the producer's
    threads with cp.async, not copied by a TMA box per page), `row_boxes` (a
    TMA-copied tile goes in boxes of at most 16 rows, each box's 64-channel
    parts asked for together: the planned calls' default, docs/decisions.md), `ctas_per_sm`
    (at most that many of its blocks an SM: each launched with the shared
    memory that leaves room for no more; 0: as many as fit), `warm_pages` (N
    in [1, 8]: each asynchronous paged copy also prefetches into L2 the first
    lines of the tile N tiles ahead, its pages looked up: an experiment,
    docs/decisions.md; 0: none)."""
    def make(f):
        return JITFunction(f, stages, warp_specialize, registers, pack_gqa, swap_ab, gather_pages, row_boxes,
                           ctas_per_sm, warm_pages)
    return make if fn is None else make(fn)
