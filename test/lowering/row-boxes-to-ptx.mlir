// `fakv.row_boxes`: the tile of two pages of 16 rows and 128 channels
// (tma-small-pages-to-ptx.mlir's kernel, twice as wide) goes by TMA a box
// per page as before, but each page's two 64-channel parts one after the
// other (page 0's channels 0-63 then 64-127, then page 1's), not every
// page's first 64 channels and then the rest. The PTX passes ptxas for
// sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK-LABEL: .entry row_boxes(
// CHECK: mbarrier.arrive.expect_tx
// CHECK: cp.async.bulk.tensor.4d{{.*}}, {[[C0:%r[0-9]+]], [[H:%r[0-9]+]], [[R0:%r[0-9]+]], [[P0:%r[0-9]+]]}]
// CHECK: cp.async.bulk.tensor.4d{{.*}}, {[[C1:%r[0-9]+]], [[H]], [[R0]], [[P0]]}]
// CHECK: cp.async.bulk.tensor.4d{{.*}}, {[[C0]], [[H]], [[R1:%r[0-9]+]], [[P1:%r[0-9]+]]}]
// CHECK: cp.async.bulk.tensor.4d{{.*}}, {[[C1]], [[H]], [[R1]], [[P1]]}]

// The same at the LLVM level, with the numbers: a box's second 64 channels
// start at channel 64 and land a panel (32 rows x 128 bytes) on in the
// slot, the second page's box 16 rows (2048 bytes) on. Q.Kᵀ's A (Q padded to
// wgmma's 64 rows, two panels of 64 x 128 bytes) steps 32 bytes per k-slice of 16
// channels within a panel and 8192 bytes to the next panel; B (K's 32
// rows) 32 bytes and 4096: descriptor units of 16 bytes.
// RUN: fakv-opt %s --fakv-to-fakvgpu --fakvgpu-to-llvm | FileCheck %s --check-prefix=LLVM
// LLVM-LABEL: llvm.func @row_boxes(
// LLVM-DAG: %[[A1:[0-9]+]] = llvm.mlir.constant(2 : i64) : i64
// LLVM-DAG: %[[A2:[0-9]+]] = llvm.mlir.constant(4 : i64) : i64
// LLVM-DAG: %[[A3:[0-9]+]] = llvm.mlir.constant(6 : i64) : i64
// LLVM-DAG: %[[A4:[0-9]+]] = llvm.mlir.constant(512 : i64) : i64
// LLVM-DAG: %[[A5:[0-9]+]] = llvm.mlir.constant(514 : i64) : i64
// LLVM-DAG: %[[A6:[0-9]+]] = llvm.mlir.constant(516 : i64) : i64
// LLVM-DAG: %[[A7:[0-9]+]] = llvm.mlir.constant(518 : i64) : i64
// LLVM-DAG: %[[B4:[0-9]+]] = llvm.mlir.constant(256 : i64) : i64
// LLVM-DAG: %[[B5:[0-9]+]] = llvm.mlir.constant(258 : i64) : i64
// LLVM-DAG: %[[B6:[0-9]+]] = llvm.mlir.constant(260 : i64) : i64
// LLVM-DAG: %[[B7:[0-9]+]] = llvm.mlir.constant(262 : i64) : i64
// LLVM-DAG: %[[ZERO:[0-9]+]] = llvm.mlir.constant(0 : i32) : i32
// LLVM-DAG: %[[C64:[0-9]+]] = llvm.mlir.constant(64 : i32) : i32
// LLVM: nvvm.mbarrier.arrive.expect_tx
// LLVM-NEXT: %[[D0:[0-9]+]] = llvm.addrspacecast %[[SLOT:[0-9]+]] : !llvm.ptr<3> to !llvm.ptr<7>
// LLVM-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D0]], %{{.*}}, %{{.*}}, box[%[[ZERO]], %[[H:[0-9]+]], %[[R0:[0-9]+]], %[[P0:[0-9]+]]]
// LLVM-NEXT: %[[G1:[0-9]+]] = llvm.getelementptr %[[SLOT]][4096]
// LLVM-NEXT: %[[D1:[0-9]+]] = llvm.addrspacecast %[[G1]]
// LLVM-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D1]], %{{.*}}, %{{.*}}, box[%[[C64]], %[[H]], %[[R0]], %[[P0]]]
// LLVM-NEXT: %[[G2:[0-9]+]] = llvm.getelementptr %[[SLOT]][2048]
// LLVM-NEXT: %[[D2:[0-9]+]] = llvm.addrspacecast %[[G2]]
// LLVM-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D2]], %{{.*}}, %{{.*}}, box[%[[ZERO]], %[[H]], %[[R1:[0-9]+]], %[[P1:[0-9]+]]]
// LLVM-NEXT: %[[G3:[0-9]+]] = llvm.getelementptr %[[SLOT]][6144]
// LLVM-NEXT: %[[D3:[0-9]+]] = llvm.addrspacecast %[[G3]]
// LLVM-NEXT: nvvm.cp.async.bulk.tensor.shared.cluster.global %[[D3]], %{{.*}}, %{{.*}}, box[%[[C64]], %[[H]], %[[R1]], %[[P1]]]
// LLVM: nvvm.wgmma.fence.aligned
// LLVM: %[[DA:[0-9]+]] = llvm.or %{{.*}} : i64
// LLVM-NEXT: llvm.inline_asm {{.*}}m64n32k16{{.*}} %[[DA]], %[[DB:[0-9]+]], %{{.*}}
// LLVM: llvm.add %[[DA]], %[[A1]] : i64
// LLVM-NEXT: llvm.add %[[DB]], %[[A1]] : i64
// LLVM: llvm.add %[[DA]], %[[A2]] : i64
// LLVM-NEXT: llvm.add %[[DB]], %[[A2]] : i64
// LLVM: llvm.add %[[DA]], %[[A3]] : i64
// LLVM-NEXT: llvm.add %[[DB]], %[[A3]] : i64
// LLVM: llvm.add %[[DA]], %[[A4]] : i64
// LLVM-NEXT: llvm.add %[[DB]], %[[B4]] : i64
// LLVM: llvm.add %[[DA]], %[[A5]] : i64
// LLVM-NEXT: llvm.add %[[DB]], %[[B5]] : i64
// LLVM: llvm.add %[[DA]], %[[A6]] : i64
// LLVM-NEXT: llvm.add %[[DB]], %[[B6]] : i64
// LLVM: llvm.add %[[DA]], %[[A7]] : i64
// LLVM-NEXT: llvm.add %[[DB]], %[[B7]] : i64

func.func @row_boxes(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
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
