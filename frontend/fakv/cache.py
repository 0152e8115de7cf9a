"""The on-disk kernel cache: a cubin and its launch facts per key.

    $FAKV_CACHE_DIR (default ~/.cache/fakv)/<key>.cubin
                                            /<key>.json   {"facts": ..., "sha256": <the cubin's>}

Entries are written to temporary files and renamed into place, the JSON
last, so that processes sharing the directory never read half an entry. An
entry whose cubin does not match its checksum, or whose JSON does not parse,
is a miss (and is rewritten). A directory that cannot be written leaves the
kernel in memory only, with one warning.
"""
import hashlib
import json
import os
import threading
import warnings

_warned = set()


def cache_dir():
    d = os.environ.get("FAKV_CACHE_DIR")
    if not d:
        d = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "fakv")
    return d


def load(key):
    """(cubin, facts) of `key`, or None."""
    base = os.path.join(cache_dir(), key)
    try:
        with open(base + ".json") as f:
            entry = json.load(f)
        with open(base + ".cubin", "rb") as f:
            binary = f.read()
        if hashlib.sha256(binary).hexdigest() != entry["sha256"]:
            return None
        return binary, entry["facts"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key, binary, facts):
    """Writes an entry; False (and one warning per directory) when the
    directory cannot be written."""
    d = cache_dir()
    base = os.path.join(d, key)
    tmp = f"{base}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        os.makedirs(d, exist_ok=True)
        with open(tmp + ".cubin", "wb") as f:
            f.write(binary)
        with open(tmp + ".json", "w") as f:
            json.dump({"facts": facts, "sha256": hashlib.sha256(binary).hexdigest()}, f)
        os.replace(tmp + ".cubin", base + ".cubin")
        os.replace(tmp + ".json", base + ".json")
        return True
    except OSError as e:
        for path in (tmp + ".cubin", tmp + ".json"):
            try:
                os.unlink(path)
            except OSError:
                pass
        if d not in _warned:
            _warned.add(d)
            warnings.warn(f"fakv: cannot write the kernel cache {d} ({e}); compiled kernels are kept in "
                          f"memory only (set FAKV_CACHE_DIR to a writable directory)", RuntimeWarning,
                          stacklevel=3)
        return False
