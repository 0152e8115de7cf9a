//===- Passes.h - fakv lowerings and pipelines ------------------*- C++ -*-===//

#ifndef FAKV_LOWERING_PASSES_H
#define FAKV_LOWERING_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir::fakv {

#define GEN_PASS_DECL
#include "lowering/Passes.h.inc"

/// fakv IR -> LLVM dialect that `mlir-runner` (or an ExecutionEngine) runs on
/// the host: convert-fakv-to-cpu, then upstream bufferization and lowering.
void buildFakvToLLVMCPUPipeline(OpPassManager &pm);

#define GEN_PASS_REGISTRATION
#include "lowering/Passes.h.inc"

/// Registers the lowering passes and the named pipelines.
void registerFakvLoweringPipelines();

} // namespace mlir::fakv

#endif // FAKV_LOWERING_PASSES_H
