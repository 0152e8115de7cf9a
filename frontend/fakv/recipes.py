"""Prepared calls' recipes on disk (FAKV_RECIPES=1; an experiment, not yet
measured on the GPU: docs/decisions.md, "Next: a warm start without
interface.py").

The slow path of flash_attn_with_kvcache checks a call, plans it and gives
interface._prepare what the PreparedCall is made of. For a call the fast
path keeps, that input is written here as JSON (the call's tensors named
by their argument, the error word and other buffers by kind), under a key
another process computes the same from the same arguments' layouts and
options, the same device, the same FAKV_* switches and the same code. A
new process's first call of that signature then prepares it from the
recipe, without the checks and the plan (what a signature seen before in
the same process skips too). A recipe that is missing, does not parse or
does not restore sends the call down the slow path.
"""
import hashlib
import json
import os
import threading

from . import cache
from . import tensors as T
from .runtime import Pointer
from .signature import address, arg_kind

# The FAKV_* switches (interface.py reads its own when imported; these when this loads, at a first call).
_SWITCHES = sorted((k, v) for k, v in os.environ.items() if k.startswith("FAKV_") and k != "FAKV_CACHE_DIR")
# The frontend's files a recipe depends on besides cache.kernels_version()'s (the plan, the checks, this).
_SOURCES = ("interface.py", "heuristics.py", "tensors.py", "signature.py", "runtime.py", "cache.py", "recipes.py")
_HERE = os.path.dirname(os.path.abspath(__file__))
_version = None


def _code_version():
    global _version
    if _version is None:
        h = hashlib.sha256(cache.kernels_version().encode())
        cache._stat_files(h, _HERE, _SOURCES)
        _version = h.hexdigest()
    return _version


def _layout(t):
    if t is None or type(t) is int:
        return None if t is None else "int"
    return [list(t.shape), list(T.strides(t)), T.dtype(t), T.device_index(t), address(t) % 16 == 0]


def key(arguments, options, check_mode, device):
    """The recipe key of a call: `arguments` its 12 tensor arguments (or
    None, or an int cache_seqlens) in fakv._runtime.signature's order,
    `options` its scalar options, `device` (SM count, L2 bytes)."""
    text = json.dumps([_code_version(), _SWITCHES, list(device), [_layout(a) for a in arguments],
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
    """A default kernel (interface._Lazy) as JSON."""
    return None if fn is None else {"module": fn.module, "name": fn.__name__,
                                    "options": sorted([k, v] for k, v in fn.options.items())}


def options_of(ref):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in ref["options"]}


def store(k, recipe):
    """Writes a recipe (quietly nothing when the cache cannot be written)."""
    path = _path(k)
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(recipe, f)
        os.replace(tmp, path)
    except (OSError, TypeError, ValueError):
        try:
            os.unlink(tmp)
        except OSError:
            pass


def load(k):
    """The recipe of key `k`, or None."""
    try:
        with open(_path(k)) as f:
            recipe = json.load(f)
        return recipe if isinstance(recipe, dict) else None
    except (OSError, ValueError):
        return None
