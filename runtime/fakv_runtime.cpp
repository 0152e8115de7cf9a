//===- fakv_runtime.cpp - launching fakv kernels through the CUDA driver --===//

#include "runtime/fakv_runtime.h"

#include <cuda.h>

#include <map>
#include <mutex>
#include <string>

namespace {
thread_local std::string lastError;

int fail(const std::string &what, CUresult r = CUDA_SUCCESS) {
  lastError = what;
  if (r != CUDA_SUCCESS) {
    const char *msg = nullptr;
    cuGetErrorString(r, &msg);
    lastError += std::string(": ") + (msg ? msg : "unknown CUDA error");
  }
  return 1;
}

std::mutex cacheMutex;
/// (context, path) -> module: a process loads each cubin once per context.
std::map<std::pair<CUcontext, std::string>, CUmodule> moduleCache;
/// Kernels whose dynamic shared-memory limit was raised, and to what.
std::map<CUfunction, unsigned> smemLimit;
} // namespace

extern "C" {

const char *fakv_last_error(void) { return lastError.c_str(); }

int fakv_load_module(const char *path, void **module) {
  CUcontext ctx = nullptr;
  if (CUresult r = cuCtxGetCurrent(&ctx); r != CUDA_SUCCESS || !ctx)
    return fail("fakv_load_module: no current CUDA context", r);
  std::lock_guard<std::mutex> lock(cacheMutex);
  auto key = std::make_pair(ctx, std::string(path));
  auto it = moduleCache.find(key);
  if (it != moduleCache.end()) {
    *module = it->second;
    return 0;
  }
  CUmodule m;
  if (CUresult r = cuModuleLoad(&m, path); r != CUDA_SUCCESS)
    return fail(std::string("fakv_load_module: cannot load ") + path, r);
  moduleCache[key] = m;
  *module = m;
  return 0;
}

int fakv_load_module_data(const void *image, void **module) {
  CUmodule m;
  if (CUresult r = cuModuleLoadData(&m, image); r != CUDA_SUCCESS)
    return fail("fakv_load_module_data", r);
  *module = m;
  return 0;
}

int fakv_get_kernel(void *module, const char *name, void **kernel) {
  CUfunction f;
  if (CUresult r = cuModuleGetFunction(&f, static_cast<CUmodule>(module), name);
      r != CUDA_SUCCESS)
    return fail(std::string("fakv_get_kernel: no kernel ") + name, r);
  *kernel = f;
  return 0;
}

int fakv_encode_kv_tensormap(void *out128, const void *base,
                             const uint64_t dims[4], const uint64_t strides[4],
                             uint32_t box_rows) {
  if (strides[3] != 1)
    return fail("fakv_encode_kv_tensormap: the channel dimension must be contiguous");
  // TMA lists dimensions innermost first, strides in bytes (dims 1..3).
  cuuint64_t globalDim[4] = {dims[3], dims[2], dims[1], dims[0]};
  cuuint64_t globalStrides[3] = {strides[2] * 2, strides[1] * 2, strides[0] * 2};
  cuuint32_t box[4] = {64, 1, box_rows, 1};
  cuuint32_t elementStrides[4] = {1, 1, 1, 1};
  CUresult r = cuTensorMapEncodeTiled(
      static_cast<CUtensorMap *>(out128), CU_TENSOR_MAP_DATA_TYPE_UINT16, 4,
      const_cast<void *>(base), globalDim, globalStrides, box, elementStrides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
      CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    return fail("fakv_encode_kv_tensormap: cuTensorMapEncodeTiled rejected the "
                "cache (16-byte aligned base and strides, at most 256 rows per box)",
                r);
  return 0;
}

int fakv_launch(void *kernel, unsigned gx, unsigned gy, unsigned gz,
                unsigned threads, unsigned smem, void *stream, void **params) {
  auto f = static_cast<CUfunction>(kernel);
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    unsigned &limit = smemLimit[f];
    if (smem > 48 * 1024 && limit < smem) {
      if (CUresult r = cuFuncSetAttribute(
              f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
          r != CUDA_SUCCESS)
        return fail("fakv_launch: cannot raise the shared-memory limit", r);
      limit = smem;
    }
  }
  if (CUresult r = cuLaunchKernel(f, gx, gy, gz, threads, 1, 1, smem,
                                  static_cast<CUstream>(stream), params, nullptr);
      r != CUDA_SUCCESS)
    return fail("fakv_launch", r);
  return 0;
}

int fakv_launch_packed(void *kernel, unsigned gx, unsigned gy, unsigned gz,
                       unsigned threads, unsigned smem, void *stream,
                       const char *values, const uint32_t *offsets,
                       unsigned n) {
  constexpr unsigned kMaxParams = 256;
  if (n > kMaxParams)
    return fail("fakv_launch_packed: more than 256 parameters", CUDA_SUCCESS);
  void *params[kMaxParams];
  for (unsigned i = 0; i < n; ++i)
    params[i] = const_cast<char *>(values + offsets[i]);
  return fakv_launch(kernel, gx, gy, gz, threads, smem, stream, params);
}

} // extern "C"
