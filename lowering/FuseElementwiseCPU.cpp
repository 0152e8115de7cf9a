//===- FuseElementwiseCPU.cpp - elementwise chains fused for the CPU path ---===//
//
// fakv-fuse-elementwise-cpu (Passes.td): linalg's elementwise fusion, only
// where nothing is computed more often than before: a producer with one use,
// in its consumer's block (not sunk into a loop), read through a permutation
// (not broadcast: an exp of 4 elements broadcast to 4 x 8 would run 32 times).
// One-shot bufferization's time grew with the cube of a kernel's tile ops.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVFUSEELEMENTWISECPU
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {
/// Whether fusing the producer of `use` into its consumer computes each of
/// the producer's elements once, as before.
bool fusesOnce(OpOperand *use) {
  Operation *producer = use->get().getDefiningOp();
  auto consumer = dyn_cast<linalg::GenericOp>(use->getOwner());
  if (!producer || !consumer || !producer->hasOneUse() ||
      producer->getBlock() != consumer->getBlock())
    return false;
  return consumer.getMatchingIndexingMap(use).isPermutation();
}

struct FuseElementwiseCPU
    : fakv::impl::FakvFuseElementwiseCPUBase<FuseElementwiseCPU> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusesOnce);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
