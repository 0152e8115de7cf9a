//===- LaunchKernel.h - fakv._runtime.Kernel ---------------------*- C++ -*-===//
//
// One compiled kernel, launchable from Python: it loads its cubin into each
// CUDA context that launches it, converts the arguments by the parameter
// kinds of the launch facts (a tensor's data_ptr(), or an int address, for a
// pointer; Python numbers for scalars), appends the tensor maps of its TMA
// copies (cached per cache address and layout) and calls cuLaunchKernel.
// PreparedCall.h launches Kernels too, from argument slots it keeps packed.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_RUNTIME_LAUNCHKERNEL_H
#define FAKV_RUNTIME_LAUNCHKERNEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fakv::runtime {

struct TensorMapSpec {
  int arg;        // the pointer parameter whose tensor the map describes
  uint32_t rows;  // rows per box
};

struct CachedMap {
  uint64_t key[10]; // address, dims[4], strides[4], rows
  uint64_t used;    // when last found (the kernel's count of lookups)
  alignas(64) unsigned char map[128];
};

/// When a kernel is launched with programmatic stream serialization: never,
/// always, or when its launch asks (`early`: FAKV_DEPENDENT_LAUNCH unset).
enum class LaunchMode { Plain, Programmatic, OnRequest };

struct KernelObject {
  PyObject_HEAD
  std::string *image;
  std::string *name;
  std::vector<char> *kinds;       // per runtime parameter: p b c i l f
  std::vector<TensorMapSpec> *tensormaps;
  std::vector<std::pair<void *, void *>> *functions; // (context, CUfunction)
  std::vector<CachedMap> *maps;   // the last found first (LaunchKernel.cpp: cachedMap)
  uint64_t mapLookups;            // lookups so far: CachedMap::used's clock
  unsigned threads, smem;
  unsigned packing[3];
  LaunchMode launchMode;          // when it is launched programmatically (LaunchKernel.cpp)
};

extern PyTypeObject KernelType;

/// Readies KernelType (once, at module import).
bool initKernelType();

/// The RuntimeError of the runtime's last failure.
PyObject *raiseRuntime();

/// Runtime argument `i` of `k` from `arg` into its 8-byte slot; a pointer's
/// address also into `*address`. False with a Python exception.
bool packArgument(KernelObject *k, size_t i, PyObject *arg, unsigned char *slot,
                  uint64_t *address);

/// The grid to launch for the grid as written (divided by the kernel's grid
/// packing). False with a Python exception.
bool launchGrid(KernelObject *k, const long long written[3], unsigned grid[3]);

/// Tensor map `t` of `k` for the cache at `address` with `layout` (4 dims,
/// then 4 strides in elements): cached, or encoded now. Null with a Python
/// exception.
const unsigned char *tensorMapAt(KernelObject *k, size_t t, uint64_t address,
                                 const uint64_t layout[8]);

/// Launches `k` with its runtime arguments in 8-byte `slots` and its tensor
/// maps (128 bytes each) after them; `early`: launched programmatically
/// (unless FAKV_DEPENDENT_LAUNCH says otherwise: LaunchKernel.cpp), so that `k` may be scheduled while
/// the kernel before it in the stream (the same API call's decode, or
/// whatever came before a small call's decode) finishes. False with a Python
/// exception. `context`, when not null: the context to launch in, made
/// current when it is not (a prepared call's; Python run since it was
/// checked may have switched it).
bool launchSlots(KernelObject *k, const unsigned grid[3], uint64_t stream,
                 unsigned char *slots, unsigned char (*maps)[128], bool early,
                 void *context = nullptr);

} // namespace fakv::runtime

#endif // FAKV_RUNTIME_LAUNCHKERNEL_H
