//===- Passes.h - fakv lowerings and pipelines ------------------*- C++ -*-===//

#ifndef FAKV_LOWERING_PASSES_H
#define FAKV_LOWERING_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
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

/// Options of the fakv-to-cubin pipeline.
struct FakvToCubinOptions : public PassPipelineOptions<FakvToCubinOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("GPU architecture"),
                           llvm::cl::init("sm_90a")};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("isa (PTX), bin (cubin, by ptxas) or fatbin"),
      llvm::cl::init("bin")};
  Option<unsigned> stages{*this, "stages",
                          llvm::cl::desc("K/V pipeline depth"),
                          llvm::cl::init(2)};
  Option<bool> warpSpecialize{
      *this, "warp-specialize",
      llvm::cl::desc("give the copies to a producer warpgroup"),
      llvm::cl::init(true)};
  Option<unsigned> producerRegisters{
      *this, "producer-registers",
      llvm::cl::desc("registers per producer thread (setmaxnreg; 0: none)"),
      llvm::cl::init(0)};
  Option<unsigned> consumerRegisters{
      *this, "consumer-registers",
      llvm::cl::desc("registers per consumer thread (setmaxnreg; 0: none)"),
      llvm::cl::init(0)};
  // LLVM's optimisation of the kernel's IR before NVPTX (ptxas optimises the
  // PTX again). O1: the decode kernel's SASS is the same instructions as at
  // O3 (1496 each, registers renamed), for a third less of LLVM's time
  // (docs/pipeline.md).
  Option<unsigned> llvmOptLevel{
      *this, "llvm-opt-level",
      llvm::cl::desc("LLVM IR optimisation level before NVPTX (0-3)"),
      llvm::cl::init(1)};
};

/// The options no pass checks itself (format, chip, LLVM level): an error
/// through `error` for a bad one.
LogicalResult checkFakvToCubinOptions(const FakvToCubinOptions &o,
                                      llvm::function_ref<LogicalResult(const llvm::Twine &)> error);

/// fakv IR -> tiles with layouts, pipelined and warp-specialized
/// (fakv-to-fakvgpu).
void buildFakvToFakvGPUPipeline(OpPassManager &pm, const FakvToCubinOptions &o);
/// fakvgpu IR -> a gpu.module of LLVM/NVVM with its target attached
/// (fakvgpu-to-llvm).
void buildFakvGPUToLLVMPipeline(OpPassManager &pm, const FakvToCubinOptions &o);
/// The whole way to a gpu.binary (fakv-to-cubin).
void buildFakvToCubinPipeline(OpPassManager &pm, const FakvToCubinOptions &o);

/// Registers the lowering passes and the named pipelines.
void registerFakvLoweringPipelines();

} // namespace mlir::fakv

#endif // FAKV_LOWERING_PASSES_H
