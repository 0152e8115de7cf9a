//===- PipelineUtils.h - shared by fakv-pipeline and fakv-warp-specialize -===//

#ifndef FAKV_PASSES_PIPELINEUTILS_H
#define FAKV_PASSES_PIPELINEUTILS_H

#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

namespace mlir::fakv {

/// Marks the scf.if ops of a pipelined loop that start copies: the
/// prologue's (before the loop) and the in-loop refill, whose block issues
/// iteration `ahead` (its condition is `ahead < upper bound`).
constexpr llvm::StringLiteral kPrologueAttr = "fakvgpu.pipeline_prologue";
constexpr llvm::StringLiteral kPrefetchAttr = "fakvgpu.pipeline_prefetch";

/// The ops of `loop`'s body that `load`'s operands are computed from
/// (program order). Fails, with a diagnostic, when they depend on anything
/// but the induction variable and values defined before the loop.
LogicalResult collectLoadSlice(scf::ForOp loop, Operation *load,
                               SmallVectorImpl<Operation *> &slice);

/// Clones `slice` with the induction variable replaced by `iv` and issues
/// the async copy of `load`'s tile into `ring[slot]`, signalling `full`.
/// Whether every row of `load`'s cache is known to start 16-byte aligned
/// (its base and its three strides).
bool alignedRows(PagedLoadOp load);

fakvgpu::AsyncPagedLoadOp issueLoad(OpBuilder &b, scf::ForOp loop,
                                    PagedLoadOp load,
                                    ArrayRef<Operation *> slice, Value iv,
                                    Value ring, Value slot, Value full);

} // namespace mlir::fakv

#endif // FAKV_PASSES_PIPELINEUTILS_H
