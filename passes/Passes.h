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

} // namespace mlir::fakv

#endif // FAKV_PASSES_PASSES_H
