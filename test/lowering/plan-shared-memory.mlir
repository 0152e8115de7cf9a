// fakvgpu-plan-shared-memory: the two K/V rings (2 stages of 32x64 bf16:
// 8 KiB each, 1024-aligned), the three barrier arrays (2 x 8 bytes each) and
// Q's shared copy (written from registers: stored with 64 rows, 8 KiB,
// 1024-aligned) one after the other; the kernel's total adds 1 KiB of
// alignment slack. A kernel without layouts is an error.
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-plan-shared-memory | FileCheck %s
// RUN: fakv-opt %s --fakvgpu-lower-warp-specialize | fakv-opt --fakvgpu-plan-shared-memory | FileCheck %s --check-prefix=ROLES
// RUN: not fakv-opt %S/../passes/Inputs/attention.mlir --fakvgpu-plan-shared-memory 2>&1 | FileCheck %s --check-prefix=BAD

// CHECK: func.func @attention({{.*}}) attributes {{{.*}}fakvgpu.smem_bytes = 26624 : i64}
// CHECK: fakvgpu.alloc_ring {fakvgpu.smem_offset = 0 : i64}
// CHECK: fakvgpu.alloc_ring {fakvgpu.smem_offset = 8192 : i64}
// CHECK: fakvgpu.alloc_barriers arrivals 1 {fakvgpu.smem_offset = 16384 : i64}
// CHECK: fakvgpu.alloc_barriers arrivals 1 {fakvgpu.smem_offset = 16400 : i64}
// CHECK: fakvgpu.alloc_barriers arrivals 128 {fakvgpu.smem_offset = 16416 : i64}
// CHECK: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 17408 : i64} : tensor<16x64xbf16, #{{.*}}> -> tensor<16x64xbf16, #shared>

// BAD: error: has no layouts yet: run fakv-assign-layouts first

// The two warp roles run at once: each gets its own scratch area (they once
// shared offset 0), the consumer's after the producer's, 128-aligned.
// ROLES: func.func @two_roles({{.*}}fakvgpu.smem_bytes = 1216 : i64
// ROLES: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 0 : i64}
// ROLES: } {fakvgpu.role = array<i64: 0, 128, 1>}
// ROLES: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 128 : i64}
// ROLES: } {fakvgpu.role = array<i64: 128, 128, 2>}
#l = #fakvgpu.linear<regs = [[8]], lanes = [[0], [0], [1], [2], [4]], warps = [[0], [0]]>
#l5 = #fakvgpu.linear<regs = [[8]], lanes = [[1], [2], [4], [0], [0]], warps = [[0], [0]]>
func.func @two_roles(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 8 : i32} {
  %c = arith.constant dense<0.0> : tensor<16xf32, #l>
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
    %p = fakvgpu.convert_layout %c : tensor<16xf32, #l> -> tensor<16xf32, #l5>
  }, {
    %q = fakvgpu.convert_layout %c : tensor<16xf32, #l> -> tensor<16xf32, #l5>
  }
  return
}
