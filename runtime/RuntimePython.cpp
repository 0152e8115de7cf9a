//===- RuntimePython.cpp - fakv._runtime: launching from Python -----------===//
//
// The Python extension the package launches kernels with (CPython's own API,
// no pybind11: a launch is on every API call's path). One `Kernel` per
// compiled kernel: it loads the cubin into each CUDA context that launches
// it, converts the arguments by the kinds of the launch facts (a tensor's
// data_ptr(), or an int address, for a pointer; Python numbers for scalars),
// appends the tensor maps of its TMA copies (cached per cache address, shape
// and strides) and calls cuLaunchKernel, all in one call from Python.
//
//===----------------------------------------------------------------------===//

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "runtime/CallSignature.h"
#include "runtime/fakv_runtime.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

namespace {

PyObject *dataPtrName, *shapeName, *strideName;

PyObject *raiseRuntime() {
  PyErr_SetString(PyExc_RuntimeError, fakv_last_error());
  return nullptr;
}

struct TensorMapSpec {
  int arg;
  uint32_t rows;
};

struct CachedMap {
  uint64_t key[10]; // address, dims[4], strides[4], rows
  alignas(64) unsigned char map[128];
};

struct KernelObject {
  PyObject_HEAD
  std::string *image;
  std::string *name;
  std::vector<char> *kinds;       // per runtime parameter: p b c i l f
  std::vector<TensorMapSpec> *tensormaps;
  std::vector<std::pair<void *, void *>> *functions; // (context, CUfunction)
  std::vector<CachedMap> *maps;   // most recent first
  unsigned threads, smem;
  unsigned packing[3];
  unsigned valueBytes;
};

unsigned kindBytes(char k) { return k == 'p' || k == 'l' ? 8 : k == 'i' || k == 'f' ? 4 : 1; }

int Kernel_init(KernelObject *self, PyObject *args, PyObject *kwargs) {
  static const char *keywords[] = {"image", "name", "kinds", "tensormaps", "threads",
                                   "smem", "packing", nullptr};
  Py_buffer image;
  const char *name, *kinds;
  PyObject *tms;
  unsigned threads, smem, px = 1, py = 1, pz = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*ssOII|(III)", const_cast<char **>(keywords),
                                   &image, &name, &kinds, &tms, &threads, &smem, &px, &py, &pz))
    return -1;
  self->image = new std::string(static_cast<const char *>(image.buf), image.len);
  PyBuffer_Release(&image);
  self->name = new std::string(name);
  self->kinds = new std::vector<char>(kinds, kinds + std::strlen(kinds));
  self->tensormaps = new std::vector<TensorMapSpec>();
  self->functions = new std::vector<std::pair<void *, void *>>();
  self->maps = new std::vector<CachedMap>();
  self->threads = threads;
  self->smem = smem;
  self->packing[0] = px ? px : 1;
  self->packing[1] = py ? py : 1;
  self->packing[2] = pz ? pz : 1;
  self->valueBytes = 0;
  for (char k : *self->kinds) {
    if (!std::strchr("pbcilf", k)) {
      PyErr_Format(PyExc_ValueError, "unknown parameter kind '%c'", k);
      return -1;
    }
    self->valueBytes += 8; // every value in an 8-byte slot
  }
  PyObject *seq = PySequence_Fast(tms, "tensormaps must be a sequence of (arg, rows)");
  if (!seq)
    return -1;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    int arg;
    unsigned rows;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "iI", &arg, &rows)) {
      Py_DECREF(seq);
      return -1;
    }
    if (arg < 0 || arg >= static_cast<int>(self->kinds->size()) || (*self->kinds)[arg] != 'p') {
      Py_DECREF(seq);
      PyErr_Format(PyExc_ValueError, "tensor map of parameter %d, which is not a pointer", arg);
      return -1;
    }
    self->tensormaps->push_back({arg, rows});
  }
  Py_DECREF(seq);
  if (self->kinds->size() + self->tensormaps->size() > 256) {
    PyErr_SetString(PyExc_ValueError, "more than 256 kernel parameters");
    return -1;
  }
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

/// The kernel in the current context (its module loaded on first use).
void *function(KernelObject *self) {
  void *ctx = nullptr;
  if (fakv_current_context(&ctx))
    return raiseRuntime();
  for (auto &[c, f] : *self->functions)
    if (c == ctx)
      return f;
  if (!ctx) {
    PyErr_SetString(PyExc_RuntimeError,
                    "no current CUDA context (initialise CUDA first, e.g. torch.cuda.init())");
    return nullptr;
  }
  void *module = nullptr, *f = nullptr;
  if (fakv_load_module_data(self->image->data(), &module) ||
      fakv_get_kernel(module, self->name->c_str(), &f))
    return raiseRuntime();
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

bool scalar(PyObject *arg, char kind, unsigned index, unsigned char *slot) {
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
    PyErr_Format(PyExc_TypeError, "argument %u does not fit its parameter (%s)", index,
                 kind == 'l' ? "i64" : kind == 'i' ? "i32" : kind == 'c' ? "i8" : "i1");
    return false;
  }
  if (kind == 'l')
    std::memcpy(slot, &v, 8);
  else if (kind == 'i') {
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

const unsigned char *cachedMap(KernelObject *self, const uint64_t key[10]);

/// The tensor map of the cache at `arg` (address already converted): a
/// tensor, or (address, layout) with the layout as 4 dims then 4 strides.
const unsigned char *tensorMap(KernelObject *self, PyObject *arg, uint64_t base, uint32_t rows) {
  uint64_t key[10];
  key[0] = base;
  key[9] = rows;
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

/// The map of `key` (address, dims, strides, rows) from the kernel's
/// recent ones, or encoded now.
const unsigned char *cachedMap(KernelObject *self, const uint64_t key[10]) {
  auto &maps = *self->maps;
  for (size_t i = 0; i < maps.size(); ++i)
    if (std::memcmp(maps[i].key, key, sizeof(maps[i].key)) == 0) {
      if (i)
        std::swap(maps[i], maps[0]);
      return maps[0].map;
    }
  CachedMap entry;
  std::memcpy(entry.key, key, sizeof(entry.key));
  if (fakv_encode_kv_tensormap(entry.map, reinterpret_cast<const void *>(key[0]), key + 1,
                               key + 5, static_cast<uint32_t>(key[9]))) {
    raiseRuntime();
    return nullptr;
  }
  if (maps.size() >= 8)
    maps.pop_back();
  maps.insert(maps.begin(), entry);
  return maps[0].map;
}

/// launch(grid_x, grid_y, grid_z, stream, *args): the grid as written
/// (divided by the kernel's grid packing), the CUDA stream handle (0: the
/// default stream), then one argument per runtime parameter.
PyObject *Kernel_launch(KernelObject *self, PyObject *const *args, Py_ssize_t nargs) {
  const size_t nparams = self->kinds->size();
  if (static_cast<size_t>(nargs) != nparams + 4) {
    PyErr_Format(PyExc_TypeError, "%s takes %zu arguments, got %zd", self->name->c_str(),
                 nparams, nargs - 4);
    return nullptr;
  }
  unsigned grid[3];
  for (int i = 0; i < 3; ++i) {
    long long g = PyLong_AsLongLong(args[i]);
    if (g == -1 && PyErr_Occurred())
      return nullptr;
    if (g < 0 || g > 0x7fffffff || g % self->packing[i]) {
      if (g % self->packing[i])
        PyErr_Format(PyExc_ValueError,
                     "%s: grid axis %d is %lld, not a multiple of the %u query heads that "
                     "fakv-pack-gqa packs into one program",
                     self->name->c_str(), i, g, self->packing[i]);
      else
        PyErr_Format(PyExc_ValueError, "%s: grid axis %d is %lld", self->name->c_str(), i, g);
      return nullptr;
    }
    grid[i] = static_cast<unsigned>(g / self->packing[i]);
  }
  uint64_t stream = 0;
  if (args[3] != Py_None) {
    stream = PyLong_AsUnsignedLongLong(args[3]);
    if (PyErr_Occurred())
      return nullptr;
  }
  alignas(64) unsigned char values[256 * 8];
  alignas(64) unsigned char maps[8][128];
  void *params[256];
  uint64_t addresses[256];
  for (size_t i = 0; i < nparams; ++i) {
    char kind = (*self->kinds)[i];
    unsigned char *slot = values + 8 * i;
    PyObject *arg = args[4 + i];
    if (kind == 'p') {
      if (!address(arg, addresses[i]))
        return nullptr;
      std::memcpy(slot, &addresses[i], 8);
    } else if (!scalar(arg, kind, static_cast<unsigned>(i), slot)) {
      return nullptr;
    }
    params[i] = slot;
  }
  size_t n = nparams;
  for (size_t t = 0; t < self->tensormaps->size(); ++t) {
    const TensorMapSpec &spec = (*self->tensormaps)[t];
    const unsigned char *map = tensorMap(self, args[4 + spec.arg], addresses[spec.arg], spec.rows);
    if (!map)
      return nullptr;
    unsigned char *dst = t < 8 ? maps[t] : nullptr;
    if (!dst) {
      PyErr_SetString(PyExc_ValueError, "more than 8 tensor maps");
      return nullptr;
    }
    std::memcpy(dst, map, 128);
    params[n++] = dst;
  }
  void *f = function(self);
  if (!f)
    return nullptr;
  if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0)
    Py_RETURN_NONE; // nothing to run
  if (fakv_launch(f, grid[0], grid[1], grid[2], self->threads, self->smem,
                  reinterpret_cast<void *>(stream), params))
    return raiseRuntime();
  Py_RETURN_NONE;
}

PyMethodDef kernelMethods[] = {
    {"launch", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(Kernel_launch)),
     METH_FASTCALL,
     "launch(grid_x, grid_y, grid_z, stream, *args): launch on the current context's device"},
    {nullptr, nullptr, 0, nullptr}};

PyTypeObject KernelType = {PyVarObject_HEAD_INIT(nullptr, 0)};

// ---- module functions ---------------------------------------------------------------

PyObject *hostMapped(PyObject *, PyObject *arg) {
  size_t bytes = PyLong_AsSize_t(arg);
  if (PyErr_Occurred())
    return nullptr;
  void *p = nullptr;
  if (fakv_host_mapped(bytes, &p))
    return raiseRuntime();
  return PyLong_FromVoidPtr(p);
}

/// take_word(address): the int32 at `address`, then 0 stored there (the
/// error word kernels write; read without waiting for the GPU).
PyObject *takeWord(PyObject *, PyObject *arg) {
  void *p = PyLong_AsVoidPtr(arg);
  if (PyErr_Occurred())
    return nullptr;
  auto *word = static_cast<volatile int32_t *>(p);
  int32_t v = *word;
  if (v)
    *word = 0;
  return PyLong_FromLong(v);
}

PyObject *linkPtx(PyObject *, PyObject *arg) {
  Py_buffer ptx;
  if (PyObject_GetBuffer(arg, &ptx, PyBUF_SIMPLE))
    return nullptr;
  std::string text(static_cast<const char *>(ptx.buf), ptx.len);
  PyBuffer_Release(&ptx);
  void *cubin = nullptr;
  size_t size = 0;
  int rc;
  Py_BEGIN_ALLOW_THREADS rc = fakv_link_ptx(text.c_str(), text.size() + 1, &cubin, &size);
  Py_END_ALLOW_THREADS if (rc) return raiseRuntime();
  PyObject *out = PyBytes_FromStringAndSize(static_cast<const char *>(cubin), size);
  std::free(cubin);
  return out;
}

PyMethodDef moduleMethods[] = {
    {"host_mapped", hostMapped, METH_O,
     "host_mapped(nbytes) -> address of zeroed page-locked host memory every device can write"},
    {"take_word", takeWord, METH_O, "take_word(address) -> the int32 there, which is then zeroed"},
    {"link_ptx", linkPtx, METH_O, "link_ptx(ptx) -> cubin bytes, by the CUDA driver's JIT"},
    {"signature", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(fakv::runtime::callSignature)),
     METH_FASTCALL,
     "signature(tensors, scalars, objects) -> (key bytes, addresses) or None (runtime/CallSignature.h)"},
    {"set_tensor_type", fakv::runtime::setTensorType, METH_O,
     "set_tensor_type(torch.Tensor): the type signature() reads as a tensor"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef moduleDef = {PyModuleDef_HEAD_INIT, "_runtime",
                         "fakv's kernel launcher over the CUDA driver (runtime/)", -1,
                         moduleMethods};

} // namespace

PyMODINIT_FUNC PyInit__runtime(void) {
  KernelType.tp_name = "fakv._runtime.Kernel";
  KernelType.tp_basicsize = sizeof(KernelObject);
  KernelType.tp_flags = Py_TPFLAGS_DEFAULT;
  KernelType.tp_doc = "Kernel(image, name, kinds, tensormaps, threads, smem, packing=(1, 1, 1))";
  KernelType.tp_new = PyType_GenericNew;
  KernelType.tp_init = reinterpret_cast<initproc>(Kernel_init);
  KernelType.tp_dealloc = reinterpret_cast<destructor>(Kernel_dealloc);
  KernelType.tp_methods = kernelMethods;
  if (PyType_Ready(&KernelType) < 0)
    return nullptr;
  dataPtrName = PyUnicode_InternFromString("data_ptr");
  shapeName = PyUnicode_InternFromString("shape");
  strideName = PyUnicode_InternFromString("stride");
  PyObject *m = PyModule_Create(&moduleDef);
  if (!m)
    return nullptr;
  Py_INCREF(&KernelType);
  if (PyModule_AddObject(m, "Kernel", reinterpret_cast<PyObject *>(&KernelType)) < 0) {
    Py_DECREF(&KernelType);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
