//===- FakvGPUToNVVM.cpp - fakv/fakvgpu kernels to NVVM -------------------===//
//
// convert-fakvgpu-to-nvvm: tiles become per-thread values (a tile in a
// #fakvgpu.linear layout is the vector of the elements its thread holds, in
// register order; a shared tile its shared-memory address) and each op the
// per-thread code for its layouts, by the pattern sets of TileOpsToNVVM.cpp,
// MemoryToNVVM.cpp, AsyncCopyToNVVM.cpp, DotToNVVM.cpp and the pointer
// patterns. Kernels must be prepared (fakvgpu-lower-warp-specialize,
// fakvgpu-plan-shared-memory, fakvgpu-tma-arguments, fakvgpu-mark-aligned)
// and are outlined after (fakvgpu-outline-kernels): the pipeline
// fakvgpu-to-llvm runs them in that order. Host functions are dropped.
// Test: test/lowering/fakvgpu-to-nvvm.mlir.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"
#include "lowering/PointerLowering.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/Transforms/Patterns.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_CONVERTFAKVGPUTONVVM
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {
struct ConvertFakvGPUToNVVMPass
    : public fakv::impl::ConvertFakvGPUToNVVMBase<ConvertFakvGPUToNVVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    if (failed(checkNestedKernels(module)))
      return signalPassFailure();
    SmallVector<func::FuncOp> kernels;
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!isKernel(func)) {
        func.erase(); // host code has no place in the device module
        continue;
      }
      if (!func->hasAttr(fakvgpu::kNumWarpsAttr)) {
        func.emitError() << "has no layouts yet: run fakv-assign-layouts first";
        return signalPassFailure();
      }
      if (func.getName() == kSmemSymbol) {
        func.emitOpError() << "is named like the kernels' shared memory (@" << kSmemSymbol
                           << "); rename it";
        return signalPassFailure();
      }
      kernels.push_back(func);
    }
    // What the preparing passes leave (fakvgpu-to-llvm runs them first).
    for (func::FuncOp func : kernels) {
      const char *missing = nullptr;
      if (func.walk([](fakvgpu::WarpSpecializeOp) { return WalkResult::interrupt(); })
              .wasInterrupted())
        missing = "fakvgpu-lower-warp-specialize";
      else if (!func->hasAttr(kSmemBytesAttr))
        missing = "fakvgpu-plan-shared-memory";
      else if (!func->hasAttr(kTmaArgsAttr))
        missing = "fakvgpu-tma-arguments";
      if (missing) {
        func.emitError() << "is not prepared for the conversion: run " << missing << " first";
        return signalPassFailure();
      }
      if (failed(checkTiles(func)))
        return signalPassFailure();
    }
    // fakv ops anywhere but in those kernels (a nested module, an llvm.func or gpu.func, the module's body)
    // had no layouts checked, and their patterns read a null layout (a crash found by a fuzz, session 54).
    // (The module's own func.funcs are its kernels now: the others were erased above.)
    WalkResult stray = module.walk([&](Operation *op) {
      if (!isa_and_present<FakvDialect, fakvgpu::FakvGPUDialect>(op->getDialect()))
        return WalkResult::advance();
      auto func = op->getParentOfType<func::FuncOp>();
      if (func && func->getParentOp() == module.getOperation())
        return WalkResult::advance();
      op->emitOpError() << "is outside the module's kernels (top-level func.func with fakv.kernel): "
                           "fakv ops are lowered only there";
      return WalkResult::interrupt();
    });
    if (stray.wasInterrupted())
      return signalPassFailure();
    // A module without a kernel (it came out as an empty gpu.binary, exit 0, its host
    // functions gone: fakv-compile said "holds no kernel", fakv-opt nothing).
    if (kernels.empty() && !module.lookupSymbol<gpu::GPUModuleOp>(kKernelsModule)) {
      module.emitError() << "holds no kernel (no func.func with the fakv.kernel attribute): "
                            "nothing to compile for the GPU";
      return signalPassFailure();
    }

    TypeConverter converter;
    converter.addConversion([](Type t) { return t; });
    converter.addConversion([ctx](PtrType) { return ptrType(ctx, 1); });
    converter.addConversion([ctx](fakvgpu::RingType) { return ptrType(ctx, 3); });
    converter.addConversion([ctx](fakvgpu::BarriersType) { return ptrType(ctx, 3); });
    converter.addConversion([ctx](RankedTensorType t) -> std::optional<Type> {
      if (isa_and_present<fakvgpu::SharedAttr>(t.getEncoding()))
        return ptrType(ctx, 3);
      if (auto l = dyn_cast_if_present<fakvgpu::LinearAttr>(t.getEncoding()))
        return VectorType::get({LinearLayout::fromAttr(l).numRegs()},
                               t.getElementType());
      return std::nullopt;
    });

    ConversionTarget target(*ctx);
    target.addIllegalDialect<FakvDialect, fakvgpu::FakvGPUDialect>();
    // (no lowering after this pass takes them: MathIntrinsicLowering)
    target.addIllegalOp<math::CountLeadingZerosOp, math::CountTrailingZerosOp, math::CtPopOp,
                        math::TruncOp, math::AbsIOp>();
    target.addLegalDialect<LLVM::LLVMDialect, NVVM::NVVMDialect,
                           gpu::GPUDialect, vector::VectorDialect>();
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return converter.isLegal(op); });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp f) {
      return converter.isSignatureLegal(f.getFunctionType()) &&
             converter.isLegal(&f.getBody());
    });

    RewritePatternSet patterns(ctx);
    populateTileOpsToNVVMPatterns(converter, patterns);
    populateMemoryToNVVMPatterns(converter, patterns);
    populateAsyncCopyToNVVMPatterns(converter, patterns);
    populatePointerLoweringPatterns(converter, patterns);
    populateDotToNVVMPatterns(converter, patterns);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    scf::populateSCFStructuralTypeConversions(converter, patterns);
    // Converted kernels are no fakv kernels any more (their arguments are
    // LLVM pointers): their fakv attributes go (the divisibility facts were
    // used by fakvgpu-mark-aligned), the shared-memory symbol they address
    // is declared (fakvgpu-outline-kernels moves it into the gpu.module).
    for (func::FuncOp func : kernels) {
      func->removeAttr(FakvDialect::getKernelAttrName());
      // (a request of fakv-pack-gqa, which did not run: each query head in its own program, as written; the
      // attribute left on a function no longer a kernel failed the verifier)
      func->removeAttr(FakvDialect::getPackGQAAttrName());
      func->setAttr(kConvertedKernelAttr, UnitAttr::get(ctx));
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.removeArgAttr(i, FakvDialect::getDivisibilityAttrName());
    }
    if (!kernels.empty() && !module.lookupSymbol(kSmemSymbol)) {
      OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
      LLVM::GlobalOp::create(b, module.getLoc(),
                             LLVM::LLVMArrayType::get(IntegerType::get(ctx, 8), 0),
                             /*isConstant=*/false, LLVM::Linkage::External, kSmemSymbol,
                             Attribute(), /*alignment=*/1024, /*addrSpace=*/3);
    }
    // A pattern that refuses an op says why; the driver's own "failed to
    // legalize" for that op (at its location) after it is noise (it read as
    // a second error). Other ops' are kept.
    llvm::DenseSet<Location> explained;
    ScopedDiagnosticHandler quiet(ctx, [&](Diagnostic &d) -> LogicalResult {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      if (StringRef(d.str()).starts_with("failed to legalize operation"))
        return success(explained.contains(d.getLocation()));   // (success: dropped)
      explained.insert(d.getLocation());
      return failure();                      // (on to the other handlers)
    });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
  }
};
} // namespace
