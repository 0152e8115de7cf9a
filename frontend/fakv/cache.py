"""The on-disk kernel cache: a cubin and its launch facts per key.

    $FAKV_CACHE_DIR/<key>.cubin
                   /<key>.json       {"facts": ..., "sha256": <the cubin's and facts'>}
                   /index/<key>.bin  a prepared call's kernels: their entries as a JSON line, then their cubins
    (default: $XDG_CACHE_HOME/fakv when that is absolute, else ~/.cache/fakv)

Entries are written to temporary files and renamed into place, the JSON
last, so that processes sharing the directory never read half an entry. An
entry whose cubin and facts do not match its checksum, or whose JSON does not
parse, is a miss (and is rewritten). A process's first write to a folder removes the
temporary files there an hour old (a writer killed between writing and renaming left them). A
directory that cannot be written leaves the
kernel in memory only, with one warning; so does one another user can
write (private(): its entries are neither read nor written; fakv makes
its folders 0700, its files 0600).

The index (load_index / store_index) maps what an API call specialises on
(prepare.py) to its kernels, cubins included (one file read on a warm
start: the lent GPU machines' file systems cost 0.1-0.2 ms an open), so
that a new process finds them without importing the kernels and the DSL;
a kernel whose checksum (its cubin, names, parameters and facts) does not match makes the whole
entry a miss. Its keys include
kernels_version(), a hash of the stats of every file the kernels' code
comes from.
"""
import hashlib
import json
import os
import re
import stat
import warnings

_warned = set()

try:        # written by the build (cmake/BuildId.cmake): a hash of the compiler's sources and LLVM version
    from ._build_id import BUILD_ID
except ImportError:
    BUILD_ID = "unbuilt"
COMPILER_VERSION = "0.1.0+" + BUILD_ID

# The frontend files whose code shapes the IR a kernel compiles to: their
# contents are part of every cache key (with BUILD_ID, the C++ compiler's).
_FRONTEND_SOURCES = ("codegen.py", "language.py", "semantic.py", "ir.py", "jitfunction.py", "signature.py",
                     "compiler.py", "ptx.py")
# Those a call's plan and recipe come from besides (recipes.py).
_PLAN_SOURCES = ("interface.py", "heuristics.py", "tensors.py", "runtime.py", "cache.py", "recipes.py",
                 "prepare.py", "api.py")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _source_stats():
    """The package's files that make kernels, keys and plans (the frontend's and the plan's sources, the
    compiler's build id and its extension modules), by size, inode, modification and change times."""
    out = []
    for name in _PACKAGE_FILES:
        try:
            st = os.stat(os.path.join(_HERE, name))
            out.append(f"{name}:{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns};")
        except OSError:
            out.append(f"{name}:-;")
    return "".join(out)


try:
    _EXTENSIONS = sorted(n for n in os.listdir(_HERE) if n.startswith(("_fakv.", "_runtime.")))
except OSError:
    _EXTENSIONS = []
_PACKAGE_FILES = sorted(set(_FRONTEND_SOURCES + _PLAN_SOURCES + ("_build_id.py",)) | set(_EXTENSIONS))
# Taken when fakv is imported (fakv/__init__.py imports this module first): the code a process runs is
# read from these files then or later (codegen and ptx load at a first compile, _fakv at a first IR), so
# keys hashed or stamped from the files are of that code only while they are as they were then.
_AT_IMPORT = _source_stats()


def sources_as_imported():
    """Whether the package's files are as when fakv was imported. Else what the process runs may be older
    than what its keys say (a file edited, a checkout switched, the package reinstalled or the compiler
    rebuilt under a running process): it then loads nothing from the disk cache by the frontend's key and
    stores nothing (binaries, index entries, recipes), so that no process runs a binary made from other code
    than its key names; it compiles in memory instead."""
    return _source_stats() == _AT_IMPORT


_versions = {}
_kernel_versions = {}   # (kernel_dirs(), the assembler's switches) -> kernels_version() (both may change in a process)


def compile_only():
    """FAKV_COMPILE_ONLY=1: compile GPU binaries into the cache and launch
    nothing (arrays of the right dtypes and shapes stand in for the GPU
    tensors). This is how a cache is prepared for a GPU machine without
    MLIR (docs/gpu-machine.md)."""
    return os.environ.get("FAKV_COMPILE_ONLY", "") not in ("", "0")


def _hash_files(h, paths):
    for path in paths:
        with open(path, "rb") as f:
            h.update(os.path.basename(path).encode() + b"\0" + f.read())
    return h.hexdigest()


def frontend_version():
    """The compiler's build, the assembler's switches and the frontend's sources, hashed (once a set of
    switches: FAKV_ASSEMBLER changed within a process, with ptx.reset(), keys what it assembles anew)."""
    switches = _assembler_switches()
    if switches not in _versions:
        h = hashlib.sha256((COMPILER_VERSION + switches).encode())
        version = _hash_files(h, [os.path.join(_HERE, n) for n in _FRONTEND_SOURCES])
        # (read, then checked: files changed since import key no entry any process stores or loads)
        _versions[switches] = version if sources_as_imported() else version + ":changed-since-import"
    return _versions[switches]


def kernel_dirs():
    """The folders fakv.kernels finds its modules in, in order: $FAKV_KERNELS,
    the package's own folder (installed), the checkout's kernels/."""
    here = os.path.join(_HERE, "kernels")
    dirs = [_pinned(os.path.expanduser(os.environ["FAKV_KERNELS"]))] if os.environ.get("FAKV_KERNELS") else []
    dirs.append(here)
    if not os.path.exists(os.path.join(here, "decode.py")):
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(_HERE)), "kernels"))
    return dirs


def _stat_files(h, folder, names):
    for name in names:
        st = os.stat(os.path.join(folder, name))
        h.update(f"{name}:{st.st_size}:{st.st_ino}:{st.st_mtime_ns}:{st.st_ctime_ns};".encode())


def kernels_version():
    """What the index's and recipes' keys depend on besides a call: the compiler's build,
    the package's files as fakv was imported (_AT_IMPORT) and the Python files in fakv.kernels' folders
    (decode, combine, append and what sits beside them, wherever
    $FAKV_KERNELS or the checkout puts them) by size, inode, modification
    and change times: a warm start neither reads nor imports them (the
    JIT's own keys hash their contents)."""
    dirs = tuple(kernel_dirs())
    key = (dirs, _assembler_switches())
    if key not in _kernel_versions:
        _kernel_versions[key] = _kernels_version_of(dirs)
    return _kernel_versions[key]


def _kernels_version_of(dirs):
    h = hashlib.sha256((COMPILER_VERSION + _assembler_switches() + _AT_IMPORT).encode())
    for d in dirs:
        names = sorted(n for n in os.listdir(d) if n.endswith(".py")) if os.path.isdir(d) else []
        h.update(f"{d}:{len(names)} files;".encode())
        _stat_files(h, d, names)
    return h.hexdigest()


_SWITCHES = []      # the assembler's switches as read last (ptx.reset() reads them again)


def _assembler_switches():
    """The switches that pick the PTX assembler (fakv.ptx): a binary is keyed by who assembled it. Read once,
    and again after ptx.reset() (the documented way to change them within a process): not per launch."""
    if not _SWITCHES:
        _SWITCHES.append("".join(f";{k}={os.environ.get(k, '')}"
                                 for k in ("FAKV_ASSEMBLER", "FAKV_PTXAS", "FAKV_NVJITLINK")))
    return _SWITCHES[0]


def forget_switches():
    """The assembler's switches are read again at their next use (ptx.reset())."""
    _SWITCHES.clear()


def compiled_as_keyed():
    """Whether the kernels this process compiled are what kernels_version() says: their folders' files
    unchanged since it was taken, each fakv.kernels module loaded from the folder it names now (not one of
    before a change of $FAKV_KERNELS), and the text its kernels were read from (at import) the file's text
    now. Else a binary or plan must not be stored under the key: a later process would run it for other
    code (the index and recipes are keyed by the files, not by what was imported)."""
    import sys
    import tokenize
    dirs = tuple(kernel_dirs())
    if _kernel_versions.get((dirs, _assembler_switches())) != _kernels_version_of(dirs) \
            or not sources_as_imported():
        return False
    for name, module in list(sys.modules.items()):
        if not name.startswith("fakv.kernels.") or module is None:
            continue
        short = name.rpartition(".")[2]
        where = next((os.path.join(d, short + ".py") for d in dirs if os.path.exists(os.path.join(d, short + ".py"))),
                     None)
        path = getattr(module, "__file__", None)
        if where is None or path is None or os.path.realpath(path) != os.path.realpath(where):
            return False
        read = next((v._file_lines for v in list(vars(module).values())          # (a kernel of this file, not one
                     if isinstance(getattr(v, "_file_lines", None), list)             # it imported from another)
                     and os.path.realpath(v.fn.__code__.co_filename) == os.path.realpath(path)), None)
        if read is not None:
            try:
                with tokenize.open(path) as f:
                    if f.readlines() != read:
                        return False
            except (OSError, SyntaxError, UnicodeDecodeError):
                return False
    return True


def checksum(binary, *described):
    """The sha256 of a cubin and what describes it (JSON-able: its facts,
    names, parameters), so that an entry damaged anywhere, a parseable
    JSON too, is a miss (a changed launch fact would launch the kernel
    wrongly)."""
    h = hashlib.sha256(bytes(binary))
    h.update(json.dumps(described, sort_keys=True).encode())
    return h.hexdigest()


_PRIVATE = {}        # folder -> whether it is this user's alone (private(): once a process)


def private(d):
    """Whether folder `d` is this user's alone: owned by them and written by
    no one else (not by its group, not by others). An entry is code the GPU
    runs (a cubin) or trusts (a recipe's grid and workspace offsets), and
    its checksum anyone can compute: in a folder another user can write it
    could be anyone's, and a link they planted at a writer's temporary name
    would be written through. True for a folder not made yet (fakv makes it
    0700) or one it cannot reach. Writable by its group only when that group is the user's own
    (Ubuntu's umask 002 makes folders so). One warning per folder refused;
    the kernels stay in memory."""
    ok = _PRIVATE.get(d)
    if ok is None:
        try:
            st = os.stat(d)
        except OSError:            # (not made yet, or not reachable: the read or the write itself fails, and says so)
            return True
        ok = _PRIVATE[d] = not hasattr(os, "geteuid") or (
            st.st_uid == os.geteuid() and not st.st_mode & 0o002 and (not st.st_mode & 0o020 or _own_group(st.st_gid)))
        if not ok and d not in _warned:
            _warned.add(d)
            warnings.warn(f"fakv: the kernel cache {d} is not yours alone (owner uid {st.st_uid}, mode "
                          f"{stat.S_IMODE(st.st_mode):o}): not used, compiled kernels are kept in memory only "
                          f"(`chmod go-w` it if it is yours, or set FAKV_CACHE_DIR to a folder of your own)",
                          RuntimeWarning, stacklevel=2)
    return ok


def _own_group(gid):
    """Whether group `gid` is this user's own (a user private group, as a umask of 002 expects: their
    primary group, no other member listed)."""
    try:
        import grp
        import pwd
        return gid == os.getegid() and not set(grp.getgrgid(gid).gr_mem) - {pwd.getpwuid(os.geteuid()).pw_name}
    except (ImportError, KeyError):
        return False


def usable(d):
    """Whether cache folder `d` (the cache's, or one of its index/ and
    recipes/) may be read and written: it and the cache's folder private()
    (a folder of fakv's own, made 0700, inside one others can write is
    theirs to replace)."""
    root = cache_dir()
    return private(root) and (d == root or private(d))


def _create(path):
    """A new file at `path` for this process to write (0600; never through a
    link, never one that exists: another writer's, or a planted one)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    return os.fdopen(os.open(path, flags, 0o600), "wb")


def _temporary(path):
    """A temporary name beside `path` (_TEMPORARY's): the writer's pid and a random number (a pid and a thread
    id were the same on two hosts sharing a folder, or two containers)."""
    return f"{path}.{os.getpid()}.{int.from_bytes(os.urandom(6), 'little')}.tmp"


def read(path):
    """The bytes of a cache file; b"" (a miss) for anything but a plain file: opened without blocking and
    checked, so that a FIFO in an entry's place does not wait for a writer for ever (nor /dev/zero read
    for ever); b"" too in a folder others can write (usable())."""
    if not usable(os.path.dirname(path)):
        return b""
    with open(path, "rb", opener=lambda p, flags: os.open(p, flags | getattr(os, "O_NONBLOCK", 0))) as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return b""
        return f.read() or b""


def index_key(parts):
    """The index key of a call's specialisations (`parts`: their JSON-able
    description) under the current kernels."""
    text = json.dumps([kernels_version(), parts], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def load_index(key):
    """The kernels of an indexed call as (entry, name, params, cubin, facts)
    each, or None (no entry, or one that does not parse or check out)."""
    try:
        head, _, body = read(os.path.join(cache_dir(), "index", key + ".bin")).partition(b"\n")
        out, at = [], 0
        for k in json.loads(head):
            size = k["size"]
            if type(size) is not int or size < 0 or type(k["params"]) is not list:
                return None
            binary, at = body[at:at + size], at + size
            if checksum(binary, k["entry"], k["name"], k["params"], k["facts"]) != k["sha256"]:
                return None
            out.append((str(k["entry"]), str(k["name"]), k["params"], binary, k["facts"]))
        return out if at == len(body) else None
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return None


def store_index(key, items):
    """Records a call's kernels ((entry, name, params, cubin, facts) each);
    quietly nothing when the directory cannot be written (store() warns)."""
    head = [{"entry": e, "name": n, "params": list(p), "facts": f, "size": len(b),
             "sha256": checksum(b, e, n, list(p), f)} for e, n, p, b, f in items]
    write_quietly(os.path.join(cache_dir(), "index", key + ".bin"),
                  json.dumps(head).encode() + b"\n" + b"".join(bytes(i[3]) for i in items))


_STALE_SECONDS = 3600     # a temporary file this old is a dead writer's (a write takes milliseconds)
# The names of fakv's own temporary files (store's and write_quietly's: a key of 32 hex digits, its suffix, the
# writer's pid and a random number, _temporary()): any name holding ".tmp" matched, and a user's files in
# FAKV_CACHE_DIR went.
_TEMPORARY = re.compile(r"[0-9a-f]{32}(\.bin|\.json)?\.[0-9]+\.[0-9]+\.tmp(\.cubin|\.json)?")
_swept = set()


def _sweep(d):
    """Removes the temporary files in folder `d` older than _STALE_SECONDS, once a process: those of
    processes killed between writing an entry and renaming it (their names hold a pid no later store
    shares), which nothing else would ever remove."""
    if d in _swept:
        return
    _swept.add(d)
    import time
    now = time.time()
    try:
        with os.scandir(d) as found:
            for e in found:
                if _TEMPORARY.fullmatch(e.name):
                    try:
                        if e.is_file(follow_symlinks=False) and now - e.stat(follow_symlinks=False).st_mtime \
                                > _STALE_SECONDS:
                            os.unlink(e.path)
                    except OSError:
                        pass
    except OSError:
        pass


def _folder_to_write(d):
    """Whether cache folder `d` may be written (usable()), made 0700 (the
    cache's own folder first: made by the way it had the umask's mode) and
    its stale temporaries swept; OSError when it cannot be made."""
    root = cache_dir()
    if not private(root):                 # (before making a folder in it)
        return False
    os.makedirs(root, 0o700, exist_ok=True)
    os.makedirs(d, 0o700, exist_ok=True)
    if not usable(d):
        return False
    _sweep(d)
    return True


def write_quietly(path, data):
    """Writes `data` (bytes) to `path` at once (a new file of this writer's
    renamed over it, so readers never see part of it), making its
    directory; quietly nothing when it cannot be written (or is not
    usable(): one warning)."""
    tmp = _temporary(path)
    try:
        if not _folder_to_write(os.path.dirname(path)):
            return
        with _create(tmp) as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def fakv_switches():
    """The environment's FAKV_* variables but FAKV_CACHE_DIR, sorted: what
    the frontend's switches are read from."""
    return sorted((k, v) for k, v in os.environ.items() if k.startswith("FAKV_") and k != "FAKV_CACHE_DIR")


_RELATIVE = {}       # a relative FAKV_CACHE_DIR / FAKV_KERNELS: the folder it named when first used


def _pinned(d):
    """Folder `d`, a relative one as it was first met (a chdir later moves neither the cache nor the kernels:
    the kernels imported from one folder were keyed by another's files)."""
    return d if not d or os.path.isabs(d) else _RELATIVE.get(d) or _RELATIVE.setdefault(d, os.path.abspath(d))


def cache_dir():
    d = _pinned(os.path.expanduser(os.environ.get("FAKV_CACHE_DIR") or ""))   # (`~/x` from an ENV line)
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or ""
        if not os.path.isabs(base):       # (unset, empty or relative: the XDG default)
            base = os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "fakv")
    return d


def load(key):
    """(cubin, facts) of `key`, or None."""
    base = os.path.join(cache_dir(), key)
    try:
        entry = json.loads(read(base + ".json"))
        binary = read(base + ".cubin")
        if not isinstance(entry["facts"], dict) or checksum(binary, entry["facts"]) != entry["sha256"]:
            return None                  # (facts of another shape: a launch would fail on them, every run)
        return binary, entry["facts"]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):    # (deep nesting: json's RecursionError)
        return None


def store(key, binary, facts):
    """Writes an entry; False (and one warning per directory) when the
    directory cannot be written."""
    d = cache_dir()
    base = os.path.join(d, key)
    tmp = _temporary(base)
    try:
        if not _folder_to_write(d):
            return False
        with _create(tmp + ".cubin") as f:
            f.write(binary)
        with _create(tmp + ".json") as f:
            f.write(json.dumps({"facts": facts, "sha256": checksum(binary, facts)}).encode())
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
