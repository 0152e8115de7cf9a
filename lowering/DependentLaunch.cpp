//===- DependentLaunch.cpp - fakvgpu-dependent-launch ----------------------===//
//
// Programmatic dependent launch (Hopper): every kernel starts with
// `griddepcontrol.wait` (nothing before it touches memory: it waits until
// the grids it depends on have finished and their writes are visible) and
// then `griddepcontrol.launch_dependents` (the next kernel in the stream may
// be scheduled once every program of this one has started). A kernel
// launched after another with programmatic stream serialization then has
// its launch and setup overlap the previous kernel's tail; launched without
// it, the wait returns at once. The kernel gets `fakvgpu.dependent_launch`,
// which the launch facts carry to the runtime.
// Test: test/lowering/dependent-launch.mlir.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGPUDEPENDENTLAUNCH
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {

struct DependentLaunchPass
    : public fakv::impl::FakvGPUDependentLaunchBase<DependentLaunchPass> {
  void runOnOperation() override {
    getOperation()->walk([](gpu::GPUFuncOp func) {
      if (!func.isKernel() || func.getBody().empty() ||
          func->hasAttr(fakv::codegen::kDependentLaunchAttr))
        return;
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      // Inline PTX with a memory clobber rather than the NVVM intrinsics,
      // which LLVM models as not touching memory (loads could move above).
      for (StringRef ptx : {"griddepcontrol.wait;", "griddepcontrol.launch_dependents;"})
        LLVM::InlineAsmOp::create(b, func.getLoc(), TypeRange{}, ValueRange{},
                                  b.getStringAttr(ptx), b.getStringAttr("~{memory}"),
                                  b.getUnitAttr(), UnitAttr(), LLVM::TailCallKindAttr(),
                                  LLVM::AsmDialectAttr::get(b.getContext(),
                                                            LLVM::AsmDialect::AD_ATT),
                                  ArrayAttr());
      func->setAttr(fakv::codegen::kDependentLaunchAttr, b.getUnitAttr());
    });
  }
};

} // namespace
