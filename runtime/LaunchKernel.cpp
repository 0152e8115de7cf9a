//===- LaunchKernel.cpp - fakv._runtime.Kernel -----------------------------===//

#include "runtime/LaunchKernel.h"

#include "runtime/PythonGuard.h"
#include "runtime/fakv_runtime.h"

#include <cstdlib>
#include <cstring>
#include <string>

namespace fakv::runtime {

namespace {

PyObject *dataPtrName, *shapeName, *strideName;

/// When a kernel named `name` is launched programmatically (it may start
/// while the kernel before it finishes), decided once when it is made: never
/// unless it waits for the grids before it (`dependent`:
/// lowering/DependentLaunch.cpp); then by FAKV_DEPENDENT_LAUNCH: unset, when
/// the caller asks (`early`: an API call's combine after its decode,
/// and the decode of a call that reads little, interface.py's
/// _EARLY_DECODE_BYTES); 1, always;
/// 0, never; else a comma-separated list of the kernel names always so.
LaunchMode launchModeOf(const char *name, bool dependent) {
  const char *mode = std::getenv("FAKV_DEPENDENT_LAUNCH");
  if (!dependent || (mode && std::strcmp(mode, "0") == 0))
    return LaunchMode::Plain;
  if (!mode)
    return LaunchMode::OnRequest;
  if (std::strcmp(mode, "1") == 0)
    return LaunchMode::Programmatic;
  std::string list = std::string(",") + mode + ",";
  return list.find(std::string(",") + name + ",") != std::string::npos ? LaunchMode::Programmatic
                                                                       : LaunchMode::Plain;
}

int Kernel_init(KernelObject *self, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {"image", "name", "kinds", "tensormaps", "threads",
                                   "smem", "packing", "dependent_launch", nullptr};
  Py_buffer image;
  const char *name, *kinds;
  PyObject *tms;
  int threads, smem, px = 1, py = 1, pz = 1;
  int dependent = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*ssOii|(iii)p", const_cast<char **>(keywords),
                                   &image, &name, &kinds, &tms, &threads, &smem, &px, &py, &pz,
                                   &dependent))
    return -1;
  // Everything is checked before the object is touched: a Kernel whose
  // init failed stays uninitialised (it launched with what was set before).
  struct Released {      // (the image's buffer, given back on every return)
    Py_buffer *buffer;
    ~Released() { PyBuffer_Release(buffer); }
  } released{&image};
  auto fail = [](PyObject *type, const char *message) {
    PyErr_SetString(type, message);
    return -1;
  };
  if (self->image)
    return fail(PyExc_TypeError, "a Kernel is initialised once");
  size_t nkinds = std::strlen(kinds);
  if (nkinds > 256)   // (PreparedCalls sized their slots for its kinds)
    return fail(PyExc_ValueError, "more than 256 kernel parameters");
  for (size_t i = 0; i < nkinds; ++i)
    if (!std::strchr("pbcilf", kinds[i])) {
      PyErr_Format(PyExc_ValueError, "unknown parameter kind '%c'", kinds[i]);
      return -1;
    }
  if (threads <= 0 || smem < 0 || px < 0 || py < 0 || pz < 0)
    return fail(PyExc_ValueError, "a Kernel's threads must be positive, its shared memory and packing not negative");
  PyObject *seq = ownedItems(tms, "tensormaps must be a sequence of (arg, rows)");
  if (!seq)
    return -1;
  std::vector<TensorMapSpec> maps;
  bool ok = PyTuple_GET_SIZE(seq) <= 8;
  if (!ok)
    PyErr_SetString(PyExc_ValueError, "more than 8 tensor maps");
  for (Py_ssize_t i = 0; ok && i < PyTuple_GET_SIZE(seq); ++i) {
    int arg, rows;
    ok = PyArg_ParseTuple(PyTuple_GET_ITEM(seq, i), "ii", &arg, &rows);
    if (ok && (arg < 0 || static_cast<size_t>(arg) >= nkinds || kinds[arg] != 'p')) {
      PyErr_Format(PyExc_ValueError, "tensor map of parameter %d, which is not a pointer", arg);
      ok = false;
    } else if (ok && rows <= 0) {
      PyErr_Format(PyExc_ValueError, "tensor map of parameter %d: %d rows a box", arg, rows);
      ok = false;
    }
    if (ok)
      maps.push_back({arg, static_cast<uint32_t>(rows)});
  }
  Py_DECREF(seq);
  if (!ok)
    return -1;
  self->launchMode = launchModeOf(name, dependent);
  self->image = new std::string(static_cast<const char *>(image.buf), image.len);
  self->name = new std::string(name);
  self->tensormaps = new std::vector<TensorMapSpec>(std::move(maps));
  self->functions = new std::vector<std::pair<void *, void *>>();
  self->maps = new std::vector<CachedMap>();
  self->kinds = new std::vector<char>(kinds, kinds + nkinds);   // last: what launch checks is made
  self->threads = static_cast<unsigned>(threads);
  self->smem = static_cast<unsigned>(smem);
  self->packing[0] = px ? px : 1;
  self->packing[1] = py ? py : 1;
  self->packing[2] = pz ? pz : 1;
  return 0;
}

void Kernel_dealloc(KernelObject *self) {
  delete self->image;
  delete self->name;
  delete self->kinds;
  delete self->tensormaps;
  delete self->functions;
  delete self->maps;
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject *>(self));
}

/// The kernel in the current context (its module loaded on first use); with
/// `want`, in that context, made current when it is not.
void *function(KernelObject *self, void *want) {
  void *ctx = nullptr;
  if (fakv_current_context(&ctx))
    return raiseRuntime();
  if (want && ctx != want) {
    if (fakv_set_current_context(want))
      return raiseRuntime();
    ctx = want;
  }
  for (auto &[c, f] : *self->functions)
    if (c == ctx)
      return f;
  if (!ctx) {
    PyErr_SetString(PyExc_RuntimeError,
                    "no current CUDA context (initialise CUDA first, e.g. torch.cuda.init())");
    return nullptr;
  }
  void *module = nullptr, *f = nullptr;
  if (fakv_load_module_data(self->image->data(), &module))
    return raiseRuntime();
  if (fakv_get_kernel(module, self->name->c_str(), &f)) {
    raiseRuntime();                   // (its message; the module unloaded: a call that tries again leaks none)
    fakv_unload_module(module);
    return nullptr;
  }
  self->functions->emplace_back(ctx, f);
  return f;
}

/// A pointer argument: an int address, an object's data_ptr(), or, for a
/// TMA-copied cache, (address, (4 dims, 4 strides)).
bool address(PyObject *arg, uint64_t &out) {
  if (PyTuple_CheckExact(arg) && PyTuple_GET_SIZE(arg) == 2)
    arg = PyTuple_GET_ITEM(arg, 0);
  if (PyLong_CheckExact(arg)) {
    out = PyLong_AsUnsignedLongLong(arg);
    return !PyErr_Occurred();
  }
  PyObject *p = PyObject_CallMethodNoArgs(arg, dataPtrName);
  if (!p)
    return false;
  out = PyLong_AsUnsignedLongLong(p);
  Py_DECREF(p);
  return !PyErr_Occurred();
}

bool scalar(PyObject *arg, char kind, size_t index, unsigned char *slot) {
  if (kind == 'f') {
    double v = PyFloat_AsDouble(arg);
    if (v == -1.0 && PyErr_Occurred())
      return false;
    float f = static_cast<float>(v);
    std::memcpy(slot, &f, 4);
    return true;
  }
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(arg, &overflow);
  if (v == -1 && PyErr_Occurred())
    return false;
  long long lo = kind == 'l' ? INT64_MIN : kind == 'i' ? INT32_MIN : kind == 'c' ? INT8_MIN : 0;
  long long hi = kind == 'l' ? INT64_MAX : kind == 'i' ? INT32_MAX : kind == 'c' ? INT8_MAX : 1;
  if (overflow || v < lo || v > hi) {
    PyErr_Format(PyExc_TypeError, "argument %zu does not fit its parameter (%s)", index,
                 kind == 'l' ? "i64" : kind == 'i' ? "i32" : kind == 'c' ? "i8" : "i1");
    return false;
  }
  if (kind == 'l') {
    std::memcpy(slot, &v, 8);
  } else if (kind == 'i') {
    int32_t x = static_cast<int32_t>(v);
    std::memcpy(slot, &x, 4);
  } else {
    int8_t x = static_cast<int8_t>(v);
    std::memcpy(slot, &x, 1);
  }
  return true;
}

/// `n` integers of a tuple-like object into `out` (false with an exception).
bool integers(PyObject *seq, uint64_t *out, int n, const char *what) {
  PyObject *fast = PySequence_Fast(seq, what);
  if (!fast)
    return false;
  bool ok = PySequence_Fast_GET_SIZE(fast) == n;
  for (int i = 0; ok && i < n; ++i) {
    out[i] = PyLong_AsUnsignedLongLong(PySequence_Fast_GET_ITEM(fast, i));
    ok = !PyErr_Occurred();
  }
  Py_DECREF(fast);
  if (!ok && !PyErr_Occurred())
    PyErr_Format(PyExc_ValueError, "a TMA-copied cache is (pages, rows, heads, dim): %s", what);
  return ok;
}

/// Tensor maps kept per kernel: a model calls the API once per layer, each
/// layer with caches of its own (two maps a call), so a decode step of up to
/// 64 layers finds every map it encoded in the step before.
constexpr size_t kMapsKept = 128;

/// The map of `key` (address, dims, strides, rows) from the kernel's recent
/// ones (the one found moved first: a call of one layer finds it at once),
/// or encoded now (in place of the least recently used when all are kept).
const unsigned char *cachedMap(KernelObject *self, const uint64_t key[10]) {
  auto &maps = *self->maps;
  uint64_t now = ++self->mapLookups;
  for (size_t i = 0; i < maps.size(); ++i)
    if (maps[i].key[0] == key[0] && std::memcmp(maps[i].key, key, sizeof(maps[i].key)) == 0) {
      if (i)
        std::swap(maps[i], maps[0]);
      maps[0].used = now;
      return maps[0].map;
    }
  CachedMap entry;
  std::memcpy(entry.key, key, sizeof(entry.key));
  if (fakv_encode_kv_tensormap(entry.map, reinterpret_cast<const void *>(key[0]), key + 1,
                               key + 5, static_cast<uint32_t>(key[9]))) {
    raiseRuntime();
    return nullptr;
  }
  entry.used = now;
  size_t slot = maps.size();
  if (slot < kMapsKept) {
    maps.push_back(entry);
  } else {
    slot = 0;
    for (size_t i = 1; i < maps.size(); ++i)
      if (maps[i].used < maps[slot].used)
        slot = i;
    maps[slot] = entry;
  }
  if (slot)
    std::swap(maps[slot], maps[0]);
  return maps[0].map;
}

/// The tensor map of the cache at `arg` (its address already converted): a
/// tensor, or (address, layout) with the layout as 4 dims then 4 strides.
const unsigned char *tensorMapOf(KernelObject *self, size_t t, PyObject *arg, uint64_t base) {
  uint64_t key[10];
  key[0] = base;
  key[9] = (*self->tensormaps)[t].rows;
  if (PyTuple_CheckExact(arg) && PyTuple_GET_SIZE(arg) == 2) {
    if (!integers(PyTuple_GET_ITEM(arg, 1), key + 1, 8, "its (dims, strides) layout"))
      return nullptr;
    return cachedMap(self, key);
  }
  PyObject *shape = PyObject_GetAttr(arg, shapeName);
  if (!shape)
    return nullptr;
  bool ok = integers(shape, key + 1, 4, "its shape");
  Py_DECREF(shape);
  if (!ok)
    return nullptr;
  PyObject *stride = PyObject_CallMethodNoArgs(arg, strideName);
  if (!stride)
    return nullptr;
  ok = integers(stride, key + 5, 4, "its strides");
  Py_DECREF(stride);
  if (!ok)
    return nullptr;
  return cachedMap(self, key);
}

/// launch(grid_x, grid_y, grid_z, stream, *args): the grid as written
/// (divided by the kernel's grid packing), the CUDA stream handle (0 or
/// None: the default stream), then one argument per runtime parameter.
PyObject *Kernel_launch(KernelObject *self, PyObject *const *args, Py_ssize_t nargs) {
  if (!self->kinds) {
    PyErr_SetString(PyExc_TypeError, "Kernel not initialised");
    return nullptr;
  }
  const size_t nparams = self->kinds->size();
  if (static_cast<size_t>(nargs) != nparams + 4) {
    PyErr_Format(PyExc_TypeError, "%s takes %zu arguments, got %zd", self->name->c_str(),
                 nparams, nargs - 4);
    return nullptr;
  }
  long long written[3];
  for (int i = 0; i < 3; ++i) {
    written[i] = PyLong_AsLongLong(args[i]);
    if (written[i] == -1 && PyErr_Occurred())
      return nullptr;
  }
  unsigned grid[3];
  if (!launchGrid(self, written, grid))
    return nullptr;
  uint64_t stream = 0;
  if (args[3] != Py_None) {
    stream = PyLong_AsUnsignedLongLong(args[3]);
    if (PyErr_Occurred())
      return nullptr;
  }
  alignas(64) unsigned char slots[256 * 8];
  alignas(64) unsigned char maps[8][128];
  uint64_t addresses[256];
  for (size_t i = 0; i < nparams; ++i)
    if (!packArgument(self, i, args[4 + i], slots + 8 * i, &addresses[i]))
      return nullptr;
  for (size_t t = 0; t < self->tensormaps->size(); ++t) {
    int arg = (*self->tensormaps)[t].arg;
    const unsigned char *map = tensorMapOf(self, t, args[4 + arg], addresses[arg]);
    if (!map)
      return nullptr;
    std::memcpy(maps[t], map, 128);
  }
  if (!launchSlots(self, grid, stream, slots, maps, false))
    return nullptr;
  Py_RETURN_NONE;
}

PyMethodDef kernelMethods[] = {
    {"launch", fastcall<Kernel_launch>(),
     METH_FASTCALL,
     "launch(grid_x, grid_y, grid_z, stream, *args): launch on the current context's device"},
    {nullptr, nullptr, 0, nullptr}};

} // namespace

PyTypeObject KernelType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyObject *raiseRuntime() {
  PyErr_SetString(PyExc_RuntimeError, fakv_last_error());
  return nullptr;
}

bool initKernelType() {
  KernelType.tp_name = "fakv._runtime.Kernel";
  KernelType.tp_basicsize = sizeof(KernelObject);
  KernelType.tp_flags = Py_TPFLAGS_DEFAULT;
  KernelType.tp_doc = "Kernel(image, name, kinds, tensormaps, threads, smem, packing=(1, 1, 1), "
                         "dependent_launch=False)";
  KernelType.tp_new = PyType_GenericNew;
  KernelType.tp_init = reinterpret_cast<initproc>(NoThrow<Kernel_init>::call);
  KernelType.tp_dealloc = reinterpret_cast<destructor>(Kernel_dealloc);
  KernelType.tp_methods = kernelMethods;
  dataPtrName = PyUnicode_InternFromString("data_ptr");
  shapeName = PyUnicode_InternFromString("shape");
  strideName = PyUnicode_InternFromString("stride");
  return PyType_Ready(&KernelType) == 0;
}

bool packArgument(KernelObject *k, size_t i, PyObject *arg, unsigned char *slot,
                  uint64_t *addr) {
  char kind = (*k->kinds)[i];
  if (kind != 'p')
    return scalar(arg, kind, i, slot);
  if (!address(arg, *addr))
    return false;
  std::memcpy(slot, addr, 8);
  return true;
}

bool launchGrid(KernelObject *k, const long long written[3], unsigned grid[3]) {
  for (int i = 0; i < 3; ++i) {
    long long g = written[i];
    if (g % k->packing[i]) {
      PyErr_Format(PyExc_ValueError,
                   "%s: grid axis %d is %lld, not a multiple of the %u query heads that "
                   "fakv-pack-gqa packs into one program",
                   k->name->c_str(), i, g, k->packing[i]);
      return false;
    }
    if (g < 0 || g > 0x7fffffff) {
      PyErr_Format(PyExc_ValueError, "%s: grid axis %d is %lld", k->name->c_str(), i, g);
      return false;
    }
    grid[i] = static_cast<unsigned>(g / k->packing[i]);
  }
  return true;
}

const unsigned char *tensorMapAt(KernelObject *k, size_t t, uint64_t address,
                                 const uint64_t layout[8]) {
  uint64_t key[10];
  key[0] = address;
  std::memcpy(key + 1, layout, 8 * sizeof(uint64_t));
  key[9] = (*k->tensormaps)[t].rows;
  return cachedMap(k, key);
}

bool launchSlots(KernelObject *k, const unsigned grid[3], uint64_t stream, unsigned char *slots,
                 unsigned char (*maps)[128], bool early, void *context) {
  void *params[264];
  size_t n = k->kinds->size();
  for (size_t i = 0; i < n; ++i)
    params[i] = slots + 8 * i;
  for (size_t t = 0; t < k->tensormaps->size(); ++t)
    params[n + t] = maps[t];
  void *f = function(k, context);
  if (!f)
    return false;
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    return true; // nothing to run
  if (fakv_launch(f, grid[0], grid[1], grid[2], k->threads, k->smem,
                  reinterpret_cast<void *>(stream), params,
                  k->launchMode == LaunchMode::Programmatic ||
                      (k->launchMode == LaunchMode::OnRequest && early))) {
    raiseRuntime();
    return false;
  }
  return true;
}

} // namespace fakv::runtime
