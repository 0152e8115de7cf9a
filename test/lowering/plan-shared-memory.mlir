// fakvgpu-plan-shared-memory: the two K/V rings (2 stages of 32x64 bf16:
// 8 KiB each, 1024-aligned), the three barrier arrays (2 x 8 bytes each) and
// Q's shared copy (written from registers: stored with 64 rows, 8 KiB,
// 1024-aligned) one after the other; the kernel's total adds 1 KiB of
// alignment slack. A kernel without layouts is an error.
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-plan-shared-memory | FileCheck %s
// RUN: not fakv-opt %S/../passes/Inputs/attention.mlir --fakvgpu-plan-shared-memory 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: func.func @attention({{.*}}) attributes {{{.*}}fakvgpu.smem_bytes = 26624 : i64}
// CHECK: fakvgpu.alloc_ring {fakvgpu.smem_offset = 0 : i64}
// CHECK: fakvgpu.alloc_ring {fakvgpu.smem_offset = 8192 : i64}
// CHECK: fakvgpu.alloc_barriers arrivals 1 {fakvgpu.smem_offset = 16384 : i64}
// CHECK: fakvgpu.alloc_barriers arrivals 1 {fakvgpu.smem_offset = 16400 : i64}
// CHECK: fakvgpu.alloc_barriers arrivals 128 {fakvgpu.smem_offset = 16416 : i64}
// CHECK: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 17408 : i64} : tensor<16x64xbf16, #{{.*}}> -> tensor<16x64xbf16, #shared>

// BAD: error: has no layouts yet: run fakv-assign-layouts first
