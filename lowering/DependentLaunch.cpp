//===- DependentLaunch.cpp - fakvgpu-dependent-launch ----------------------===//
//
// Programmatic dependent launch (Hopper): every kernel starts with
// `griddepcontrol.wait` (nothing before it touches memory: it waits until
// the grids it depends on have finished and their writes are visible; a
// kernel with a fakv.dependency_wait waits there instead, having read the
// call's inputs before it) and then `griddepcontrol.launch_dependents` (the
// next kernel in the stream may be scheduled once every program of this
// one has started; or, with a fakv.launch_dependents, once each has passed
// it). A kernel launched after another with programmatic stream
// serialization then has its launch and setup overlap the previous
// kernel's tail; launched without it, the wait returns at once. The kernel
// gets `fakvgpu.dependent_launch`, which the launch facts carry to the
// runtime.
// Tests: test/lowering/dependent-launch.mlir, dependency-wait-to-ptx.mlir.
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
      // A kernel that waits, or lets its dependents launch, where its
      // fakv.dependency_wait / fakv.launch_dependents was gets no other.
      auto has = [&](StringRef ptx) {
        return func.walk([&](LLVM::InlineAsmOp asmOp) {
                     return asmOp.getAsmString() == ptx ? WalkResult::interrupt()
                                                        : WalkResult::advance();
                   }).wasInterrupted();
      };
      SmallVector<StringRef, 2> ptxs;
      if (!has(fakv::codegen::kGridDependencyWait))
        ptxs.push_back(fakv::codegen::kGridDependencyWait);
      if (!has(fakv::codegen::kLaunchDependents))
        ptxs.push_back(fakv::codegen::kLaunchDependents);
      OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
      for (StringRef ptx : ptxs)
        fakv::codegen::griddepcontrol(b, func.getLoc(), ptx);
      func->setAttr(fakv::codegen::kDependentLaunchAttr, b.getUnitAttr());
    });
  }
};

} // namespace
