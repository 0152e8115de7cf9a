//===- TensorMapArguments.cpp - fakvgpu-tma-arguments -----------------------===//
//
// One tensor-map argument per cache a kernel copies with TMA, appended to its
// arguments (generic pointers; fakv-kernel-abi makes them by-value grid
// constants), the copies told which (fakvgpu.tma_param), the kernel which
// cache argument each describes and the box rows (fakvgpu.tma_args,
// fakvgpu.tma_boxes) for the host. Test: test/lowering/tma-arguments.mlir.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGPUTMAARGUMENTS
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {

/// One tensor-map argument per cache copied with TMA, appended to the
/// kernel's arguments (as generic pointers; the kernel ABI pass makes them
/// by-value grid constants). Records which argument each describes and
/// the box rows, for the host.
void addTensorMapArguments(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  SmallVector<int32_t> cacheArgs, boxRows;
  llvm::DenseMap<std::pair<unsigned, int64_t>, unsigned> param;
  func.walk([&](fakvgpu::AsyncPagedLoadOp op) {
    if (!op.usesTMA())
      return;
    unsigned cacheArg = cast<BlockArgument>(op.getCache()).getArgNumber();
    int64_t rows = fakvgpu::AsyncPagedLoadOp::tmaBoxRows(op.getRing().getType().getTile(),
                                                         op.getPageSize(), op.getTable(),
                                                         fakvgpu::AsyncPagedLoadOp::rowBoxes(op));
    auto key = std::make_pair(cacheArg, rows);
    if (!param.count(key)) {
      param[key] = func.getNumArguments();
      (void)func.insertArgument(func.getNumArguments(), ptrType(ctx, 0),
                                DictionaryAttr::get(ctx), op.getLoc());
      cacheArgs.push_back(cacheArg);
      boxRows.push_back(rows);
    }
    op->setAttr(kTmaParamAttr,
                IntegerAttr::get(IntegerType::get(ctx, 64), param[key]));
  });
  func->setAttr(kTmaArgsAttr, DenseI32ArrayAttr::get(ctx, cacheArgs));
  func->setAttr(kTmaBoxesAttr, DenseI32ArrayAttr::get(ctx, boxRows));
}

struct TensorMapArgumentsPass
    : public fakv::impl::FakvGPUTmaArgumentsBase<TensorMapArgumentsPass> {
  void runOnOperation() override {
    if (failed(forEachKernelWithLayouts(getOperation(), addTensorMapArguments)))
      signalPassFailure();
  }
};
} // namespace
