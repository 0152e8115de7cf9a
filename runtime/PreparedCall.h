//===- PreparedCall.h - fakv._runtime.PreparedCall ---------------*- C++ -*-===//
//
// One checked and planned flash_attn_with_kvcache call on the GPU (made by
// frontend/fakv/interface.py for a call signature): its decode kernel and,
// with several splits, its combine kernel, their arguments packed once, the
// caches' layout for their TMA maps, and how it gets its outputs and
// workspace. Calling it does the per-call work in C: the addresses into the
// argument slots, the output from torch.empty_like(q), the workspace from
// torch's caching allocator on the current stream (kept for the stream's
// next call, or given back once the kernels are queued: stream order keeps
// it theirs), the two launches.
//
//   PreparedCall(...)(addresses, q, cache_seqlens) -> out, or (out, lse)
//   addresses: those of q, k_cache, v_cache, cache_seqlens, block_table,
//   cache_batch_idx, alibi_slopes, k, v, rotary_cos, rotary_sin,
//   cache_leftpad (0 where not a tensor)
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_RUNTIME_PREPAREDCALL_H
#define FAKV_RUNTIME_PREPAREDCALL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>

namespace fakv::runtime {

extern PyTypeObject PreparedCallType;

/// The addresses a call passes: q, k_cache, v_cache, cache_seqlens,
/// block_table, cache_batch_idx, alibi_slopes, k, v, rotary_cos,
/// rotary_sin, cache_leftpad.
constexpr int PreparedCallAddresses = 12;

/// `call` (a PreparedCall) run with PreparedCallAddresses addresses as
/// C ints: what calling it with them as a tuple returns.
PyObject *callPrepared(PyObject *call, const int64_t *addresses, PyObject *q, PyObject *seqlens);

/// Readies PreparedCallType (once, at module import).
bool initPreparedCallType();

/// kept_workspaces() -> [(stream, bytes)] of the workspaces kept for the
/// current context's streams (PreparedCall.cpp).
PyObject *keptWorkspaces(PyObject *, PyObject *);

} // namespace fakv::runtime

#endif // FAKV_RUNTIME_PREPAREDCALL_H
