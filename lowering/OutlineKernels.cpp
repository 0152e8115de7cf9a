//===- OutlineKernels.cpp - fakvgpu-outline-kernels -------------------------===//
//
// After convert-fakvgpu-to-nvvm: the kernels (func.func) move into
// `gpu.module @fakv_kernels` as gpu.func, with the dynamic shared memory
// symbol and what a launch needs as attributes (block size, shared bytes,
// tensor-map arguments and boxes, registers, grid packing).
// Test: test/lowering/outline-kernels.mlir.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGPUOUTLINEKERNELS
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {


/// func.func kernels -> gpu.func in gpu.module @fakv_kernels, with the
/// dynamic shared memory symbol and the launch facts as attributes.
/// (One there already, from an earlier run, is added to: a second one was a
/// redefinition of the symbol.)
void outlineKernels(ModuleOp module, ArrayRef<func::FuncOp> kernels) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = module.lookupSymbol<gpu::GPUModuleOp>(kKernelsModule);
  if (!gpuModule)
    gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), kKernelsModule);
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(ctx));
  b.setInsertionPointToStart(gpuModule.getBody());
  // The shared-memory symbol the converted kernels address moves in.
  if (auto smem = module.lookupSymbol<LLVM::GlobalOp>(kSmemSymbol))
    smem->moveBefore(gpuModule.getBody(), gpuModule.getBody()->begin());
  for (func::FuncOp func : kernels) {
    b.setInsertionPointToEnd(gpuModule.getBody());
    auto gpuFunc = gpu::GPUFuncOp::create(b, func.getLoc(), func.getName(),
                                          func.getFunctionType());
    gpuFunc->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
    int64_t threads =
        func->getAttrOfType<IntegerAttr>(fakvgpu::kNumWarpsAttr).getInt() * 32;
    gpuFunc.setKnownBlockSizeAttr(
        DenseI32ArrayAttr::get(ctx, {int32_t(threads), 1, 1}));
    for (StringRef name : {kSmemBytesAttr, kTmaArgsAttr, kTmaBoxesAttr})
      gpuFunc->setAttr(name, func->getAttr(name));
    for (StringRef name : {kMaxRegistersAttr, kClusterSizeAttr})
      if (Attribute attr = func->getAttr(name))
        gpuFunc->setAttr(name, attr);
    gpuFunc->setAttr(fakvgpu::kNumWarpsAttr, func->getAttr(fakvgpu::kNumWarpsAttr));
    if (Attribute packing = func->getAttr(fakv::FakvDialect::getGridPackingAttrName()))
      gpuFunc->setAttr(fakv::FakvDialect::getGridPackingAttrName(), packing);
    gpuFunc.getBody().front().erase();
    gpuFunc.getBody().takeBody(func.getBody());
    gpuFunc.walk([&](func::ReturnOp ret) {
      OpBuilder rb(ret);
      gpu::ReturnOp::create(rb, ret.getLoc());
      ret.erase();
    });
    func.erase();
  }
}

struct OutlineKernelsPass
    : public fakv::impl::FakvGPUOutlineKernelsBase<OutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (Operation *taken = module.lookupSymbol(kKernelsModule); taken && !isa<gpu::GPUModuleOp>(taken)) {
      taken->emitOpError() << "is named like the GPU kernels' module (@" << kKernelsModule << "); rename it";
      return signalPassFailure();
    }
    SmallVector<func::FuncOp> kernels;
    for (auto func : module.getOps<func::FuncOp>())
      if (func->hasAttr(kConvertedKernelAttr)) {
        // (what convert-fakvgpu-to-nvvm leaves on a kernel it converted: the launch facts)
        for (StringRef name : {StringRef(fakvgpu::kNumWarpsAttr), StringRef(kSmemBytesAttr),
                               StringRef(kTmaArgsAttr), StringRef(kTmaBoxesAttr)})
          if (!func->hasAttr(name)) {
            func.emitError() << "is marked converted but has no '" << name
                             << "': run convert-fakvgpu-to-nvvm first";
            return signalPassFailure();
          }
        kernels.push_back(func);
      }
    outlineKernels(module, kernels);    // (an empty gpu.module without kernels)
  }
};
} // namespace
