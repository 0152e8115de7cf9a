"""The few things the API needs of an array, for torch tensors (CPU or CUDA)
and numpy arrays (the CPU path; bfloat16 from ml_dtypes)."""
import numpy as np


def _np_bf16():
    """numpy's bfloat16 (ml_dtypes), imported when the CPU path first needs it."""
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


def is_torch(x):
    return type(x).__module__.startswith("torch")


def is_array(x):
    return is_torch(x) or isinstance(x, np.ndarray)


_DTYPE_NAMES = {}


def dtype(x):
    """'f16', 'bf16', 'f32', 'i32', 'i64', ... or the library's own name."""
    d = x.dtype
    name = _DTYPE_NAMES.get(d)
    if name is None:
        name = str(d).replace("torch.", "")
        name = _DTYPE_NAMES[d] = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "int32": "i32",
                                  "int64": "i64", "bool": "bool"}.get(name, name)
    return name


def device(x):
    """'cuda', 'cpu', or the name of another device a torch tensor is on."""
    if is_torch(x):
        return "cuda" if x.is_cuda else x.device.type
    return "cpu"


def device_index(x):
    """The CUDA device index of a torch tensor, -1 on the CPU."""
    return x.get_device() if is_torch(x) else -1


def strides(x):
    """Strides in elements (whole_elements(x) says whether a numpy array's byte strides are)."""
    if is_torch(x):
        return tuple(x.stride())
    return tuple(s // x.itemsize for s in x.strides)


def whole_elements(x):
    """Whether every stride is a whole number of elements (always for torch; a numpy view of a structured
    array's field may step by bytes that are not: the kernels address elements)."""
    return is_torch(x) or all(s % x.itemsize == 0 for s in x.strides)


def writable(x):
    """Whether the API may write into x (a numpy array may be read-only: a memory map opened "r", a view of
    bytes, a broadcast)."""
    return is_torch(x) or bool(x.flags.writeable)


def contiguous(x):
    if is_torch(x):
        return x.contiguous()
    return np.ascontiguousarray(x)


def host(x):
    """A numpy copy (for checks on the host)."""
    if is_torch(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def empty(shape, dtype_name, like):
    if is_torch(like):
        import torch
        t = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32, "i32": torch.int32}[dtype_name]
        return torch.empty(shape, dtype=t, device=like.device)
    t = _np_bf16() if dtype_name == "bf16" else {"f16": np.float16, "f32": np.float32, "i32": np.int32}[dtype_name]
    return np.empty(shape, dtype=t)


def rows_of(table, idx):
    """A new contiguous int32 array of table's rows idx[0], idx[1], ...; a row whose index is outside the table
    is -1 throughout (gathered on the table's device, in order with what follows on its stream: no index
    outside the table is ever read)."""
    n = table.shape[0]
    if is_torch(table):
        import torch
        i = torch.as_tensor(idx, device=table.device).long()
        inside = (i >= 0) & (i < n)
        rows = table[i.clamp(0, max(n - 1, 0))] if n else table.new_empty((len(i), table.shape[1]))
        return torch.where(inside[:, None], rows, -1).to(torch.int32).contiguous()
    i = np.asarray(idx).astype(np.int64)
    inside = (i >= 0) & (i < n)
    rows = table[np.clip(i, 0, max(n - 1, 0))] if n else np.empty((len(i), table.shape[1]), np.int32)
    return np.ascontiguousarray(np.where(inside[:, None], rows, -1).astype(np.int32))


def full_int32(shape, value, like):
    out = empty(shape, "i32", like)
    out[...] = value
    return out


_PROPERTIES = {}


def device_properties(x):
    """(SM count, L2 bytes, the memory's peak GB/s or 0 where unknown) of x's
    GPU, or an H100's for the CPU path."""
    if is_torch(x) and x.is_cuda:
        index = x.device.index
        props = _PROPERTIES.get(index)
        if props is None:
            try:          # the driver's attributes (torch's get_device_properties: ~0.2 ms at first use)
                from . import _runtime
                props = _runtime.device_properties(index)
            except (ImportError, AttributeError, RuntimeError):     # (no extension, an older one, no driver)
                import torch
                p = torch.cuda.get_device_properties(x.device)
                gbps = 2 * getattr(p, "memory_clock_rate", 0) * getattr(p, "memory_bus_width", 0) // 8 // 10**6
                props = (p.multi_processor_count, p.L2_cache_size, gbps)
            _PROPERTIES[index] = props
        return props
    return 132, 50 * 1024 * 1024, 3352
