//===- Passes.h - fakv tile-level passes ------------------------*- C++ -*-===//

#ifndef FAKV_PASSES_PASSES_H
#define FAKV_PASSES_PASSES_H

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fakv {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// fakv-decompose's rewrites of the composite ops (online_softmax,
/// lse_combine, the masks, softcap, alibi) into tile primitives; the CPU
/// lowering applies them too, so that both paths run one implementation.
void populateFakvDecomposePatterns(RewritePatternSet &patterns, bool useExp2);
/// Whether fakv-decompose rewrites `op` (online softmax, LSE combine, masks, softcap, ALiBi).
bool isDecomposable(Operation *op);
/// Every arith.fptosi under `root` as docs/frontend.md defines it: toward 0,
/// out-of-range values saturating, NaN 0 (LLVM's fptosi is poison there; x86
/// gave INT_MIN, the GPU's cvt.rzi.s64 INT64_MIN). fakv-decompose and the CPU
/// lowering apply it; the result's fptosi is marked and not rewritten again.
void saturateFloatToInt(Operation *root);

} // namespace mlir::fakv

#endif // FAKV_PASSES_PASSES_H
