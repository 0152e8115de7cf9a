//===- FastPath.h - flash_attn_with_kvcache's fast path in C ------*- C++ -*-===//
//
// fakv._runtime.run_prepared(calls, objects, extras, q, k_cache, v_cache,
// cache_seqlens, block_table, cache_batch_idx, alibi_slopes, k, v,
// rotary_cos, rotary_sin, cache_leftpad, softmax_scale, causal,
// window_size, softcap, rotary_interleaved, num_splits,
// return_softmax_lse): the API call's key (CallSignature.h: the 12 tensors,
// the 7 options then `extras`' items as scalars, `objects` by identity)
// looked up in `calls` (a dict: key bytes -> PreparedCall, or any callable
// taking (addresses, q, cache_seqlens)), and the entry found run. Returns
// its output, or None when there is no entry (or the key cannot hold an
// argument, or the entry returns None): the caller then takes the slow
// path. One C call instead of the key's, the lookup's and the call's
// (frontend/fakv/api.py).
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_RUNTIME_FASTPATH_H
#define FAKV_RUNTIME_FASTPATH_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

namespace fakv::runtime {

PyObject *runPrepared(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

} // namespace fakv::runtime

#endif // FAKV_RUNTIME_FASTPATH_H
