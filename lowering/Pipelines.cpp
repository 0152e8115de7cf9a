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
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void fakv::buildFakvToLLVMCPUPipeline(OpPassManager &pm) {
  pm.addPass(createConvertFakvToCPU());
  pm.addPass(createCanonicalizerPass());
  // Tiles: arith/math on tensors -> linalg, then one-shot bufferization with
  // ownership-based deallocation (loops over KV tiles would otherwise leak).
  pm.addPass(createConvertElementwiseToLinalgPass());
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
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
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

void fakv::registerFakvLoweringPipelines() {
  registerFakvLoweringPasses();
  PassPipelineRegistration<>(
      "fakv-to-llvm-cpu",
      "Lower fakv IR to the LLVM dialect for the host (mlir-runner, "
      "ExecutionEngine): the CPU reference path",
      [](OpPassManager &pm) { buildFakvToLLVMCPUPipeline(pm); });
}
