//===- CudaDriver.h - the CUDA driver, loaded at run time -------*- C++ -*-===//
//
// The entry points of libcuda.so.1 the runtime calls, looked up with dlopen
// when first needed. Nothing links against libcuda: the runtime (and so the
// installed wheel) loads on a machine without a GPU, and fails only when it
// is asked to launch.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_RUNTIME_CUDADRIVER_H
#define FAKV_RUNTIME_CUDADRIVER_H

#include <cuda.h>

#include <string>

namespace fakv::cuda {

struct Driver {
  decltype(&::cuGetErrorString) getErrorString;
  decltype(&::cuInit) init;
  decltype(&::cuCtxGetCurrent) ctxGetCurrent;
  decltype(&::cuCtxSetCurrent) ctxSetCurrent;
  decltype(&::cuDeviceGet) deviceGet;
  decltype(&::cuDeviceGetCount) deviceGetCount;
  decltype(&::cuDevicePrimaryCtxRetain) devicePrimaryCtxRetain;
  decltype(&::cuDeviceGetAttribute) deviceGetAttribute;
  decltype(&::cuModuleLoadData) moduleLoadData;
  decltype(&::cuModuleGetFunction) moduleGetFunction;
  decltype(&::cuModuleUnload) moduleUnload;
  decltype(&::cuFuncSetAttribute) funcSetAttribute;
  decltype(&::cuLaunchKernel) launchKernel;
  decltype(&::cuLaunchKernelEx) launchKernelEx; // null before CUDA 12 drivers
  decltype(&::cuTensorMapEncodeTiled) tensorMapEncodeTiled;
  decltype(&::cuMemHostAlloc) memHostAlloc;
  decltype(&::cuMemHostRegister) memHostRegister;
  decltype(&::cuStreamIsCapturing) streamIsCapturing;
  decltype(&::cuThreadExchangeStreamCaptureMode) threadExchangeStreamCaptureMode;
  decltype(&::cuLinkCreate) linkCreate;
  decltype(&::cuLinkAddData) linkAddData;
  decltype(&::cuLinkComplete) linkComplete;
  decltype(&::cuLinkDestroy) linkDestroy;
};

/// The driver, loaded and initialised once (thread-safe); null when
/// libcuda.so.1 cannot be loaded or lacks an entry point, with the reason in
/// `*why`.
const Driver *driver(std::string *why);

} // namespace fakv::cuda

#endif // FAKV_RUNTIME_CUDADRIVER_H
