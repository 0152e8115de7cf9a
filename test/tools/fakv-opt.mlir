// fakv-opt lists every fakv pass and pipeline with a one-line description,
// and answers malformed input with a diagnostic and a non-zero exit, never a
// crash (`%not`, LLVM's, fails on a crash; lit's own `not` does not).
// RUN: fakv-opt --help | FileCheck %s --check-prefix=HELP
// RUN: fakv-opt --help | FileCheck %s --check-prefix=PASSES
// RUN: %not fakv-opt %s -split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// HELP: --convert-fakv-to-cpu{{ +}}- Lower fakv to upstream tensor/linalg/scf/llvm ops that run on the host
// HELP: --fakv-to-llvm-cpu{{ +}}- Lower fakv IR to the LLVM dialect for the host
// PASSES-DAG: --fakv-guard-cpu-division{{ +}}- Make integer division by zero
// PASSES-DAG: --fakvgpu-lower-warp-specialize{{ +}}- Split fakvgpu.warp_specialize
// PASSES-DAG: --fakvgpu-mark-aligned{{ +}}- Mark loads and stores
// PASSES-DAG: --fakvgpu-outline-kernels{{ +}}- Move converted kernels into gpu.module
// PASSES-DAG: --fakvgpu-plan-shared-memory{{ +}}- Place a kernel's shared-memory buffers
// PASSES-DAG: --fakvgpu-tma-arguments{{ +}}- Append a tensor-map argument

// BAD: fakv-opt.mlir:[[# @LINE + 2]]:19: error: expected ','
func.func @truncated(%a: tensor<4x4xf32>) {
  %d = fakv.dot %a : tensor<4x4xf32>
  return
}

// -----

// BAD: error: unknown  type `tile` in dialect `fakv`
func.func @unknown_type(%a: !fakv.tile<4xf32>) {
  return
}

// -----

// BAD: error: unregistered operation 'fakv.nope' found in dialect ('fakv')
func.func @unknown_op() {
  "fakv.nope"() : () -> ()
  return
}

// -----

// BAD: error: 'fakv.dot' op operand #0 must be statically shaped tile, but got 'f32'
func.func @scalar_operand(%a: f32, %c: tensor<4x4xf32>) {
  %d = "fakv.dot"(%a, %a, %c) : (f32, f32, tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}
