//===- CudaDriver.cpp - the CUDA driver, loaded at run time ---------------===//

#include "runtime/CudaDriver.h"

#include <dlfcn.h>

#include <mutex>

// cuda.h maps some names to versioned symbols (cuLinkCreate ->
// cuLinkCreate_v2): look up what the macro expands to.
#define FAKV_SYMBOL_NAME(name) FAKV_SYMBOL_NAME_(name)
#define FAKV_SYMBOL_NAME_(name) #name

namespace fakv::cuda {

namespace {

bool resolve(void *lib, Driver &d, std::string &why) {
  bool ok = true;
  auto get = [&](auto &slot, const char *name) {
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(dlsym(lib, name));
    if (!slot) {
      why = std::string("libcuda.so.1 has no ") + name;
      ok = false;
    }
  };
#define FAKV_RESOLVE(field, name) get(d.field, FAKV_SYMBOL_NAME(name))
  FAKV_RESOLVE(getErrorString, cuGetErrorString);
  FAKV_RESOLVE(init, cuInit);
  FAKV_RESOLVE(ctxGetCurrent, cuCtxGetCurrent);
  FAKV_RESOLVE(ctxSetCurrent, cuCtxSetCurrent);
  FAKV_RESOLVE(moduleLoadData, cuModuleLoadData);
  FAKV_RESOLVE(moduleGetFunction, cuModuleGetFunction);
  FAKV_RESOLVE(moduleUnload, cuModuleUnload);
  FAKV_RESOLVE(funcSetAttribute, cuFuncSetAttribute);
  FAKV_RESOLVE(launchKernel, cuLaunchKernel);
  FAKV_RESOLVE(tensorMapEncodeTiled, cuTensorMapEncodeTiled);
  FAKV_RESOLVE(memHostAlloc, cuMemHostAlloc);
  FAKV_RESOLVE(memHostRegister, cuMemHostRegister);
  FAKV_RESOLVE(deviceGet, cuDeviceGet);
  FAKV_RESOLVE(deviceGetCount, cuDeviceGetCount);
  FAKV_RESOLVE(devicePrimaryCtxRetain, cuDevicePrimaryCtxRetain);
  FAKV_RESOLVE(deviceGetAttribute, cuDeviceGetAttribute);
  FAKV_RESOLVE(streamIsCapturing, cuStreamIsCapturing);
  FAKV_RESOLVE(threadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode);
  FAKV_RESOLVE(linkCreate, cuLinkCreate);
  FAKV_RESOLVE(linkAddData, cuLinkAddData);
  FAKV_RESOLVE(linkComplete, cuLinkComplete);
  FAKV_RESOLVE(linkDestroy, cuLinkDestroy);
#undef FAKV_RESOLVE
  d.launchKernelEx = reinterpret_cast<decltype(d.launchKernelEx)>(
      dlsym(lib, FAKV_SYMBOL_NAME(cuLaunchKernelEx)));
  return ok;
}

} // namespace

const Driver *driver(std::string *why) {
  static Driver d;
  static const Driver *loaded = nullptr;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [] {
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *e = dlerror();
      failure = std::string("cannot load the CUDA driver (libcuda.so.1): ") +
                (e ? e : "not found");
      return;
    }
    if (!resolve(lib, d, failure))
      return;
    if (CUresult r = d.init(0); r != CUDA_SUCCESS) {
      const char *msg = nullptr;
      d.getErrorString(r, &msg);
      failure = std::string("cuInit failed: ") + (msg ? msg : "unknown error");
      return;
    }
    loaded = &d;
  });
  if (!loaded && why)
    *why = failure;
  return loaded;
}

} // namespace fakv::cuda
