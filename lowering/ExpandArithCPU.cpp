//===- ExpandArithCPU.cpp - arith ops the CPU path's LLVM lowering lacks --===//
//
// fakv-expand-arith-cpu (Passes.td): arith-expand-ops' bf16 and ceil/floor
// division patterns, without its maximumf / minimumf ones (a compare and a
// select: maximum(+0.0, -0.0) was -0.0); arith-to-llvm takes those.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVEXPANDARITHCPU
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {
struct FakvExpandArithCPUPass : public fakv::impl::FakvExpandArithCPUBase<FakvExpandArithCPUPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
