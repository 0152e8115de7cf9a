"""PTX to a cubin, in the process when it can be: no CUDA toolkit needed.

The assemblers, tried in this order (the first that loads is kept):

1. nvJitLink, in process: `$FAKV_NVJITLINK` (a path; one that does not load
   is an error, not passed over), the library PyTorch's
   CUDA wheels install (`nvidia/cu13/lib`, `nvidia/nvjitlink/lib` on
   sys.path), then `$CUDA_HOME/lib64`, /usr/local/cuda/lib64 and the loader's
   path.
2. `ptxas`, as a program: `$FAKV_PTXAS` (one that is not an executable file
   is an error when ptxas is tried), then PATH, `$CUDA_HOME/bin`,
   /usr/local/cuda/bin, then the one Triton's wheel carries.
3. The CUDA driver's own PTX JIT (fakv._runtime.link_ptx), on a machine
   with a GPU and a current CUDA context.

`FAKV_ASSEMBLER=nvjitlink|ptxas|driver` picks one. `assembler()` says which
is used. Thread-safe: nvJitLink handles are per call and ctypes releases the
GIL, so kernels assemble in parallel threads.
"""
import ctypes
import glob
import os
import sys
import threading

_NVJITLINK_INPUT_PTX = 2
_lock = threading.Lock()
os.register_at_fork(after_in_child=_lock._at_fork_reinit)    # (a thread of the parent's held it)
_chosen = None      # (name, function(ptx, chip) -> bytes, where)


class AssemblerError(RuntimeError):
    """PTX that does not assemble, or no assembler found."""


def _nvjitlink_candidates():
    env = os.environ.get("FAKV_NVJITLINK")
    if env:
        yield env
    for base in sys.path:
        for sub in ("nvidia/cu13/lib", "nvidia/nvjitlink/lib", "nvidia/cu12/lib"):
            yield from sorted(glob.glob(os.path.join(base or ".", sub, "libnvJitLink.so*")), reverse=True)
    for home in filter(None, (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")):
        yield from sorted(glob.glob(os.path.join(home, "lib64", "libnvJitLink.so*")), reverse=True)
    yield "libnvJitLink.so.13"
    yield "libnvJitLink.so.12"


def _load_nvjitlink():
    for path in _nvjitlink_candidates():
        try:
            lib = ctypes.CDLL(path)
            lib.nvJitLinkCreate, lib.nvJitLinkAddData, lib.nvJitLinkComplete  # noqa: B018
        except (OSError, AttributeError) as e:
            if path == os.environ.get("FAKV_NVJITLINK"):     # (asked for by name: a typo is not passed over)
                raise AssemblerError(f"FAKV_NVJITLINK={path}: not an nvJitLink library that loads ({e})") from None
            continue
        v = ctypes.c_uint
        lib.nvJitLinkCreate.argtypes = [ctypes.POINTER(ctypes.c_void_p), v, ctypes.POINTER(ctypes.c_char_p)]
        lib.nvJitLinkAddData.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t,
                                         ctypes.c_char_p]
        lib.nvJitLinkComplete.argtypes = [ctypes.c_void_p]
        for name in ("GetLinkedCubinSize", "GetErrorLogSize"):
            getattr(lib, "nvJitLink" + name).argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t)]
        for name in ("GetLinkedCubin", "GetErrorLog"):
            getattr(lib, "nvJitLink" + name).argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.nvJitLinkDestroy.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        return lib, getattr(lib, "_name", path)
    return None


def _nvjitlink(lib):
    def assemble(ptx, chip):
        handle = ctypes.c_void_p()
        opts = (ctypes.c_char_p * 2)(f"-arch={chip}".encode(), b"-O3")
        if lib.nvJitLinkCreate(ctypes.byref(handle), 2, opts):
            raise AssemblerError(f"nvJitLinkCreate failed for -arch={chip}")
        try:
            data = ptx.encode() if isinstance(ptx, str) else ptx
            rc = lib.nvJitLinkAddData(handle, _NVJITLINK_INPUT_PTX, data, len(data), b"fakv.ptx")
            if rc == 0:
                rc = lib.nvJitLinkComplete(handle)
            if rc:
                n = ctypes.c_size_t()
                lib.nvJitLinkGetErrorLogSize(handle, ctypes.byref(n))
                log = ctypes.create_string_buffer(n.value + 1)
                lib.nvJitLinkGetErrorLog(handle, log)
                raise AssemblerError(f"nvJitLink could not assemble the PTX (error {rc}):\n"
                                     f"{log.value.decode(errors='replace')}")
            n = ctypes.c_size_t()
            lib.nvJitLinkGetLinkedCubinSize(handle, ctypes.byref(n))
            cubin = ctypes.create_string_buffer(n.value)
            lib.nvJitLinkGetLinkedCubin(handle, cubin)
            return cubin.raw
        finally:
            lib.nvJitLinkDestroy(ctypes.byref(handle))
    return assemble


def _ptxas_candidates():
    import shutil
    env = os.environ.get("FAKV_PTXAS")
    if env:
        yield env
    found = shutil.which("ptxas")
    if found:
        yield found
    for home in filter(None, (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda")):
        yield os.path.join(home, "bin", "ptxas")
    for base in sys.path:
        yield os.path.join(base or ".", "triton", "backends", "nvidia", "bin", "ptxas")


def _ptxas(path):
    import subprocess
    import tempfile

    def assemble(ptx, chip):
        with tempfile.TemporaryDirectory(prefix="fakv-ptxas-") as d:
            src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
            with open(src, "w" if isinstance(ptx, str) else "wb") as f:
                f.write(ptx)
            r = subprocess.run([path, f"-arch={chip}", "-O3", src, "-o", out], capture_output=True, text=True)
            if r.returncode:
                raise AssemblerError(f"{path} could not assemble the PTX:\n{r.stderr}")
            with open(out, "rb") as f:
                return f.read()
    return assemble


def _driver(ptx, chip):
    from . import _runtime
    try:
        return _runtime.link_ptx(ptx.encode() if isinstance(ptx, str) else ptx)
    except RuntimeError as e:
        raise AssemblerError(str(e)) from None


def _choose():
    want = os.environ.get("FAKV_ASSEMBLER", "")
    if want not in ("", "nvjitlink", "ptxas", "driver"):
        raise AssemblerError(f"FAKV_ASSEMBLER={want}: nvjitlink, ptxas or driver (or unset: the first found)")
    if want in ("", "nvjitlink"):
        found = _load_nvjitlink()
        if found:
            return "nvjitlink", _nvjitlink(found[0]), found[1]
    if want in ("", "ptxas"):
        env = os.environ.get("FAKV_PTXAS")
        if env and not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise AssemblerError(f"FAKV_PTXAS={env}: not an executable file")
        for path in _ptxas_candidates():
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return "ptxas", _ptxas(path), path
    if want in ("", "driver"):
        try:
            from . import _runtime  # noqa: F401  (importable: the driver route exists)
            return "driver", _driver, "libcuda.so.1 (the driver's PTX JIT)"
        except ImportError:
            pass
    raise AssemblerError("no PTX assembler found: install PyTorch's CUDA wheels (nvJitLink) or the CUDA toolkit "
                         "(ptxas on PATH or under $CUDA_HOME), or set FAKV_NVJITLINK / FAKV_PTXAS"
                         + (f" (FAKV_ASSEMBLER={want})" if want else ""))


def _assembler():
    global _chosen
    if _chosen is None:
        with _lock:
            if _chosen is None:
                _chosen = _choose()
    return _chosen


def assembler():
    """(kind, where): the assembler assemble() uses."""
    name, _, where = _assembler()
    return name, where


def assemble(ptx, chip="sm_90a"):
    """The cubin of `ptx` (str or bytes) for `chip`."""
    return _assembler()[1](ptx, chip)


def reset():
    """Choose the assembler again (after changing the environment); the keys of what it assembles follow."""
    global _chosen
    from . import cache
    with _lock:
        _chosen = None
        cache.forget_switches()
