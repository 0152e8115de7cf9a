//===- PythonGuard.h - C++ exceptions kept out of CPython -------*- C++ -*-===//
//
// Every function the runtime hands to CPython (module functions, type slots,
// methods) goes through NoThrow: a C++ exception (std::bad_alloc from a
// key, a vector or a string when memory runs out) would otherwise unwind
// into the interpreter's C frames and std::terminate the process. It
// becomes MemoryError (bad_alloc) or RuntimeError (anything else), and the
// function returns its failure value (null, or -1 for an init slot). The
// non-throwing path costs nothing (zero-cost exception tables). Not covered:
// the stretches run with the GIL released (host_mapped's and link_ptx's
// driver calls), where an exception would set Python's error without it.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_RUNTIME_PYTHONGUARD_H
#define FAKV_RUNTIME_PYTHONGUARD_H

#include <Python.h>

#include <exception>
#include <new>
#include <type_traits>

namespace fakv::runtime {

template <auto F> struct NoThrow;

template <typename R, typename... A, R (*F)(A...)> struct NoThrow<F> {
  static R call(A... a) noexcept {
    try {
      return F(a...);
    } catch (const std::bad_alloc &) {
      PyErr_NoMemory();
    } catch (const std::exception &e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (...) {
      PyErr_SetString(PyExc_RuntimeError, "fakv._runtime: an unknown C++ exception");
    }
    if constexpr (std::is_pointer_v<R>)
      return nullptr;
    else
      return static_cast<R>(-1);
  }
};

/// A METH_FASTCALL function through NoThrow, as PyMethodDef's PyCFunction.
template <auto F> PyCFunction fastcall() {
  return reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(NoThrow<F>::call));
}

/// `seq`'s items as a new tuple (a list copied), or null with a TypeError
/// of `what` when it is no sequence: a loop converting items (whose
/// __index__ or data_ptr may run Python code that empties a list being
/// walked) holds every item through the tuple.
inline PyObject *ownedItems(PyObject *seq, const char *what) {
  PyObject *items = PySequence_Tuple(seq);
  if (!items && PyErr_ExceptionMatches(PyExc_TypeError)) {
    PyErr_Clear();
    PyErr_SetString(PyExc_TypeError, what);
  }
  return items;
}

} // namespace fakv::runtime

#endif // FAKV_RUNTIME_PYTHONGUARD_H
