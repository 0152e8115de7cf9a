// fakvgpu-tma-arguments: the K and V copies use TMA, so the kernel gets two
// trailing tensor-map pointers; each copy names its own, and the kernel says
// which cache argument each describes (1, 2) and the box rows (32).
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-tma-arguments | FileCheck %s

// CHECK: func.func @attention({{.*}}, %arg6: i32, %arg7: !llvm.ptr, %arg8: !llvm.ptr)
// CHECK-SAME: fakvgpu.tma_args = array<i32: 1, 2>, fakvgpu.tma_boxes = array<i32: 32, 32>
// CHECK: fakvgpu.async_paged_load %arg1{{.*}}fakvgpu.tma_param = 7 : i64
// CHECK: fakvgpu.async_paged_load %arg2{{.*}}fakvgpu.tma_param = 8 : i64
