// fakvgpu-dependent-launch: each outlined kernel waits for the grids it
// depends on before it touches memory, then lets the next kernel launch;
// it is marked for the launch facts. Running the pass twice adds nothing.
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-lower-warp-specialize --fakvgpu-plan-shared-memory --fakvgpu-tma-arguments --convert-fakvgpu-to-nvvm --fakvgpu-outline-kernels -o %t.mlir
// RUN: fakv-opt %t.mlir --fakvgpu-dependent-launch | FileCheck %s
// RUN: fakv-opt %t.mlir --fakvgpu-dependent-launch --fakvgpu-dependent-launch | FileCheck %s
// RUN: fakv-opt %t.mlir | FileCheck %s --check-prefix=BEFORE

// CHECK: gpu.func @attention({{.*}}) kernel attributes {{{.*}}fakvgpu.dependent_launch
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.wait;", "~{memory}"  : () -> ()
// CHECK-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "griddepcontrol.launch_dependents;", "~{memory}"  : () -> ()
// CHECK-NOT: griddepcontrol
// CHECK: gpu.return

// BEFORE-NOT: griddepcontrol
// BEFORE-NOT: fakvgpu.dependent_launch
