//===- FastPath.cpp - flash_attn_with_kvcache's fast path in C -------------===//

#include "runtime/FastPath.h"

#include "runtime/CallSignature.h"
#include "runtime/PreparedCall.h"

#include <string>

namespace fakv::runtime {

namespace {
constexpr Py_ssize_t Leading = 3;                       // calls, objects, extras
constexpr Py_ssize_t Tensors = PreparedCallAddresses;   // q ... cache_leftpad
constexpr Py_ssize_t Options = 7;                       // softmax_scale ... return_softmax_lse
} // namespace

PyObject *runPrepared(PyObject *, PyObject *const *args, Py_ssize_t nargs) {
  if (nargs != Leading + Tensors + Options || !PyDict_Check(args[0]) || !PyTuple_Check(args[1]) ||
      !PyTuple_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "run_prepared(calls: dict, objects: tuple, extras: tuple, "
                                     "12 tensors, 7 options)");
    return nullptr;
  }
  PyObject *const *tensors = args + Leading;
  std::string key;
  int64_t addresses[Tensors];
  Read r = callKey(tensors, Tensors, tensors + Tensors, Options, args[2], args[1], key, addresses);
  if (r != Read::Ok)
    return notKeyed(r);
  PyObject *bytes = PyBytes_FromStringAndSize(key.data(), key.size());
  if (!bytes)
    return nullptr;
  PyObject *call = PyDict_GetItemWithError(args[0], bytes);    // (borrowed)
  Py_DECREF(bytes);
  if (!call)
    return PyErr_Occurred() ? nullptr : (Py_INCREF(Py_None), Py_None);
  Py_INCREF(call);            // (the dict may drop it while the call runs Python)
  PyObject *q = tensors[0], *seqlens = tensors[3], *out;
  if (Py_TYPE(call) == &PreparedCallType) {
    out = callPrepared(call, addresses, q, seqlens);
  } else {
    PyObject *tuple = PyTuple_New(Tensors);
    for (Py_ssize_t i = 0; tuple && i < Tensors; ++i) {
      PyObject *a = PyLong_FromLongLong(addresses[i]);
      if (!a)
        Py_CLEAR(tuple);
      else
        PyTuple_SET_ITEM(tuple, i, a);
    }
    out = tuple ? PyObject_CallFunctionObjArgs(call, tuple, q, seqlens, nullptr) : nullptr;
    Py_XDECREF(tuple);
  }
  Py_DECREF(call);
  return out;
}

} // namespace fakv::runtime
