// `fakv.warm_pages = N` (an experiment): after each tile's copies, the
// pages of the tile N tiles ahead are looked up and the first line of each
// of its boxes (TMA: row-boxes-to-ptx.mlir's kernel, K's and its twin V's
// under one lookup a box, every box's lookup issued before any is used) or
// 16-row pieces (the gather: one a thread, after its barrier arrival, each
// load its own) prefetched into L2, rows past those read and pages outside
// the cache left alone. Without the attribute, no prefetch. The PTX passes
// ptxas for sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// The gather's warming at the NVVM level: threads 0 and 1 (a 16-row piece
// each of the 32-row tile) take rows row + 16 * tid + 32 (one tile ahead),
// looked up only when the sequence has them.
// RUN: fakv-opt %s --fakv-to-fakvgpu --fakvgpu-lower-warp-specialize --fakvgpu-plan-shared-memory \
// RUN:   --fakvgpu-tma-arguments --fakvgpu-mark-aligned --convert-fakvgpu-to-nvvm | FileCheck %s --check-prefix=AHEAD
// AHEAD-LABEL: func.func @warm_gathered(
// AHEAD: nvvm.cp.async.mbarrier.arrive
// AHEAD-NEXT: %[[PIECES:c2_i32(_[0-9]+)?]] = arith.constant 2 : i32
// AHEAD-NEXT: %[[MINE:[0-9]+]] = arith.cmpi ult, %[[TID:[0-9]+]], %[[PIECES]] : i32
// AHEAD-NEXT: scf.if %[[MINE]] {
// AHEAD-NEXT: %[[LEAD:c32_i32(_[0-9]+)?]] = arith.constant 32 : i32
// AHEAD-NEXT: %[[PIECE:c16_i32(_[0-9]+)?]] = arith.constant 16 : i32
// AHEAD-NEXT: %[[T16:[0-9]+]] = arith.muli %[[TID]], %[[PIECE]] : i32
// AHEAD-NEXT: %[[OFF:[0-9]+]] = arith.addi %[[T16]], %[[LEAD]] : i32
// AHEAD-NEXT: %[[ROW:[0-9]+]] = arith.addi %{{[0-9]+}}, %[[OFF]] : i32
// AHEAD-NEXT: arith.cmpi slt, %[[ROW]], %arg5 : i32

// CHECK-LABEL: .entry warm_tma(
// CHECK-COUNT-8: cp.async.bulk.tensor.4d
// CHECK-NOT: cp.async.bulk.tensor
// CHECK: ld.global.b32 [[P0:%r[0-9]+]], [[[T:%rd[0-9]+]]];
// CHECK-NOT: prefetch
// CHECK: ld.global.b32 [[P1:%r[0-9]+]], [[[T]]+4];
// CHECK: setp.ge.u32 {{%p[0-9]+}}, [[P0]],
// CHECK: prefetch.global.L2
// CHECK-NEXT: prefetch.global.L2
// CHECK: setp.ge.u32 {{%p[0-9]+}}, [[P1]],
// CHECK: prefetch.global.L2
// CHECK-NEXT: prefetch.global.L2
// CHECK-NOT: prefetch
// CHECK-LABEL: .entry warm_gathered(
// CHECK: cp.async.cg.shared.global
// CHECK: cp.async.mbarrier.arrive
// CHECK: ld.global.b32
// CHECK: prefetch.global.L2
// CHECK-NOT: prefetch.global.L2
// CHECK: cp.async.cg.shared.global
// CHECK: ld.global.b32
// CHECK: prefetch.global.L2
// CHECK-NOT: prefetch
// CHECK-LABEL: .entry cold(
// CHECK-NOT: prefetch

func.func @warm_tma(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                     %vc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %bt: !fakv.ptr<i32>,
                     %o: !fakv.ptr<f32>, %n: i32, %np: i32, %err: !fakv.ptr<i32>,
                     %cap: i32) attributes {fakv.kernel, fakv.row_boxes, fakv.warm_pages = 2 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %ps = arith.constant 16 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 128 : i64
  %sp = arith.constant 2048 : i64
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x128xbf16>
  %m0 = fakv.splat %ninf : f32 -> tensor<16xf32>
  %l0 = fakv.splat %zero : f32 -> tensor<16xf32>
  %a0 = fakv.splat %zero : f32 -> tensor<16x128xf32>
  %s0 = fakv.splat %zero : f32 -> tensor<16x32xf32>
  %neg = arith.cmpi slt, %n, %c0 : i32
  %big = arith.cmpi sgt, %n, %cap : i32
  %bad = arith.ori %neg, %big : i1
  %seqlens_error = arith.constant 16777216 : i32
  fakv.report %err, %bad, %seqlens_error : !fakv.ptr<i32>
  %table_error = arith.constant 33554432 : i32
  %blocks = arith.ceildivsi %n, %c32 : i32
  %m, %l, %acc = scf.for %i = %c0 to %blocks step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16x128xf32>) : i32 {
    %row = arith.muli %i, %c32 : i32
    %k = fakv.paged_load %kc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] report %err, %table_error : !fakv.ptr<bf16> -> tensor<32x128xbf16>
    %v = fakv.paged_load %vc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] report %err, %table_error : !fakv.ptr<bf16> -> tensor<32x128xbf16>
    %s = fakv.dot %qt, %k, %s0 {transpose_b} : tensor<16x128xbf16>, tensor<32x128xbf16> -> tensor<16x32xf32>
    %m1, %l1, %p, %alpha = fakv.online_softmax %s, %mi, %li scale %scale : tensor<16x32xf32>, tensor<16xf32>
    %ae = fakv.expand_dims %alpha, 1 : tensor<16xf32> -> tensor<16x1xf32>
    %ab = fakv.broadcast %ae : tensor<16x1xf32> -> tensor<16x128xf32>
    %as = arith.mulf %ai, %ab : tensor<16x128xf32>
    %pb = fakv.cast %p : tensor<16x32xf32> -> tensor<16x32xbf16>
    %a1 = fakv.dot %pb, %v, %as : tensor<16x32xbf16>, tensor<32x128xbf16> -> tensor<16x128xf32>
    scf.yield %m1, %l1, %a1 : tensor<16xf32>, tensor<16xf32>, tensor<16x128xf32>
  }
  fakv.store %acc, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x128xf32>, !fakv.ptr<f32>
  return
}

func.func @warm_gathered(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                     %vc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %bt: !fakv.ptr<i32>,
                     %o: !fakv.ptr<f32>, %n: i32, %np: i32, %err: !fakv.ptr<i32>,
                     %cap: i32) attributes {fakv.kernel, fakv.gather_pages, fakv.warm_pages = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %ps = arith.constant 16 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 128 : i64
  %sp = arith.constant 2048 : i64
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x128xbf16>
  %m0 = fakv.splat %ninf : f32 -> tensor<16xf32>
  %l0 = fakv.splat %zero : f32 -> tensor<16xf32>
  %a0 = fakv.splat %zero : f32 -> tensor<16x128xf32>
  %s0 = fakv.splat %zero : f32 -> tensor<16x32xf32>
  %neg = arith.cmpi slt, %n, %c0 : i32
  %big = arith.cmpi sgt, %n, %cap : i32
  %bad = arith.ori %neg, %big : i1
  %seqlens_error = arith.constant 16777216 : i32
  fakv.report %err, %bad, %seqlens_error : !fakv.ptr<i32>
  %table_error = arith.constant 33554432 : i32
  %blocks = arith.ceildivsi %n, %c32 : i32
  %m, %l, %acc = scf.for %i = %c0 to %blocks step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16x128xf32>) : i32 {
    %row = arith.muli %i, %c32 : i32
    %k = fakv.paged_load %kc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] report %err, %table_error : !fakv.ptr<bf16> -> tensor<32x128xbf16>
    %v = fakv.paged_load %vc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] report %err, %table_error : !fakv.ptr<bf16> -> tensor<32x128xbf16>
    %s = fakv.dot %qt, %k, %s0 {transpose_b} : tensor<16x128xbf16>, tensor<32x128xbf16> -> tensor<16x32xf32>
    %m1, %l1, %p, %alpha = fakv.online_softmax %s, %mi, %li scale %scale : tensor<16x32xf32>, tensor<16xf32>
    %ae = fakv.expand_dims %alpha, 1 : tensor<16xf32> -> tensor<16x1xf32>
    %ab = fakv.broadcast %ae : tensor<16x1xf32> -> tensor<16x128xf32>
    %as = arith.mulf %ai, %ab : tensor<16x128xf32>
    %pb = fakv.cast %p : tensor<16x32xf32> -> tensor<16x32xbf16>
    %a1 = fakv.dot %pb, %v, %as : tensor<16x32xbf16>, tensor<32x128xbf16> -> tensor<16x128xf32>
    scf.yield %m1, %l1, %a1 : tensor<16xf32>, tensor<16xf32>, tensor<16x128xf32>
  }
  fakv.store %acc, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x128xf32>, !fakv.ptr<f32>
  return
}

func.func @cold(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                     %vc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %bt: !fakv.ptr<i32>,
                     %o: !fakv.ptr<f32>, %n: i32, %np: i32, %err: !fakv.ptr<i32>,
                     %cap: i32) attributes {fakv.kernel, fakv.row_boxes} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %ps = arith.constant 16 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 128 : i64
  %sp = arith.constant 2048 : i64
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x128xbf16>
  %m0 = fakv.splat %ninf : f32 -> tensor<16xf32>
  %l0 = fakv.splat %zero : f32 -> tensor<16xf32>
  %a0 = fakv.splat %zero : f32 -> tensor<16x128xf32>
  %s0 = fakv.splat %zero : f32 -> tensor<16x32xf32>
  %neg = arith.cmpi slt, %n, %c0 : i32
  %big = arith.cmpi sgt, %n, %cap : i32
  %bad = arith.ori %neg, %big : i1
  %seqlens_error = arith.constant 16777216 : i32
  fakv.report %err, %bad, %seqlens_error : !fakv.ptr<i32>
  %table_error = arith.constant 33554432 : i32
  %blocks = arith.ceildivsi %n, %c32 : i32
  %m, %l, %acc = scf.for %i = %c0 to %blocks step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16x128xf32>) : i32 {
    %row = arith.muli %i, %c32 : i32
    %k = fakv.paged_load %kc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] report %err, %table_error : !fakv.ptr<bf16> -> tensor<32x128xbf16>
    %v = fakv.paged_load %vc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] report %err, %table_error : !fakv.ptr<bf16> -> tensor<32x128xbf16>
    %s = fakv.dot %qt, %k, %s0 {transpose_b} : tensor<16x128xbf16>, tensor<32x128xbf16> -> tensor<16x32xf32>
    %m1, %l1, %p, %alpha = fakv.online_softmax %s, %mi, %li scale %scale : tensor<16x32xf32>, tensor<16xf32>
    %ae = fakv.expand_dims %alpha, 1 : tensor<16xf32> -> tensor<16x1xf32>
    %ab = fakv.broadcast %ae : tensor<16x1xf32> -> tensor<16x128xf32>
    %as = arith.mulf %ai, %ab : tensor<16x128xf32>
    %pb = fakv.cast %p : tensor<16x32xf32> -> tensor<16x32xbf16>
    %a1 = fakv.dot %pb, %v, %as : tensor<16x32xbf16>, tensor<32x128xbf16> -> tensor<16x128xf32>
    scf.yield %m1, %l1, %a1 : tensor<16xf32>, tensor<16xf32>, tensor<16x128xf32>
  }
  fakv.store %acc, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x128xf32>, !fakv.ptr<f32>
  return
}
