// fakvgpu-plan-shared-memory: the two K/V rings (2 stages of 32x64 bf16:
// 8 KiB each, 1024-aligned), the three barrier arrays (2 x 8 bytes each) and
// Q's shared copy (written from registers: stored with 64 rows, 8 KiB,
// 1024-aligned) one after the other; the kernel's total adds 1 KiB of
// alignment slack. A kernel without layouts is an error.
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-plan-shared-memory | FileCheck %s
// RUN: fakv-opt %s --fakvgpu-lower-warp-specialize | fakv-opt --fakvgpu-plan-shared-memory | FileCheck %s --check-prefix=ROLES
// RUN: %not fakv-opt %S/../passes/Inputs/attention.mlir --fakvgpu-plan-shared-memory 2>&1 | FileCheck %s --check-prefix=BAD

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

// What the consumer does after its last use of the rings (here the arrive)
// reuses the rings' bytes: the late shared copy at offset 0, on the ring;
// the early one (the consumer may write it while copies land) after the
// barriers. The same copy before the arrive gets bytes of its own.
// RUN: fakv-opt %s --fakvgpu-lower-warp-specialize | fakv-opt --fakvgpu-plan-shared-memory | FileCheck %s --check-prefix=LATE
// LATE: func.func @late_on_rings({{.*}}fakvgpu.smem_bytes = 18432 : i64
// LATE: fakvgpu.alloc_ring {fakvgpu.smem_offset = 0 : i64}
// LATE: fakvgpu.alloc_barriers arrivals 128 {fakvgpu.smem_offset = 8192 : i64}
// LATE: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 9216 : i64}
// LATE: fakvgpu.arrive
// LATE: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 0 : i64}
#l3 = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#sh = #fakvgpu.shared<swizzle = 128>
func.func @late_on_rings(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %x = arith.constant dense<0.0> : tensor<16x64xbf16, #l3>
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  %b = fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
    %v = fakvgpu.ring_view %r[%c0] : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  }, {
    %early = fakvgpu.convert_layout %x : tensor<16x64xbf16, #l3> -> tensor<16x64xbf16, #sh>
    fakvgpu.arrive %b[%c0] : !fakvgpu.barriers<2>
    %late = fakvgpu.convert_layout %x : tensor<16x64xbf16, #l3> -> tensor<16x64xbf16, #sh>
  }
  return
}

// The same under an early exit (fakv-warp-specialize keeps the consumer's
// whole `if`): the last ring use is found in the branch that has one, so
// the late copy still lands on the ring.
// RUN: fakv-opt %s --fakvgpu-lower-warp-specialize | fakv-opt --fakvgpu-plan-shared-memory | FileCheck %s --check-prefix=EXIT
// EXIT: func.func @late_under_an_early_exit({{.*}}fakvgpu.smem_bytes = 18432 : i64
// EXIT: fakvgpu.alloc_ring {fakvgpu.smem_offset = 0 : i64}
// EXIT: scf.if
// EXIT: } else {
// EXIT: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 9216 : i64}
// EXIT: fakvgpu.arrive
// EXIT: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 0 : i64}
func.func @late_under_an_early_exit(%out: !fakv.ptr<bf16>, %n: i32) attributes {fakv.kernel, fakvgpu.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %x = arith.constant dense<0.0> : tensor<16x64xbf16, #l3>
  %none = arith.cmpi sle, %n, %c0 : i32
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  %b = fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
    %v = fakvgpu.ring_view %r[%c0] : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  }, {
    scf.if %none {
      fakv.store %x, %out[%c0, %c0] strides [%s64, %s1] : tensor<16x64xbf16, #l3>, !fakv.ptr<bf16>
    } else {
      %early = fakvgpu.convert_layout %x : tensor<16x64xbf16, #l3> -> tensor<16x64xbf16, #sh>
      fakvgpu.arrive %b[%c0] : !fakvgpu.barriers<2>
      %late = fakvgpu.convert_layout %x : tensor<16x64xbf16, #l3> -> tensor<16x64xbf16, #sh>
    }
  }
  return
}
