//===- Pipelines.cpp - named pass pipelines out of fakv -------------------===//
//
// Each pipeline is also registered under its name, so that fakv-opt can run
// it and every stage can be printed (docs/pipeline.md).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "passes/Passes.h"

using namespace mlir;

void fakv::buildFakvToLLVMCPUPipeline(OpPassManager &pm) {
  pm.addPass(createFakvPackGQA());
  pm.addPass(createConvertFakvToCPU());
  pm.addPass(createFakvGuardCPUMemory());    // (no access outside the launch's arrays: a fault)
  pm.addPass(createFakvGuardCPUDivision());  // (before anything folds a division away)
  pm.addPass(createCanonicalizerPass());
  // Tiles: arith/math on tensors -> linalg, then one-shot bufferization with
  // ownership-based deallocation (loops over KV tiles would otherwise leak).
  pm.addPass(createConvertElementwiseToLinalgPass());
  // Chains of elementwise ops fused (where nothing is computed more often):
  // one-shot bufferization's time grew with the cube of the tile ops.
  pm.addPass(createFakvFuseElementwiseCPU());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertLinalgToLoopsPass());
  // Down to LLVM. bf16 conversions are expanded to integer ops so that no
  // compiler-runtime helper is needed at run time.
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFakvExpandArithCPU());
  pm.addPass(createFakvGuardCPUDivision());   // (no SIGFPE: a fault the host reads; lowering's divisions)
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void fakv::buildFakvToFakvGPUPipeline(OpPassManager &pm,
                                      const FakvToCubinOptions &o) {
  pm.addPass(createFakvPackGQA());
  pm.addPass(createFakvDecompose());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createFakvAssignLayouts());
  // Loop-invariant tiles (Q written to shared memory) leave the KV loop.
  pm.addPass(createLoopInvariantCodeMotionPass());
  FakvPipelineOptions pipeline;
  pipeline.stages = o.stages;
  pm.addPass(createFakvPipeline(pipeline));
  if (o.warpSpecialize) {
    FakvWarpSpecializeOptions ws;
    ws.producerRegisters = o.producerRegisters;
    ws.consumerRegisters = o.consumerRegisters;
    pm.addPass(createFakvWarpSpecialize(ws));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void fakv::buildFakvGPUToLLVMPipeline(OpPassManager &pm,
                                      const FakvToCubinOptions &o) {
  pm.addPass(createFakvGPULowerWarpSpecialize());
  pm.addPass(createFakvGPUPlanSharedMemory());
  pm.addPass(createFakvGPUTmaArguments());
  pm.addPass(createFakvGPUMarkAligned());
  pm.addPass(createConvertFakvGPUToNVVM());
  pm.addPass(createFakvGPUOutlineKernels());
  pm.addPass(createFakvGPUDependentLaunch());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = o.chip;
  target.features = "+ptx80";
  target.optLevel = o.llvmOptLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &gpuPm = pm.nest<gpu::GPUModuleOp>();
  gpuPm.addPass(createConvertVectorToLLVMPass());
  gpuPm.addPass(createConvertGpuOpsToNVVMOps());
  gpuPm.addPass(createCanonicalizerPass());
  gpuPm.addPass(createCSEPass());
  gpuPm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createFakvKernelABI());
}

void fakv::buildFakvToCubinPipeline(OpPassManager &pm,
                                    const FakvToCubinOptions &o) {
  buildFakvToFakvGPUPipeline(pm, o);
  buildFakvGPUToLLVMPipeline(pm, o);
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = o.format;
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

using fakv::FakvToCubinOptions;

/// fakv-to-cubin's options that no pass checks itself (the passes check
/// stages and the register counts): a bad one is an error, not a warning
/// that leaves the exit status 0 (fakv-compile checks its flags here too).
LogicalResult fakv::checkFakvToCubinOptions(const FakvToCubinOptions &o,
                                            function_ref<LogicalResult(const Twine &)> error) {
  static const char *formats[] = {"isa", "bin", "fatbin", "assembly", "binary", "fatbinary"};
  if (llvm::none_of(formats, [&](const char *f) { return o.format == f; }))
    return error("fakv-to-cubin: format must be isa (PTX), bin (cubin) or fatbin, got '" +
                 o.format + "'");
  if (o.chip != "sm_90a")
    return error("fakv-to-cubin: chip must be sm_90a (the kernels use wgmma and TMA), got '" +
                 o.chip + "'");
  if (o.llvmOptLevel > 3)
    return error("fakv-to-cubin: llvm-opt-level must be 0-3, got " + Twine(o.llvmOptLevel));
  return success();
}

namespace {
/// A pipeline taking FakvToCubinOptions, checked before it is built.
void registerCubinPipeline(StringRef arg, StringRef description,
                           void (*build)(OpPassManager &, const FakvToCubinOptions &)) {
  registerPassPipeline(
      arg, description,
      [build](OpPassManager &pm, StringRef text,
              function_ref<LogicalResult(const Twine &)> error) {
        FakvToCubinOptions o;
        if (failed(o.parseFromString(text)) || failed(fakv::checkFakvToCubinOptions(o, error)))
          return failure();
        build(pm, o);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> handler) {
        handler(FakvToCubinOptions());
      });
}
} // namespace

void fakv::registerFakvLoweringPipelines() {
  registerFakvLoweringPasses();
  // (PassPipelineRegistration<> failed on an option given to it with no
  // message at all: --fakv-to-llvm-cpu=stages=3 exited 1, silently)
  registerPassPipeline(
      "fakv-to-llvm-cpu",
      "Lower fakv IR to the LLVM dialect for the host (mlir-runner, "
      "ExecutionEngine): the CPU reference path",
      [](OpPassManager &pm, StringRef text, function_ref<LogicalResult(const Twine &)> error) {
        if (!text.trim().empty())
          return error("fakv-to-llvm-cpu takes no options, got '" + text + "'");
        buildFakvToLLVMCPUPipeline(pm);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)>) {});
  registerCubinPipeline(
      "fakv-to-fakvgpu",
      "fakv IR to Hopper-level tiles: decomposed, with layouts, pipelined "
      "and warp-specialized (stage 1 of fakv-to-cubin)",
      buildFakvToFakvGPUPipeline);
  registerCubinPipeline(
      "fakvgpu-to-llvm",
      "Hopper-level tiles to a gpu.module of LLVM/NVVM with its target "
      "(stage 2 of fakv-to-cubin)",
      buildFakvGPUToLLVMPipeline);
  registerCubinPipeline(
      "fakv-to-cubin",
      "fakv IR to a gpu.binary for sm_90a: PTX (format=isa) or a cubin "
      "assembled by ptxas (format=bin)",
      buildFakvToCubinPipeline);
}
