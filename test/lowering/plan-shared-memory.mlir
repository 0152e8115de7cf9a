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

// A cross-warp reduction's scratch: elements x warps along the axis x 4
// bytes (here 16 column sums over 4 warps: 256 bytes), more than the layout
// conversion's 64, so the scratch area is 256 bytes (+ 1 KiB slack).
// RUN: fakv-opt %s --fakvgpu-lower-warp-specialize | fakv-opt --fakvgpu-plan-shared-memory | FileCheck %s --check-prefix=REDUCE
// REDUCE: func.func @cross_warp_sum({{.*}}fakvgpu.smem_bytes = 1280 : i64
// REDUCE: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 0 : i64}
// REDUCE: fakv.reduce sum %{{.*}}, 0 {fakvgpu.smem_offset = 0 : i64}
#cols = #fakvgpu.linear<regs = [[0, 8], [16, 0]], lanes = [[0, 1], [0, 2], [0, 4], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#sums = #fakvgpu.linear<regs = [[8]], lanes = [[1], [2], [4], [0], [0]], warps = [[0], [0]]>
func.func @cross_warp_sum(%x: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s16 = arith.constant 16 : i64
  %c = arith.constant dense<0.0> : tensor<16xf32, #l>
  %p = fakvgpu.convert_layout %c : tensor<16xf32, #l> -> tensor<16xf32, #l5>
  %t = fakv.load %x[%c0, %c0] strides [%s16, %s1] : !fakv.ptr<f32> -> tensor<32x16xf32, #cols>
  %s = fakv.reduce sum %t, 0 : tensor<32x16xf32, #cols> -> tensor<16xf32, #sums>
  fakv.store %s, %out[%c0] strides [%s1] : tensor<16xf32, #sums>, !fakv.ptr<f32>
  return
}

// A cluster gather's bytes: a 16-byte mbarrier, then each tile's copies
// (16 elements x 4 programs x 4 bytes): the barriers placed after it start
// at 16 + 256 = 272.
// RUN: fakv-opt %s --fakvgpu-lower-warp-specialize | fakv-opt --fakvgpu-plan-shared-memory | FileCheck %s --check-prefix=GATHER
// GATHER: func.func @after_a_gather(
// GATHER: fakv.cluster_gather(%{{.*}}) size 4 {fakvgpu.smem_offset = 0 : i64}
// GATHER: fakvgpu.alloc_barriers arrivals 1 {fakvgpu.smem_offset = 272 : i64}
#g = #fakvgpu.linear<regs = [[1], [2]], lanes = [[4], [8], [0], [0], [0]], warps = [[0], [0]]>
#gall = #fakvgpu.linear<regs = [[0, 1], [0, 2]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = [[0, 0], [0, 0]]>
func.func @after_a_gather(%x: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %t = fakv.load %x[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<16xf32, #g>
  %all = fakv.cluster_gather(%t) size 4 : tensor<16xf32, #g> -> tensor<16x4xf32, #gall>
  %b = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  fakv.store %all, %out[%c0, %c0] strides [%s4, %s1] : tensor<16x4xf32, #gall>, !fakv.ptr<f32>
  return
}

// A late area larger than the rings (a 64 x 128 bf16 copy, 16 KiB, on 8 KiB
// of rings) goes after everything else, 1024-aligned: the barriers end at
// 8208, so at 9216.
// RUN: fakv-opt %s --fakvgpu-lower-warp-specialize | fakv-opt --fakvgpu-plan-shared-memory | FileCheck %s --check-prefix=AFTER
// AFTER: func.func @late_after_rings({{.*}}fakvgpu.smem_bytes = 26624 : i64
// AFTER: fakvgpu.alloc_ring {fakvgpu.smem_offset = 0 : i64}
// AFTER: fakvgpu.alloc_barriers arrivals 128 {fakvgpu.smem_offset = 8192 : i64}
// AFTER: fakvgpu.arrive
// AFTER: fakvgpu.convert_layout %{{.*}} {fakvgpu.smem_offset = 9216 : i64}
#wide = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 64]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
func.func @late_after_rings(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 8 : i32} {
  %c0 = arith.constant 0 : i32
  %x = arith.constant dense<0.0> : tensor<16x128xbf16, #wide>
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  %b = fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
    %v = fakvgpu.ring_view %r[%c0] : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  }, {
    fakvgpu.arrive %b[%c0] : !fakvgpu.barriers<2>
    %late = fakvgpu.convert_layout %x : tensor<16x128xbf16, #wide> -> tensor<16x128xbf16, #sh>
  }
  return
}
