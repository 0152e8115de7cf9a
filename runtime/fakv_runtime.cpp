//===- fakv_runtime.cpp - launching fakv kernels through the CUDA driver --===//

#include "runtime/fakv_runtime.h"

#include "runtime/CudaDriver.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

namespace {
thread_local std::string lastError;

int fail(const std::string &what, CUresult r = CUDA_SUCCESS) {
  lastError = what;
  if (r != CUDA_SUCCESS) {
    const char *msg = nullptr;
    if (const fakv::cuda::Driver *d = fakv::cuda::driver(nullptr))
      d->getErrorString(r, &msg);
    lastError += std::string(": ") + (msg ? msg : "unknown CUDA error");
  }
  return 1;
}

/// The driver, or a failure naming `what` (no libcuda.so.1, cuInit failed).
const fakv::cuda::Driver *cuda(const char *what) {
  std::string why;
  const fakv::cuda::Driver *d = fakv::cuda::driver(&why);
  if (!d)
    fail(std::string(what) + ": " + why);
  return d;
}

/// The calling thread in relaxed stream-capture mode while it lives: a
/// module load or a page pinned (a first call's work, in this thread or a
/// helper thread) is an "unsafe" call that invalidated a CUDA graph being
/// captured in the default global mode, though it touches no stream
/// (session 40: torch.cuda.graph around a first call).
class RelaxedCapture {
public:
  explicit RelaxedCapture(const fakv::cuda::Driver *d) : d(d) {
    ok = d->threadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS;
  }
  ~RelaxedCapture() {
    if (ok)
      d->threadExchangeStreamCaptureMode(&mode);
  }
  RelaxedCapture(const RelaxedCapture &) = delete;
  RelaxedCapture &operator=(const RelaxedCapture &) = delete;

private:
  const fakv::cuda::Driver *d;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  bool ok = false;
};

std::mutex smemMutex;
/// Kernels whose dynamic shared-memory limit was raised, and to what.
std::map<CUfunction, unsigned> smemLimit;
} // namespace

extern "C" {

const char *fakv_last_error(void) { return lastError.c_str(); }

int fakv_current_context(void **context) {
  auto *d = cuda("fakv_current_context");
  if (!d)
    return 1;
  CUcontext ctx = nullptr;
  if (CUresult r = d->ctxGetCurrent(&ctx); r != CUDA_SUCCESS)
    return fail("fakv_current_context", r);
  *context = ctx;
  return 0;
}

int fakv_set_current_context(void *context) {
  auto *d = cuda("fakv_set_current_context");
  if (!d)
    return 1;
  if (CUresult r = d->ctxSetCurrent(static_cast<CUcontext>(context)); r != CUDA_SUCCESS)
    return fail("fakv_set_current_context", r);
  return 0;
}

int fakv_bind_primary_context(int ordinal) {
  auto *d = cuda("fakv_bind_primary_context");
  if (!d)
    return 1;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  if (CUresult r = d->deviceGet(&dev, ordinal); r != CUDA_SUCCESS)
    return fail("fakv_bind_primary_context", r);
  // (retained once a device, for the process's life, as the runtime's own retain is: not a
  // retain a call, which only grows the count)
  static std::mutex lock;
  static std::map<CUdevice, CUcontext> retained;
  {
    std::lock_guard<std::mutex> guard(lock);
    auto it = retained.find(dev);
    if (it != retained.end()) {
      ctx = it->second;
    } else {
      if (CUresult r = d->devicePrimaryCtxRetain(&ctx, dev); r != CUDA_SUCCESS)
        return fail("fakv_bind_primary_context", r);
      retained[dev] = ctx;
    }
  }
  if (CUresult r = d->ctxSetCurrent(ctx); r != CUDA_SUCCESS)
    return fail("fakv_bind_primary_context", r);
  return 0;
}

int fakv_device_properties(int ordinal, int *sms, int *l2Bytes, int *memoryGbps) {
  auto *d = cuda("fakv_device_properties");
  if (!d)
    return 1;
  CUdevice dev = 0;
  if (CUresult r = d->deviceGet(&dev, ordinal); r != CUDA_SUCCESS)
    return fail("fakv_device_properties: cuDeviceGet", r);
  if (CUresult r = d->deviceGetAttribute(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev); r != CUDA_SUCCESS)
    return fail("fakv_device_properties: SM count", r);
  if (CUresult r = d->deviceGetAttribute(l2Bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev); r != CUDA_SUCCESS)
    return fail("fakv_device_properties: L2 size", r);
  // The memory's peak bandwidth: a double data rate clock (kHz) times the bus's bytes (0 where the driver
  // does not say).
  int kHz = 0, bits = 0;
  if (d->deviceGetAttribute(&kHz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, dev) != CUDA_SUCCESS ||
      d->deviceGetAttribute(&bits, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, dev) != CUDA_SUCCESS)
    kHz = bits = 0;
  *memoryGbps = static_cast<int>(2.0 * kHz * 1e3 * (bits / 8) / 1e9);
  return 0;
}

int fakv_stream_capturing(void *stream, int *capturing) {
  auto *d = cuda("fakv_stream_capturing");
  if (!d)
    return 1;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (CUresult r = d->streamIsCapturing(static_cast<CUstream>(stream), &status); r != CUDA_SUCCESS)
    return fail("fakv_stream_capturing", r);
  *capturing = status != CU_STREAM_CAPTURE_STATUS_NONE;
  return 0;
}

int fakv_exchange_capture_mode(int *mode) {
  auto *d = cuda("fakv_exchange_capture_mode");
  if (!d)
    return 1;
  if (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      *mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return fail("fakv_exchange_capture_mode: mode " + std::to_string(*mode) + " is none of CUDA's",
                CUDA_ERROR_INVALID_VALUE);
  auto m = static_cast<CUstreamCaptureMode>(*mode);
  if (CUresult r = d->threadExchangeStreamCaptureMode(&m); r != CUDA_SUCCESS)
    return fail("fakv_exchange_capture_mode", r);
  *mode = static_cast<int>(m);
  return 0;
}

int fakv_load_module_data(const void *image, void **module) {
  auto *d = cuda("fakv_load_module_data");
  if (!d)
    return 1;
  CUcontext ctx = nullptr;
  if (CUresult r = d->ctxGetCurrent(&ctx); r != CUDA_SUCCESS || !ctx)
    return fail("fakv_load_module_data: no current CUDA context", r);
  CUmodule m;
  RelaxedCapture relaxed(d);
  if (CUresult r = d->moduleLoadData(&m, image); r != CUDA_SUCCESS)
    return fail("fakv_load_module_data: cannot load the cubin", r);
  *module = m;
  return 0;
}

int fakv_get_kernel(void *module, const char *name, void **kernel) {
  auto *d = cuda("fakv_get_kernel");
  if (!d)
    return 1;
  CUfunction f;
  RelaxedCapture relaxed(d); // (with lazy loading, the function's code is loaded here)
  if (CUresult r = d->moduleGetFunction(&f, static_cast<CUmodule>(module), name);
      r != CUDA_SUCCESS)
    return fail(std::string("fakv_get_kernel: no kernel ") + name, r);
  *kernel = f;
  return 0;
}

int fakv_unload_module(void *module) {
  auto *d = cuda("fakv_unload_module");
  if (!d)
    return 1;
  if (CUresult r = d->moduleUnload(static_cast<CUmodule>(module)); r != CUDA_SUCCESS)
    return fail("fakv_unload_module", r);
  return 0;
}

int fakv_encode_kv_tensormap(void *out128, const void *base,
                             const uint64_t dims[4], const uint64_t strides[4],
                             uint32_t box_rows) {
  auto *d = cuda("fakv_encode_kv_tensormap");
  if (!d)
    return 1;
  if (strides[3] != 1)
    return fail("fakv_encode_kv_tensormap: the channel dimension must be contiguous");
  // TMA lists dimensions innermost first, strides in bytes (dims 1..3).
  cuuint64_t globalDim[4] = {dims[3], dims[2], dims[1], dims[0]};
  cuuint64_t globalStrides[3] = {strides[2] * 2, strides[1] * 2, strides[0] * 2};
  cuuint32_t box[4] = {64, 1, box_rows, 1};
  cuuint32_t elementStrides[4] = {1, 1, 1, 1};
  CUresult r = d->tensorMapEncodeTiled(
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
                unsigned threads, unsigned smem, void *stream, void **params, int programmatic) {
  auto *d = cuda("fakv_launch");
  if (!d)
    return 1;
  auto f = static_cast<CUfunction>(kernel);
  if (smem > 48 * 1024) {
    std::lock_guard<std::mutex> lock(smemMutex);
    unsigned &limit = smemLimit[f];
    if (limit < smem) {
      RelaxedCapture relaxed(d);
      if (CUresult r = d->funcSetAttribute(
              f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
          r != CUDA_SUCCESS)
        return fail("fakv_launch: cannot raise the shared-memory limit", r);
      limit = smem;
    }
  }
  if (programmatic && d->launchKernelEx) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = gx;
    config.gridDimY = gy;
    config.gridDimZ = gz;
    config.blockDimX = threads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = smem;
    config.hStream = static_cast<CUstream>(stream);
    config.attrs = &attr;
    config.numAttrs = 1;
    if (CUresult r = d->launchKernelEx(&config, f, params, nullptr); r != CUDA_SUCCESS)
      return fail("fakv_launch", r);
    return 0;
  }
  if (CUresult r = d->launchKernel(f, gx, gy, gz, threads, 1, 1, smem,
                                   static_cast<CUstream>(stream), params, nullptr);
      r != CUDA_SUCCESS)
    return fail("fakv_launch", r);
  return 0;
}

int fakv_host_mapped(size_t bytes, void *context, void **host) {
  auto *d = cuda("fakv_host_mapped");
  if (!d)
    return 1;
  if (context)
    if (CUresult r = d->ctxSetCurrent(static_cast<CUcontext>(context)); r != CUDA_SUCCESS)
      return fail("fakv_host_mapped: cuCtxSetCurrent", r);
  RelaxedCapture relaxed(d);
  // Registering one page of our own pins less than cuMemHostAlloc sets up
  // (a millisecond on the H200, at a process's first call); the latter is
  // the fallback.
  // Kernels write to the host address: registered memory has it on the devices too only where every
  // device can use host pointers for registered memory (cuMemHostAlloc's has, with unified addressing).
  int devices = 0;
  bool samePointer = d->deviceGetCount(&devices) == CUDA_SUCCESS && devices > 0;
  for (int i = 0; samePointer && i < devices; ++i) {
    CUdevice dev = 0;
    int can = 0;
    samePointer = d->deviceGet(&dev, i) == CUDA_SUCCESS &&
                  d->deviceGetAttribute(&can, CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                                        dev) == CUDA_SUCCESS &&
                  can;
  }
  size_t page = 4096, size = (bytes + page - 1) / page * page;
  void *p = samePointer ? std::aligned_alloc(page, size) : nullptr;
  if (p) {
    std::memset(p, 0, size);
    if (d->memHostRegister(p, size, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP) ==
        CUDA_SUCCESS) {
      *host = p;
      return 0;
    }
    std::free(p);
  }
  if (CUresult r = d->memHostAlloc(
          &p, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
      r != CUDA_SUCCESS)
    return fail("fakv_host_mapped: cuMemHostAlloc", r);
  std::memset(p, 0, bytes);
  *host = p;
  return 0;
}

int fakv_link_ptx(const char *ptx, size_t size, void **cubin, size_t *cubinSize) {
  auto *d = cuda("fakv_link_ptx");
  if (!d)
    return 1;
  char log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                            CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(sizeof(log) - 1)};
  CUlinkState state;
  RelaxedCapture relaxed(d);
  if (CUresult r = d->linkCreate(2, options, values, &state); r != CUDA_SUCCESS)
    return fail("fakv_link_ptx: cuLinkCreate", r);
  CUresult r = d->linkAddData(state, CU_JIT_INPUT_PTX, const_cast<char *>(ptx),
                              size, "fakv.ptx", 0, nullptr, nullptr);
  void *image = nullptr;
  size_t imageSize = 0;
  if (r == CUDA_SUCCESS)
    r = d->linkComplete(state, &image, &imageSize);
  void *copy = r == CUDA_SUCCESS ? std::malloc(imageSize ? imageSize : 1) : nullptr;
  if (copy) {
    std::memcpy(copy, image, imageSize);
    *cubin = copy;
    *cubinSize = imageSize;
  }
  d->linkDestroy(state);
  if (r == CUDA_SUCCESS && !copy)
    return fail("fakv_link_ptx: out of memory", CUDA_ERROR_OUT_OF_MEMORY);
  if (r != CUDA_SUCCESS)
    return fail(std::string("fakv_link_ptx: the driver's PTX JIT failed: ") + log, r);
  return 0;
}

} // extern "C"
