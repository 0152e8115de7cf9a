"""Prepared calls' recipes on disk (on unless FAKV_RECIPES=0;
docs/decisions.md, "A warm start without interface.py").

The slow path of flash_attn_with_kvcache (interface.py) checks a call,
plans it and gives prepare.call what the PreparedCall is made of. For a
call the fast path keeps, that input is written here as JSON (the call's
tensors named by their argument, the error word and other buffers by kind,
the kernels' cache index key), under a key another process computes the
same from the same arguments' layouts and options, the same device, the
same FAKV_* switches and the same code. A new process's first call of that
signature then prepares it from the recipe (api.py), without the checks
and the plan (what a signature seen before in the same process skips too).
A recipe that is missing, does not parse or does not restore sends the call
down the slow path.
"""
import hashlib
import json
import os
import sys

from . import cache, prepare
from . import tensors as T
from .runtime import Pointer

# FAKV_RECIPES=0: no recipe read or written.
ENABLED = os.environ.get("FAKV_RECIPES") != "0"
# The FAKV_* switches (interface.py reads its own when imported; these when this loads, at a first call).
_SWITCHES = cache.fakv_switches()


def _layout(t):
    if t is None or type(t) is int:
        return None if t is None else "int"
    return [list(t.shape), list(T.strides(t)), T.dtype(t), T.device_index(t), t.data_ptr() % 16 == 0]


def key(arguments, options, check_mode, device):
    """The recipe key of a call: `arguments` its 12 tensor arguments (or
    None, or an int cache_seqlens) in fakv._runtime.signature's order,
    `options` its scalar options, `device` (SM count, L2 bytes, memory GB/s)."""
    text = json.dumps([cache.kernels_version(), _SWITCHES, list(device), [_layout(a) for a in arguments],
                       [repr(o) for o in options], check_mode])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _path(k):
    return os.path.join(cache.cache_dir(), "recipes", k + ".json")


def encode(values, arguments, errors):
    """A kernel's argument list as JSON: the call's arguments by index, the
    error word by name, other buffers by element type (made again as null
    pointers: PreparedCall fills their slots per call), numbers as they are.
    None when a value is of none of these kinds."""
    out = []
    for v in values:
        if v is None or isinstance(v, (bool, int, float)):
            out.append(v)
            continue
        i = next((i for i, a in enumerate(arguments) if v is a), None)
        if i is not None:
            out.append({"arg": i})
        elif v is errors:
            out.append({"errors": v.dtype})
        else:
            from .signature import arg_kind
            try:
                kind, _ = arg_kind(v, "buffer")
            except TypeError:
                return None
            if not kind.startswith("ptr<"):
                return None
            out.append({"buffer": kind[4:-1]})
    return out


def decode_values(items, arguments, errors, device):
    """encode's inverse for this call's arguments and error word."""
    out = []
    for v in items:
        if isinstance(v, dict):
            if "arg" in v:
                v = arguments[v["arg"]]
            elif "errors" in v:
                v = errors
            else:
                v = Pointer(0, v["buffer"], device)
        out.append(v)
    return out


def kernel_ref(fn):
    """A default kernel (prepare.Lazy) as JSON."""
    return None if fn is None else {"module": fn.module, "name": fn.__name__,
                                    "options": sorted([k, v] for k, v in fn.options.items())}


def options_of(ref):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in ref["options"]}


def store(k, recipe):
    """Writes a recipe (quietly nothing when the cache cannot be written, or when the code it was planned by
    changed since its key was taken: cache.compiled_as_keyed)."""
    if not cache.compiled_as_keyed():
        return
    try:
        data = json.dumps(recipe).encode()
    except (TypeError, ValueError):
        return
    cache.write_quietly(_path(k), hashlib.sha256(data).hexdigest().encode() + b"\n" + data)


def load(k):
    """The recipe of key `k`, or None (none, or one damaged: its checksum,
    the first line, is of the rest)."""
    try:
        sha, _, data = cache.read(_path(k)).partition(b"\n")
        if hashlib.sha256(data).hexdigest().encode() != sha:
            return None
        recipe = json.loads(data)
        return recipe if isinstance(recipe, dict) else None
    except (OSError, ValueError, RecursionError):
        return None


_patched = False        # plans_as_keyed() has found this process's plans patched


def plans_as_keyed():
    """Whether this process plans as its environment's FAKV_* switches (the
    key's) say: false once fakv.interface's switches, constants or
    functions have been patched in it (tests, benches: interface.patched();
    plans made meanwhile stay in interface._plan's cache), while they were
    read from another environment, or while prepare.MERGE_SPLITS is
    patched; no recipe is written or used then. (A process that has not
    imported fakv.interface plans as its environment says.)"""
    global _patched
    interface = sys.modules.get("fakv.interface")
    if _patched or (interface is not None and interface.patched()):
        _patched = True
        return False
    if interface is not None and interface.ENV_AS_IMPORTED != _SWITCHES:
        return False
    return prepare.MERGE_SPLITS == (dict(_SWITCHES).get("FAKV_MERGE_SPLITS") == "1")


def _recipe_argument(a):
    return a is None or type(a) is int or T.is_torch(a)


def key_of(arguments, options, check_mode):
    """The recipe key of a GPU call, or None where a recipe cannot apply:
    host checks, the CPU path, compiling only, an argument neither None, an
    int nor a torch tensor (the slow path says what is wrong), a tensor
    without storage, plans patched in process."""
    q = arguments[0]
    if (check_mode == 1 or not (T.is_torch(q) and q.is_cuda) or cache.compile_only()
            or not all(_recipe_argument(a) for a in arguments) or not plans_as_keyed()):
        return None
    try:
        return key(arguments, options, check_mode, T.device_properties(q))
    except (AttributeError, TypeError, ValueError, RuntimeError, OSError):   # (a tensor without storage, say)
        return None


def store_call(arguments, options, check_mode, decode, decode_args, decode_consts, decode_grid, combine,
               combine_args, combine_consts, combine_grid, errors, index, **scalars):
    """Writes the recipe of a call the fast path keeps (prepare.call's
    input: the kernels, their arguments, constexprs and grids, their cache
    index key `index`, `scalars` its other parameters), when every argument
    of its kernels is of a kind a recipe names and the kernels are indexed."""
    k = None if index is None else key_of(arguments, options, check_mode)
    if k is None:
        return
    encoded = [encode(decode_args, arguments, errors), encode(combine_args, arguments, errors)]
    if None in encoded:
        return
    store(k, dict(scalars, decode=kernel_ref(decode), decode_args=encoded[0], decode_consts=decode_consts,
                  decode_grid=list(decode_grid), combine=kernel_ref(combine), combine_args=encoded[1],
                  combine_consts=combine_consts, combine_grid=list(combine_grid), index=index))


def prepared(k, arguments):
    """The PreparedCall of a call from the recipe of key `k` (key_of's), or
    None (no recipe, or one that does not restore)."""
    r = load(k)
    if r is None:
        return None
    q = arguments[0]
    try:
        errors, dev = prepare.errors_for(q), q.get_device()
        decode = prepare.Lazy.get(r["decode"]["module"], r["decode"]["name"], **options_of(r["decode"]))
        combine = r["combine"] and prepare.Lazy.get(r["combine"]["module"], r["combine"]["name"],
                                                    **options_of(r["combine"]))
        return prepare.call(
            decode, decode_values(r["decode_args"], arguments, errors, dev), r["decode_consts"],
            tuple(r["decode_grid"]), combine, decode_values(r["combine_args"], arguments, errors, dev),
            r["combine_consts"], tuple(r["combine_grid"]), q, tuple(r["lse_shape"]), r["part_out"],
            r["part_lse"], r["return_lse"], r["capacity"], r["copy_q"], 0, r["paged"],
            early_decode=r["early_decode"], combine_slots=None, index=r["index"])
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, ImportError, OverflowError):
        return None                      # (ImportError: a kernel module it names is gone; the slow path says why)
