//===- KernelABI.cpp - tensor maps as by-value kernel parameters ----------===//
//
// convert-gpu-to-nvvm drops argument attributes it does not know, so the
// lowering marks kernels with `fakvgpu.tma_args` and this pass, run after
// it, puts the by-value/grid-constant attributes on the llvm.func
// arguments (pitfall 4 of ../shared/design/toolchain.md); and turns
// `fakvgpu.max_registers` into `nvvm.maxnreg`, `fakvgpu.cluster_size` into
// `nvvm.cluster_dim`.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVKERNELABI
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {
struct FakvKernelABIPass
    : public fakv::impl::FakvKernelABIBase<FakvKernelABIPass> {
  void runOnOperation() override {
    WalkResult r = getOperation().walk([](LLVM::LLVMFuncOp f) {
      // Roles that rebalance registers: compile for the average (.maxnreg).
      if (auto regs = f->getAttrOfType<IntegerAttr>(fakv::codegen::kMaxRegistersAttr))
        f->setAttr(NVVM::NVVMDialect::getMaxnregAttrName(), regs);
      // Clusters of programs on grid axis 2 (fakv.cluster_gather): .reqnctapercluster.
      if (auto size = f->getAttrOfType<IntegerAttr>(fakv::codegen::kClusterSizeAttr))
        f->setAttr(NVVM::NVVMDialect::getClusterDimAttrName(),
                   DenseI32ArrayAttr::get(f.getContext(), {1, 1, int32_t(size.getInt())}));
      auto tma = f->getAttrOfType<DenseI32ArrayAttr>(fakv::codegen::kTmaArgsAttr);
      if (!tma)
        return WalkResult::advance();
      // (grid constants are a kernel's parameters: on another function the verifier refused them once NVVM
      // was loaded, and the pass's output did not parse)
      if (!f->hasAttr(NVVM::NVVMDialect::getKernelFuncAttrName())) {
        f.emitOpError() << "has '" << fakv::codegen::kTmaArgsAttr << "' but is not a kernel ('"
                        << NVVM::NVVMDialect::getKernelFuncAttrName() << "'): tensor maps are kernel parameters";
        return WalkResult::interrupt();
      }
      MLIRContext *ctx = f.getContext();
      Builder b(ctx);
      auto arr = LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), 128);
      // The tensor maps are the last arguments (the dialect's verifier keeps tma_args within them), by value:
      // a hand-written function whose last ones are not pointers got attributes the verifier then refused.
      unsigned n = f.getNumArguments(), first = n - std::min<unsigned>(n, tma.size());
      for (unsigned i = first; i < n; ++i)
        if (!isa<LLVM::LLVMPointerType>(f.getArgumentTypes()[i])) {
          f.emitOpError() << "'" << fakv::codegen::kTmaArgsAttr << "' names " << tma.size()
                          << " tensor maps, the last arguments, which must be !llvm.ptr: argument #" << i
                          << " is " << f.getArgumentTypes()[i];
          return WalkResult::interrupt();
        }
      for (unsigned i = first; i < n; ++i) {
        f.setArgAttr(i, LLVM::LLVMDialect::getByValAttrName(), TypeAttr::get(arr));
        f.setArgAttr(i, LLVM::LLVMDialect::getAlignAttrName(),
                     b.getI64IntegerAttr(64));
        f.setArgAttr(i, NVVM::NVVMDialect::getGridConstantAttrName(),
                     b.getUnitAttr());
      }
      return WalkResult::advance();
    });
    if (r.wasInterrupted())
      signalPassFailure();
  }
};
} // namespace
