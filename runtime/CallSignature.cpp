//===- CallSignature.cpp - what a call's arguments are, as bytes ----------===//

#include "runtime/CallSignature.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace fakv::runtime {

namespace {

PyTypeObject *tensorType = nullptr;
PyObject *shapeName, *strideName, *dtypeName, *getDeviceName, *dataPtrName;

enum Tag : uint8_t { None, Int, Float, Bool, Str, Tuple, Object, Tensor };

void put(std::string &key, const void *p, size_t n) { key.append(static_cast<const char *>(p), n); }
void putTag(std::string &key, Tag t) { key.push_back(static_cast<char>(t)); }
void putI64(std::string &key, int64_t v) { put(key, &v, sizeof v); }

/// A tuple-like of ints (torch.Size, a stride tuple) into the key.
bool putInts(std::string &key, PyObject *seq) {
  if (!PyTuple_Check(seq))
    return false;
  Py_ssize_t n = PyTuple_GET_SIZE(seq);
  putI64(key, n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    int64_t v = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
    if (v == -1 && PyErr_Occurred())
      return false;
    putI64(key, v);
  }
  return true;
}

PyObject *call(PyObject *obj, PyObject *name) { return PyObject_CallMethodNoArgs(obj, name); }

/// A tensor's layout into the key; its address into `address`. False (with
/// or without an exception) when it cannot be read.
bool putTensor(std::string &key, PyObject *t, int64_t &address) {
  putTag(key, Tensor);
  PyObject *shape = PyObject_GetAttr(t, shapeName);
  if (!shape)
    return false;
  bool ok = putInts(key, shape);
  Py_DECREF(shape);
  if (!ok)
    return false;
  PyObject *stride = call(t, strideName);
  if (!stride)
    return false;
  ok = putInts(key, stride);
  Py_DECREF(stride);
  if (!ok)
    return false;
  PyObject *dtype = PyObject_GetAttr(t, dtypeName);   // torch.dtype objects are singletons
  if (!dtype)
    return false;
  uintptr_t id = reinterpret_cast<uintptr_t>(dtype);
  Py_DECREF(dtype);
  put(key, &id, sizeof id);
  PyObject *device = call(t, getDeviceName);
  if (!device)
    return false;
  int64_t index = PyLong_AsLongLong(device);
  Py_DECREF(device);
  if (index == -1 && PyErr_Occurred())
    return false;
  putI64(key, index);
  PyObject *ptr = call(t, dataPtrName);
  if (!ptr)
    return false;
  address = PyLong_AsLongLong(ptr);
  Py_DECREF(ptr);
  if (address == -1 && PyErr_Occurred())
    return false;
  key.push_back(static_cast<char>((address & 15) == 0));
  return true;
}

/// A scalar option into the key; false for a kind it does not know, or a
/// sequence nested deeper than an option's pair (a list holding itself
/// recursed until the stack overflowed).
bool putScalar(std::string &key, PyObject *v, int depth = 0) {
  if (v == Py_None) {
    putTag(key, None);
  } else if (PyBool_Check(v)) {
    putTag(key, Bool);
    key.push_back(v == Py_True);
  } else if (PyLong_CheckExact(v)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
      return false;
    putTag(key, Int);
    putI64(key, x);
  } else if (PyFloat_Check(v)) {        // (numpy's float64 too: a float subclass)
    putTag(key, Float);
    double x = PyFloat_AS_DOUBLE(v);
    put(key, &x, sizeof x);
  } else if (PyUnicode_CheckExact(v)) {
    Py_ssize_t n;
    const char *s = PyUnicode_AsUTF8AndSize(v, &n);
    if (!s)
      return false;
    putTag(key, Str);
    putI64(key, n);
    put(key, s, n);
  } else if ((PyTuple_CheckExact(v) || PyList_CheckExact(v)) && depth < 2) {
    PyObject *fast = PySequence_Fast(v, "");
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    putTag(key, Tuple);
    putI64(key, n);
    bool ok = true;
    for (Py_ssize_t i = 0; ok && i < n; ++i)
      ok = putScalar(key, PySequence_Fast_GET_ITEM(fast, i), depth + 1);
    Py_DECREF(fast);
    return ok;
  } else {
    return false;
  }
  return true;
}

/// The tensor arguments' layouts into the key and their addresses into
/// `addresses` (0 where no tensor).
Read putTensors(std::string &key, PyObject *const *tensors, Py_ssize_t n, int64_t *addresses) {
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *t = tensors[i];
    addresses[i] = 0;
    if (t == Py_None) {
      putTag(key, None);
    } else if (PyLong_CheckExact(t)) {
      putTag(key, Int);                    // an int cache_seqlens: its value is checked per call
    } else if (Py_TYPE(t) == tensorType) {
      if (!putTensor(key, t, addresses[i]))
        return PyErr_Occurred() ? Read::Error : Read::Unknown;
    } else {
      return Read::Unknown;
    }
  }
  return Read::Ok;
}

Read putScalars(std::string &key, PyObject *const *scalars, Py_ssize_t n) {
  for (Py_ssize_t i = 0; i < n; ++i)
    if (!putScalar(key, scalars[i])) {
      if (PyErr_Occurred())
        PyErr_Clear();
      return Read::Unknown;
    }
  return Read::Ok;
}

// Objects by identity (the kernels): the caller keeps them alive while it
// keeps the key.
void putObjects(std::string &key, PyObject *objects) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(objects); ++i) {
    putTag(key, Object);
    uintptr_t id = reinterpret_cast<uintptr_t>(PyTuple_GET_ITEM(objects, i));
    put(key, &id, sizeof id);
  }
}

PyObject *const *items(PyObject *tuple) { return reinterpret_cast<PyTupleObject *>(tuple)->ob_item; }

} // namespace

PyObject *setTensorType(PyObject *, PyObject *type) {
  if (!PyType_Check(type)) {
    PyErr_SetString(PyExc_TypeError, "set_tensor_type takes a type");
    return nullptr;
  }
  Py_INCREF(type);
  Py_XDECREF(reinterpret_cast<PyObject *>(tensorType));
  tensorType = reinterpret_cast<PyTypeObject *>(type);
  if (!shapeName) {
    shapeName = PyUnicode_InternFromString("shape");
    strideName = PyUnicode_InternFromString("stride");
    dtypeName = PyUnicode_InternFromString("dtype");
    getDeviceName = PyUnicode_InternFromString("get_device");
    dataPtrName = PyUnicode_InternFromString("data_ptr");
  }
  Py_RETURN_NONE;
}

Read callKey(PyObject *const *tensors, Py_ssize_t nt, PyObject *const *scalars, Py_ssize_t ns, PyObject *extras,
             PyObject *objects, std::string &key, int64_t *addresses) {
  if (!tensorType)
    return Read::Unknown;
  key.reserve(512);
  Read r = putTensors(key, tensors, nt, addresses);
  if (r == Read::Ok)
    r = putScalars(key, scalars, ns);
  if (r == Read::Ok && extras)
    r = putScalars(key, items(extras), PyTuple_GET_SIZE(extras));
  if (r == Read::Ok)
    putObjects(key, objects);
  return r;
}

PyObject *notKeyed(Read r) {
  if (r == Read::Error)
    return nullptr;
  Py_RETURN_NONE;
}

PyObject *callSignature(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != 3 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "signature(tensors, scalars, objects): three tuples");
    return nullptr;
  }
  Py_ssize_t n = PyTuple_GET_SIZE(args[0]);
  std::vector<int64_t> address(n);
  std::string key;
  Read r = callKey(items(args[0]), n, items(args[1]), PyTuple_GET_SIZE(args[1]), nullptr, args[2], key,
                   address.data());
  if (r != Read::Ok)
    return notKeyed(r);
  PyObject *addresses = PyTuple_New(n);
  if (!addresses)
    return nullptr;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *a = PyLong_FromLongLong(address[i]);
    if (!a) {
      Py_DECREF(addresses);
      return nullptr;
    }
    PyTuple_SET_ITEM(addresses, i, a);
  }
  PyObject *bytes = PyBytes_FromStringAndSize(key.data(), key.size());
  if (!bytes) {
    Py_DECREF(addresses);
    return nullptr;
  }
  PyObject *out = PyTuple_Pack(2, bytes, addresses);
  Py_DECREF(bytes);
  Py_DECREF(addresses);
  return out;
}

} // namespace fakv::runtime
