// convert-fakvgpu-to-nvvm, what threads of several warps exchange through
// shared memory. A reduction across warps of several elements: each thread
// stores its partial sum of element e at slot s (its warp's bit along the
// axis) as word e * k + s of the scratch (k = 2 warps along the axis; 16
// sums: 128 bytes), then reads words e * k + 0 and e * k + 1. A cluster
// gather of tiles held by several threads: one writer per element, the
// thread whose replicating lane bits (tid bits 0-4) and warp bits (tid bits
// 5 on) are clear: 4 + 8 + 16 (lanes 2-4) + 32 + 64 (both warps) = 124 for
// a 16-element tile, 64 (warp bit 1) for one replicated over warp pairs.
// RUN: fakv-opt %s --fakvgpu-plan-shared-memory --fakvgpu-tma-arguments --convert-fakvgpu-to-nvvm | FileCheck %s

// CHECK-LABEL: func.func @column_sums(
// CHECK-SAME: fakvgpu.smem_bytes = 1152 : i64
// CHECK: nvvm.barrier0
// CHECK: %[[E:[0-9]+]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[K:[a-z0-9_]+]] = arith.constant 2 : i32
// CHECK-NEXT: %[[EK:[0-9]+]] = arith.muli %[[E]], %[[K]] : i32
// CHECK-NEXT: %[[IDX:[0-9]+]] = arith.addi %[[EK]], %[[SLOT:[0-9]+]] : i32
// CHECK-NEXT: %[[W:[a-z0-9_]+]] = arith.constant 4 : i32
// CHECK-NEXT: %[[OFF:[0-9]+]] = arith.muli %[[IDX]], %[[W]] : i32
// CHECK-NEXT: %[[AT:[0-9]+]] = llvm.getelementptr %{{.*}}[%[[OFF]]]
// CHECK-NEXT: llvm.store %{{.*}}, %[[AT]] : f32, !llvm.ptr<3>
// CHECK-NEXT: nvvm.barrier0
// CHECK-NEXT: %[[S0:[a-z0-9_]+]] = arith.constant 0 : i32
// CHECK-NEXT: %[[K0:[a-z0-9_]+]] = arith.constant 2 : i32
// CHECK-NEXT: %[[E0:[0-9]+]] = arith.muli %[[E]], %[[K0]] : i32
// CHECK-NEXT: arith.addi %[[E0]], %[[S0]] : i32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: %[[S1:[a-z0-9_]+]] = arith.constant 1 : i32
// CHECK-NEXT: %[[K1:[a-z0-9_]+]] = arith.constant 2 : i32
// CHECK-NEXT: %[[E1:[0-9]+]] = arith.muli %[[E]], %[[K1]] : i32
// CHECK-NEXT: arith.addi %[[E1]], %[[S1]] : i32
// CHECK: llvm.load %{{.*}} : !llvm.ptr<3> -> f32
// CHECK-NEXT: arith.addf
#cols = #fakvgpu.linear<regs = [[8, 0]], lanes = [[0, 1], [0, 2], [0, 4], [1, 0], [2, 0]], warps = [[4, 0], [0, 8]]>
#sums = #fakvgpu.linear<regs = [], lanes = [[1], [2], [4], [0], [0]], warps = [[0], [8]]>
func.func @column_sums(%x: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s16 = arith.constant 16 : i64
  %t = fakv.load %x[%c0, %c0] strides [%s16, %s1] : !fakv.ptr<f32> -> tensor<16x16xf32, #cols>
  %s = fakv.reduce sum %t, 0 : tensor<16x16xf32, #cols> -> tensor<16xf32, #sums>
  fakv.store %s, %out[%c0] strides [%s1] : tensor<16xf32, #sums>, !fakv.ptr<f32>
  return
}

// CHECK-LABEL: func.func @replicated(
// CHECK: nvvm.cluster.wait
// CHECK: %[[M16:[a-z0-9_]+]] = arith.constant 124 : i32
// CHECK-NEXT: %[[A16:[0-9]+]] = arith.andi %[[TID:[0-9]+]], %[[M16]] : i32
// CHECK-NEXT: %[[W16:[0-9]+]] = arith.cmpi eq, %[[A16]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[W16]] {
// CHECK: nvvm.mapa
// CHECK: %[[M64:[a-z0-9_]+]] = arith.constant 64 : i32
// CHECK-NEXT: %[[A64:[0-9]+]] = arith.andi %[[TID]], %[[M64]] : i32
// CHECK-NEXT: %[[W64:[0-9]+]] = arith.cmpi eq, %[[A64]], %{{.*}} : i32
// CHECK-NEXT: scf.if %[[W64]] {
// CHECK: nvvm.mapa
#rep = #fakvgpu.linear<regs = [[1], [2]], lanes = [[4], [8], [0], [0], [0]], warps = [[0], [0]]>
#rep_all = #fakvgpu.linear<regs = [[0, 1], [0, 2]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = [[0, 0], [0, 0]]>
#pairs = #fakvgpu.linear<regs = [], lanes = [[1], [2], [4], [8], [16]], warps = [[32], [0]]>
#pairs_all = #fakvgpu.linear<regs = [[0, 1], [0, 2]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [16, 0]], warps = [[32, 0], [0, 0]]>
#r16 = #fakvgpu.linear<regs = [], lanes = [[1], [2], [4], [8], [0]], warps = [[0], [0]]>
func.func @replicated(%x: !fakv.ptr<f32>, %y: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %x[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<16xf32, #rep>
  %u = fakv.load %y[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<64xf32, #pairs>
  %all, %halves = fakv.cluster_gather(%t, %u) size 4 : tensor<16xf32, #rep>, tensor<64xf32, #pairs> -> tensor<16x4xf32, #rep_all>, tensor<64x4xf32, #pairs_all>
  %a = fakv.reduce sum %all, 1 : tensor<16x4xf32, #rep_all> -> tensor<16xf32, #r16>
  %b = fakv.reduce sum %halves, 1 : tensor<64x4xf32, #pairs_all> -> tensor<64xf32, #pairs>
  fakv.store %a, %out[%c0] strides [%s1] : tensor<16xf32, #r16>, !fakv.ptr<f32>
  fakv.store %b, %out[%c0] strides [%s1] : tensor<64xf32, #pairs>, !fakv.ptr<f32>
  return
}
