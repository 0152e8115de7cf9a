//===- CallSignature.h - what a call's arguments are, as bytes ---*- C++ -*-===//
//
// fakv._runtime.signature(tensors, scalars): the key under which
// fakv.flash_attn_with_kvcache keeps a prepared call (frontend/fakv/
// interface.py), built in C from the arguments: for each tensor its shape,
// strides, dtype, device and 16-byte alignment; for each scalar its type and
// value. Returns (key: bytes, addresses: tuple of ints, 0 where no tensor),
// or None when an argument is of a kind it does not know (the caller then
// takes the slow path, which checks everything).
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_RUNTIME_CALLSIGNATURE_H
#define FAKV_RUNTIME_CALLSIGNATURE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace fakv::runtime {

/// signature(tensors: tuple, scalars: tuple) -> (bytes, tuple) or None.
PyObject *callSignature(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/// set_tensor_type(torch.Tensor): the type signature() reads as a tensor.
PyObject *setTensorType(PyObject *self, PyObject *type);

} // namespace fakv::runtime

#endif // FAKV_RUNTIME_CALLSIGNATURE_H
