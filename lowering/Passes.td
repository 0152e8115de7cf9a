//===- Passes.td - fakv lowerings (conversions) ------------*- tablegen -*-===//
//
// Every conversion out of the fakv dialect, named <Src>To<Dst>; the file that
// implements one carries its name, and so does its test folder.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_PASSES_TD
#define FAKV_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFakvToCPU : Pass<"convert-fakv-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower fakv to upstream tensor/linalg/scf/llvm ops that run on the host";
  let description = [{
    The reference semantics of every fakv op, executable on the CPU. Tiles stay
    tensors (to be bufferized by upstream passes); `!fakv.ptr` becomes
    `!llvm.ptr` and memory ops become guarded `llvm.load`/`llvm.store`; a kernel
    gets six trailing `i32` arguments (program id x, y, z, then the grid
    extents) that replace `fakv.program_id`/`fakv.num_programs`, and
    `fakv.launch` becomes a loop nest calling it. The whole way to an
    `mlir-runner`-ready module is the pipeline `fakv-to-llvm-cpu`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
  ];
}

#endif // FAKV_LOWERING_PASSES_TD
