//===- RuntimePython.cpp - fakv._runtime: launching from Python -----------===//
//
// The Python extension the package launches kernels with (CPython's own API,
// no pybind11: a launch is on every API call's path): Kernel
// (LaunchKernel.h), PreparedCall (PreparedCall.h), signature
// (CallSignature.h), and the error word kernels report bad data in.
//
//===----------------------------------------------------------------------===//

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "runtime/CallSignature.h"
#include "runtime/FastPath.h"
#include "runtime/LaunchKernel.h"
#include "runtime/PreparedCall.h"
#include "runtime/PythonGuard.h"
#include "runtime/fakv_runtime.h"

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

using namespace fakv::runtime;

// ---- module functions ---------------------------------------------------------------

/// (nbytes, context) of host_mapped's and start_host_mapped's arguments
/// (`format` says whether the context may be left out): false with an
/// exception when they are not a positive size and None or an address.
bool hostMappedArgs(PyObject *args, const char *format, const char *what, Py_ssize_t &bytes, void *&context) {
  PyObject *contextArg = nullptr;
  if (!PyArg_ParseTuple(args, format, &bytes, &contextArg))
    return false;
  if (bytes <= 0) {
    PyErr_Format(PyExc_ValueError, "%s: %zd bytes", what, bytes);
    return false;
  }
  context = contextArg && contextArg != Py_None ? PyLong_AsVoidPtr(contextArg) : nullptr;
  return !PyErr_Occurred();
}

PyObject *hostMapped(PyObject *, PyObject *args) {
  Py_ssize_t bytes = 0;
  void *context = nullptr;
  if (!hostMappedArgs(args, "n|O", "host_mapped", bytes, context))
    return nullptr;
  void *p = nullptr;
  int failed;
  Py_BEGIN_ALLOW_THREADS // the driver pins a page (~1 ms): other threads go on
  failed = fakv_host_mapped(static_cast<size_t>(bytes), context, &p);
  Py_END_ALLOW_THREADS
  if (failed)
    return raiseRuntime();
  return PyLong_FromVoidPtr(p);
}

// The error word's page pinned meanwhile: host_mapped's work in a native
// thread (no Python in it: starting one costs tens of microseconds, a
// Python thread's start hundreds on the lent machines, on a new process's
// first call). One at a time; the object is freed once its thread is
// joined, never before (its thread may still be in the driver when nobody
// waits for it).
struct PendingMapped {
  std::thread thread;
  void *address = nullptr;
  bool failed = false;
  pid_t owner = getpid(); // (a forked child has no such thread: it never joins it)
};
PendingMapped *pendingMapped = nullptr;
std::mutex pendingMappedLock;

/// start_host_mapped(nbytes, context): host_mapped(nbytes, context) begun in a thread of its own.
PyObject *startHostMapped(PyObject *, PyObject *args) {
  Py_ssize_t bytes = 0;
  void *context = nullptr;
  if (!hostMappedArgs(args, "nO", "start_host_mapped", bytes, context))
    return nullptr;
  std::lock_guard<std::mutex> guard(pendingMappedLock);
  if (pendingMapped) {
    PyErr_SetString(PyExc_RuntimeError, "start_host_mapped: one is pending already");
    return nullptr;
  }
  auto *pending = new PendingMapped;
  try {
    pending->thread = std::thread([pending, bytes, context] {
      pending->failed = fakv_host_mapped(static_cast<size_t>(bytes), context, &pending->address) != 0;
    });
  } catch (const std::system_error &e) {
    delete pending;
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  pendingMapped = pending;
  Py_RETURN_NONE;
}

/// wait_host_mapped() -> the address start_host_mapped's thread got, once it
/// is done; None when none is pending, it failed (host_mapped then says
/// why), or this is a process forked from the one that started it.
PyObject *waitHostMapped(PyObject *, PyObject *) {
  PendingMapped *pending;
  {
    std::lock_guard<std::mutex> guard(pendingMappedLock);
    pending = pendingMapped;
    pendingMapped = nullptr;
  }
  if (!pending || pending->owner != getpid())
    Py_RETURN_NONE;
  bool joined = true;
  Py_BEGIN_ALLOW_THREADS
  try {
    pending->thread.join();
  } catch (const std::system_error &) {
    joined = false;
  }
  Py_END_ALLOW_THREADS
  if (!joined)
    Py_RETURN_NONE;
  void *address = pending->failed ? nullptr : pending->address;
  delete pending; // (joined: its thread is done with it)
  if (!address)
    Py_RETURN_NONE;
  return PyLong_FromVoidPtr(address);
}

/// current_context() -> the calling thread's current CUDA context (an int; 0: none).
PyObject *currentContext(PyObject *, PyObject *) {
  void *context = nullptr;
  if (fakv_current_context(&context))
    return raiseRuntime();
  return PyLong_FromVoidPtr(context);
}

/// exchange_capture_mode(mode) -> the calling thread's stream-capture mode
/// before it was set to `mode` (CUstreamCaptureMode's 0 global, 1
/// thread-local, 2 relaxed): work that must not break another thread's CUDA
/// graph capture in global mode (an event's query, a page pinned) runs
/// relaxed (fakv/lengths_hint.py).
PyObject *exchangeCaptureMode(PyObject *, PyObject *arg) {
  int mode = 0;
  if (!PyArg_Parse(arg, "i", &mode))
    return nullptr;
  if (fakv_exchange_capture_mode(&mode))
    return raiseRuntime();
  return PyLong_FromLong(mode);
}

/// bind_primary_context(ordinal): device `ordinal`'s primary context made the
/// calling thread's current one (a thread's first CUDA work binds it so).
PyObject *bindPrimaryContext(PyObject *, PyObject *arg) {
  int ordinal = 0;
  if (!PyArg_Parse(arg, "i", &ordinal))
    return nullptr;
  if (fakv_bind_primary_context(ordinal))
    return raiseRuntime();
  Py_RETURN_NONE;
}

/// device_properties(ordinal) -> (SM count, L2 bytes, the memory's peak GB/s
/// (0: unknown)) of a CUDA device
/// (the driver's attributes: torch.cuda.get_device_properties costs ~0.2 ms
/// on a new process's first call).
PyObject *deviceProperties(PyObject *, PyObject *arg) {
  int ordinal = 0;
  if (!PyArg_Parse(arg, "i", &ordinal)) // (an int out of C int's range: OverflowError)
    return nullptr;
  int sms = 0, l2 = 0, gbps = 0;
  if (fakv_device_properties(ordinal, &sms, &l2, &gbps))
    return raiseRuntime();
  return Py_BuildValue("(iii)", sms, l2, gbps);
}

/// take_word(address): the int32 at `address`, then 0 stored there (the
/// error word kernels write; read without waiting for the GPU).
PyObject *takeWord(PyObject *, PyObject *arg) {
  void *p = PyLong_AsVoidPtr(arg);
  if (PyErr_Occurred())
    return nullptr;
  if (!p || reinterpret_cast<uintptr_t>(p) % alignof(int32_t)) {
    PyErr_Format(PyExc_ValueError, "take_word: %p is not the address of an int32", p);
    return nullptr;
  }
  // (read and cleared at once: a code a kernel stores in between is not lost)
  int32_t v = __atomic_exchange_n(static_cast<int32_t *>(p), 0, __ATOMIC_SEQ_CST);
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
    {"host_mapped", NoThrow<hostMapped>::call, METH_VARARGS,
     "host_mapped(nbytes, context=None) -> address of zeroed page-locked host memory every device can "
     "write (allocated with `context` made current in this thread, when given)"},
    {"start_host_mapped", NoThrow<startHostMapped>::call, METH_VARARGS,
     "start_host_mapped(nbytes, context) -> None: host_mapped begun in a native thread of its own"},
    {"wait_host_mapped", NoThrow<waitHostMapped>::call, METH_NOARGS,
     "wait_host_mapped() -> start_host_mapped's address once done, or None (none pending, or it failed)"},
    {"current_context", NoThrow<currentContext>::call, METH_NOARGS,
     "current_context() -> this thread's current CUDA context, or 0"},
    {"exchange_capture_mode", NoThrow<exchangeCaptureMode>::call, METH_O,
     "exchange_capture_mode(mode) -> this thread's stream-capture mode before it was set to mode (2: relaxed)"},
    {"bind_primary_context", NoThrow<bindPrimaryContext>::call, METH_O,
     "bind_primary_context(ordinal): that device's primary context made this thread's current one"},
    {"device_properties", NoThrow<deviceProperties>::call, METH_O,
     "device_properties(ordinal) -> (SM count, L2 bytes, memory GB/s) of that CUDA device"},
    {"take_word", NoThrow<takeWord>::call, METH_O, "take_word(address) -> the int32 there, which is then zeroed"},
    {"kept_workspaces", NoThrow<fakv::runtime::keptWorkspaces>::call, METH_NOARGS,
     "kept_workspaces() -> [(stream, bytes)]: the PreparedCall workspaces kept for the current context"},
    {"link_ptx", NoThrow<linkPtx>::call, METH_O, "link_ptx(ptx) -> cubin bytes, by the CUDA driver's JIT"},
    {"signature", fastcall<fakv::runtime::callSignature>(),
     METH_FASTCALL,
     "signature(tensors, scalars, objects) -> (key bytes, addresses) or None (runtime/CallSignature.h)"},
    {"run_prepared", fastcall<fakv::runtime::runPrepared>(),
     METH_FASTCALL,
     "run_prepared(calls, objects, extras, 12 tensors, 7 options) -> the prepared call's output, or None "
     "(runtime/FastPath.h)"},
    {"set_tensor_type", NoThrow<fakv::runtime::setTensorType>::call, METH_O,
     "set_tensor_type(torch.Tensor): the type signature() reads as a tensor"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef moduleDef = {PyModuleDef_HEAD_INIT, "_runtime",
                         "fakv's kernel launcher over the CUDA driver (runtime/)", -1,
                         moduleMethods};

} // namespace

PyMODINIT_FUNC PyInit__runtime(void) {
  if (!initKernelType() || !initPreparedCallType())
    return nullptr;
  PyObject *m = PyModule_Create(&moduleDef);
  if (!m)
    return nullptr;
  Py_INCREF(&KernelType);
  Py_INCREF(&PreparedCallType);
  if (PyModule_AddObject(m, "Kernel", reinterpret_cast<PyObject *>(&KernelType)) < 0 ||
      PyModule_AddObject(m, "PreparedCall", reinterpret_cast<PyObject *>(&PreparedCallType)) < 0) {
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
