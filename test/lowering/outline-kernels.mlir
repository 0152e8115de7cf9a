// fakvgpu-outline-kernels: converted kernels move into gpu.module
// @fakv_kernels as gpu.func, with the shared-memory symbol and what a launch
// needs; host functions stay outside.
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-lower-warp-specialize --fakvgpu-plan-shared-memory --fakvgpu-tma-arguments --convert-fakvgpu-to-nvvm -o %t.mlir
// RUN: fakv-opt %t.mlir --fakvgpu-outline-kernels | FileCheck %s
// A host function beside the kernel stays outside the gpu.module:
// RUN: %python -c "import sys; t = open(sys.argv[1]).read().rstrip(); print(t[:-1] + 'func.func @host(%%a: i32) -> i32 {\n  return %%a : i32\n}\n}')" %t.mlir \
// RUN:   | fakv-opt --fakvgpu-outline-kernels | FileCheck %s --check-prefix=HOST
// Run again on its output (fakvgpu-to-llvm twice): the gpu.module there is added to, not made a second time
// (a redefinition of @fakv_kernels).
// RUN: fakv-opt %t.mlir --fakvgpu-outline-kernels | fakv-opt --fakvgpu-outline-kernels | FileCheck %s --check-prefix=AGAIN
// AGAIN: gpu.module @fakv_kernels {
// AGAIN-NOT: gpu.module
// HOST: func.func @host(%{{.*}}: i32) -> i32
// HOST: gpu.module @fakv_kernels {
// HOST-NOT: func.func
// HOST: gpu.func @attention(
// HOST-NOT: func.func
// HOST: gpu.return

// CHECK: module attributes {gpu.container_module}
// CHECK: gpu.module @fakv_kernels {
// CHECK-NEXT: llvm.mlir.global external @fakv_smem() {addr_space = 3 : i32, alignment = 1024 : i64} : !llvm.array<0 x i8>
// CHECK: gpu.func @attention({{.*}}) kernel attributes {fakvgpu.num_warps = 8 : i32, fakvgpu.smem_bytes = 26624 : i64, fakvgpu.tma_args = array<i32: 1, 2>, fakvgpu.tma_boxes = array<i32: 32, 32>, known_block_size = array<i32: 256, 1, 1>}
// CHECK: gpu.return
// CHECK-NOT: func.func
