// The cp.async gather of a contiguous cache whose rows are not known to be
// 16-byte aligned (no fakv.divisibility), 60 channels of a 64-wide tile,
// bad pages reported (convert-fakvgpu-to-nvvm, K's first load):
// - a chunk's page is bad only for a row the load reads: rows past `valid`
//   (the cache's last page runs past num_pages there) are not reported;
// - a chunk goes as one 16-byte copy only when its 8 channels end at or
//   before `channels` (56 + 8 > 60: channels 56-59 element by element);
// - element by element, element e is read at the row's element + e and
//   written at byte 2e of the chunk.
// RUN: fakv-opt %s --fakv-to-fakvgpu --fakvgpu-lower-warp-specialize --fakvgpu-plan-shared-memory \
// RUN:   --fakvgpu-tma-arguments --fakvgpu-mark-aligned --convert-fakvgpu-to-nvvm | FileCheck %s

// CHECK-LABEL: func.func @gather_checks(
// CHECK: %[[IN_TILE:[0-9]+]] = arith.cmpi slt, %{{[0-9]+}}, %c256_i32 : i32
// CHECK: %[[CHUNK:[0-9]+]] = arith.remui
// CHECK-NEXT: %[[COL:[0-9]+]] = arith.muli %[[CHUNK]], %c8_i32{{(_[0-9]+)?}} : i32
// CHECK-NEXT: %[[KEY:[0-9]+]] = arith.addi
// CHECK-NEXT: %[[READ:[0-9]+]] = arith.cmpi slt, %[[KEY]], %{{[0-9]+}} : i32
// CHECK-NEXT: %[[ROW_VALID:[0-9]+]] = arith.andi %[[IN_TILE]], %[[READ]] : i1
// CHECK: %[[OUTSIDE:[0-9]+]] = arith.cmpi uge, %{{[0-9]+}}, %arg5 : i32
// CHECK-NEXT: %[[BAD:[0-9]+]] = arith.andi %[[OUTSIDE]], %[[ROW_VALID]] : i1
// CHECK: %[[ANY_BAD:[0-9]+]] = arith.ori %[[BAD]], %{{[0-9]+}} : i1
// CHECK: scf.if %[[ANY_BAD]] {
// CHECK-NEXT: llvm.store volatile %c33554432_i32, %arg6
// CHECK: %[[END:[0-9]+]] = arith.addi %[[COL]], %c8_i32{{(_[0-9]+)?}} : i32
// CHECK-NEXT: %[[WHOLE:[0-9]+]] = arith.cmpi sle, %[[END]], %c60_i32 : i32
// CHECK-NEXT: %[[BOTH:[0-9]+]] = arith.andi %{{[0-9]+}}, %[[WHOLE]] : i1
// CHECK-NEXT: scf.if %[[BOTH]] {
// CHECK: nvvm.cp.async.shared.global
// CHECK: } else {
// CHECK: %[[E7:[0-9]+]] = arith.addi %[[COL]], %c7_i32{{(_[0-9]+)?}} : i32
// CHECK-NEXT: arith.cmpi slt, %[[E7]], %c60_i32 : i32
// CHECK: %[[AT:[0-9]+]] = arith.addi %[[ROW_ELEM:[0-9]+]], %c7_i64 : i64
// CHECK-NEXT: %[[SRC:[0-9]+]] = llvm.getelementptr %arg1[%[[AT]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK-NEXT: llvm.load %[[SRC]] : !llvm.ptr<1> -> i16
// CHECK: %[[DST:[0-9]+]] = llvm.getelementptr %{{[0-9]+}}[%c14_i32] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8
// CHECK-NEXT: llvm.store %{{[0-9]+}}, %[[DST]] : i16, !llvm.ptr<3>

func.func @gather_checks(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16>, %vc: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>,
                         %n: i32, %np: i32, %err: !fakv.ptr<i32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %ch = arith.constant 60 : i32
  %cap = arith.constant 4096 : i32
  %code = arith.constant 33554432 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 262144 : i64
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16>
  %m0 = fakv.splat %ninf : f32 -> tensor<16xf32>
  %l0 = fakv.splat %zero : f32 -> tensor<16xf32>
  %a0 = fakv.splat %zero : f32 -> tensor<16x64xf32>
  %s0 = fakv.splat %zero : f32 -> tensor<16x32xf32>
  %blocks = arith.ceildivsi %n, %c32 : i32
  %m, %l, %acc = scf.for %i = %c0 to %blocks step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>) : i32 {
    %row = arith.muli %i, %c32 : i32
    %k = fakv.paged_load %kc[%c0, %row] page %c0 valid %n channels %ch page_size %cap num_pages %np
           strides [%sp, %s64, %s64] report %err, %code : !fakv.ptr<bf16> -> tensor<32x64xbf16>
    %v = fakv.paged_load %vc[%c0, %row] page %c0 valid %n channels %ch page_size %cap num_pages %np
           strides [%sp, %s64, %s64] report %err, %code : !fakv.ptr<bf16> -> tensor<32x64xbf16>
    %s = fakv.dot %qt, %k, %s0 {transpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xf32>
    %m1, %l1, %p, %alpha = fakv.online_softmax %s, %mi, %li scale %scale : tensor<16x32xf32>, tensor<16xf32>
    %ae = fakv.expand_dims %alpha, 1 : tensor<16xf32> -> tensor<16x1xf32>
    %ab = fakv.broadcast %ae : tensor<16x1xf32> -> tensor<16x64xf32>
    %as = arith.mulf %ai, %ab : tensor<16x64xf32>
    %pb = fakv.cast %p : tensor<16x32xf32> -> tensor<16x32xbf16>
    %a1 = fakv.dot %pb, %v, %as : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xf32>
    scf.yield %m1, %l1, %a1 : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  }
  fakv.store %acc, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x64xf32>, !fakv.ptr<f32>
  return
}
