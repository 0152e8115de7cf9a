//===- CallSignature.h - what a call's arguments are, as bytes ---*- C++ -*-===//
//
// fakv._runtime.signature(tensors, scalars, objects): the key under which
// fakv.flash_attn_with_kvcache keeps a prepared call (frontend/fakv/
// prepare.py's CALLS), built in C from the arguments: for each tensor its
// shape, strides, dtype, device and 16-byte alignment; for each scalar its
// type and value; each object by identity. Returns (key: bytes, addresses: tuple of ints, 0 where no tensor),
// or None when an argument is of a kind it does not know (the caller then
// takes the slow path, which checks everything).
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_RUNTIME_CALLSIGNATURE_H
#define FAKV_RUNTIME_CALLSIGNATURE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <string>

namespace fakv::runtime {

/// What reading a call's arguments into a key gave.
enum class Read {
  Ok,      // the key is complete
  Unknown, // an argument of a kind the key cannot hold (no exception set)
  Error    // a Python exception was raised
};

/// The key of `nt` tensor arguments (None, an int or a torch tensor each),
/// `ns` scalars then the items of `extras` (a tuple, or null) as scalars,
/// and `objects` (a tuple) by identity; each tensor's address into
/// `addresses` (0 where no tensor). signature() and the fast path's
/// run_prepared() both build keys here: the same arguments give the same
/// bytes.
Read callKey(PyObject *const *tensors, Py_ssize_t nt, PyObject *const *scalars, Py_ssize_t ns, PyObject *extras,
             PyObject *objects, std::string &key, int64_t *addresses);

/// What a function returns when callKey gave `r` (not Ok): None for
/// Unknown (the slow path then), null for Error (the exception raised).
PyObject *notKeyed(Read r);

/// signature(tensors, scalars, objects: tuples) -> (bytes, tuple) or None.
PyObject *callSignature(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/// set_tensor_type(torch.Tensor): the type signature() reads as a tensor.
PyObject *setTensorType(PyObject *self, PyObject *type);

} // namespace fakv::runtime

#endif // FAKV_RUNTIME_CALLSIGNATURE_H
