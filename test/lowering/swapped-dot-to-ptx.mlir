// A kernel with `fakv.swap_ab` (@fakv.jit(swap_ab=True)): its dots of 4
// rows run as wgmmas of their transposes. Q.K^T (4 x 64, K = 128): 8 wgmma
// m64n8k16 with the K tile as wgmma's A (K-major) and Q, stored with 8 rows,
// as its B; P.V (4 x 128, K = 64): P goes to shared memory (8 rows) and two
// chains of 4 m64n8k16 read V transposed, one per 64 columns. No 64-row
// wgmma is left. The PTX passes ptxas for sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s --implicit-check-not=m64n64k16 --implicit-check-not=m64n128k16 < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin
// RUN: fakv-opt %s --fakv-assign-layouts | FileCheck %s --check-prefix=LAYOUT
// RUN: fakv-opt %s --fakv-to-fakvgpu --fakvgpu-to-llvm | FileCheck %s --check-prefix=WIDE

// CHECK-LABEL: .entry swapped_attention(
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16
// CHECK: wgmma.wait_group.sync.aligned 0;
// CHECK: st.shared
// CHECK: bar.sync
// CHECK-COUNT-8: wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16
// CHECK: wgmma.wait_group.sync.aligned 0;

// The scores: element (row, key) where wgmma's accumulator holds (key, row)
// (rows past 4 repeat: lane bit 1); the output also one register bit per 64
// columns (the second chain's accumulator).
// LAYOUT: #[[S:linear[0-9]*]] = #fakvgpu.linear<regs = {{\[}}[1, 0], [0, 8]], lanes = {{\[}}[2, 0], [0, 0], [0, 1], [0, 2], [0, 4]], warps = {{\[}}[0, 16], [0, 32]]>
// LAYOUT: #[[O:linear[0-9]*]] = #fakvgpu.linear<regs = {{\[}}[1, 0], [0, 8], [0, 64]], lanes = {{\[}}[2, 0], [0, 0], [0, 1], [0, 2], [0, 4]], warps = {{\[}}[0, 16], [0, 32]]>
// LAYOUT: fakvgpu.convert_layout {{.*}} {fakvgpu.stored_rows = 8 : i64} : tensor<4x128xbf16
// LAYOUT: fakv.dot {{.*}} -> tensor<4x64xf32, #[[S]]>
// LAYOUT: fakvgpu.convert_layout {{.*}} {fakvgpu.stored_rows = 8 : i64} : tensor<4x64xbf16, #[[S]]>
// LAYOUT: fakv.dot {{.*}} -> tensor<4x128xf32, #[[O]]>

func.func @swapped_attention(%q: !fakv.ptr<bf16>, %k: !fakv.ptr<bf16>, %v: !fakv.ptr<bf16>,
                             %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.swap_ab} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s128 = arith.constant 128 : i64
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<4x128xbf16>
  %kt = fakv.load %k[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<64x128xbf16>
  %vt = fakv.load %v[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<64x128xbf16>
  %s0 = fakv.splat %zero : f32 -> tensor<4x64xf32>
  %s = fakv.dot %qt, %kt, %s0 {transpose_b} : tensor<4x128xbf16>, tensor<64x128xbf16> -> tensor<4x64xf32>
  %p = fakv.cast %s : tensor<4x64xf32> -> tensor<4x64xbf16>
  %a0 = fakv.splat %zero : f32 -> tensor<4x128xf32>
  %out = fakv.dot %p, %vt, %a0 : tensor<4x64xbf16>, tensor<64x128xbf16> -> tensor<4x128xf32>
  fakv.store %out, %o[%c0, %c0] strides [%s128, %s1] : tensor<4x128xf32>, !fakv.ptr<f32>
  return
}

// A swapped Q.K^T of 128 keys (@swapped_wide): two chains of wgmma, the
// second reading K's rows 64.. as its A, 64 x 128 bytes (512 descriptor
// units) into each panel of K: advances 512 + {0, 2, 4, 6} in the first
// panel, 1536 + {0, 2, 4, 6} in the second (panels of 128 rows, 1024
// units). Q (4 rows, stored as wgmma's 8) is written to shared memory
// twice, rows r and r + 4.
// WIDE-LABEL: llvm.func @swapped_wide(
// WIDE-DAG: llvm.mlir.constant(512 : i64) : i64
// WIDE-DAG: llvm.mlir.constant(514 : i64) : i64
// WIDE-DAG: llvm.mlir.constant(516 : i64) : i64
// WIDE-DAG: llvm.mlir.constant(518 : i64) : i64
// WIDE-DAG: llvm.mlir.constant(1536 : i64) : i64
// WIDE-DAG: llvm.mlir.constant(1538 : i64) : i64
// WIDE-DAG: llvm.mlir.constant(1540 : i64) : i64
// WIDE-DAG: llvm.mlir.constant(1542 : i64) : i64
// WIDE-DAG: %[[FOUR:[0-9]+]] = llvm.mlir.constant(4 : i32) : i32
// WIDE: llvm.store %[[QV:[0-9]+]], %{{[0-9]+}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<3>
// WIDE-NEXT: %{{[0-9]+}} = llvm.add %{{[0-9]+}}, %[[FOUR]] : i32
// WIDE: llvm.store %[[QV]], %{{[0-9]+}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<3>
func.func @swapped_wide(%q: !fakv.ptr<bf16>, %k: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.swap_ab} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s128 = arith.constant 128 : i64
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<4x128xbf16>
  %kt = fakv.load %k[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<128x128xbf16>
  %s0 = fakv.splat %zero : f32 -> tensor<4x128xf32>
  %s = fakv.dot %qt, %kt, %s0 {transpose_b} : tensor<4x128xbf16>, tensor<128x128xbf16> -> tensor<4x128xf32>
  fakv.store %s, %o[%c0, %c0] strides [%s128, %s1] : tensor<4x128xf32>, !fakv.ptr<f32>
  return
}
