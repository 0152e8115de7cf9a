// fakv-assign-layouts with `fakv.swap_ab`: every dot of the kernel takes the
// swapped accumulator layout, or none does. Here Q.K^T has 16 columns (the
// swapped form needs multiples of 64: wgmma's M), so P.V does not swap either
// (its A, P, 16 columns, could not be wgmma's B in shared memory anyway), and
// P stays in registers as the plain form's A (no stored_rows).
// (The swapped case: test/lowering/swapped-dot-to-ptx.mlir.)
// RUN: fakv-opt %s --split-input-file --fakv-assign-layouts | FileCheck %s

// CHECK-LABEL: func.func @sixteen_keys
// CHECK-NOT: stored_rows
// CHECK: fakv.dot {{.*}} -> tensor<4x16xf32, #[[S:linear[0-9]*]]>
// CHECK-NOT: convert_layout {{.*}} tensor<4x16xbf16
// CHECK: fakv.dot {{.*}} : tensor<4x16xbf16, #[[S]]>, {{.*}} -> tensor<4x128xf32
func.func @sixteen_keys(%q: !fakv.ptr<bf16>, %k: !fakv.ptr<bf16>, %v: !fakv.ptr<bf16>,
                        %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.swap_ab} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s128 = arith.constant 128 : i64
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<4x128xbf16>
  %kt = fakv.load %k[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<16x128xbf16>
  %vt = fakv.load %v[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<16x128xbf16>
  %s0 = fakv.splat %zero : f32 -> tensor<4x16xf32>
  %s = fakv.dot %qt, %kt, %s0 {transpose_b} : tensor<4x128xbf16>, tensor<16x128xbf16> -> tensor<4x16xf32>
  %p = fakv.cast %s : tensor<4x16xf32> -> tensor<4x16xbf16>
  %a0 = fakv.splat %zero : f32 -> tensor<4x128xf32>
  %out = fakv.dot %p, %vt, %a0 : tensor<4x16xbf16>, tensor<16x128xbf16> -> tensor<4x128xf32>
  fakv.store %out, %o[%c0, %c0] strides [%s128, %s1] : tensor<4x128xf32>, !fakv.ptr<f32>
  return
}

// -----

// 64 rows are wgmma's own M: not swapped (the lowering swaps only dots of
// fewer rows), the accumulator's warps along the rows, A in shared memory
// whole (no stored_rows).
// CHECK: #[[ACC:linear[0-9]*]] = #fakvgpu.linear<regs = {{.*}}, warps = {{\[\[}}16, 0], {{\[}}32, 0]]>
// CHECK-LABEL: func.func @sixty_four_rows
// CHECK-NOT: stored_rows
// CHECK: fakv.dot {{.*}} -> tensor<64x64xf32, #[[ACC]]>
func.func @sixty_four_rows(%q: !fakv.ptr<bf16>, %k: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>)
    attributes {fakv.kernel, fakv.swap_ab} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s128 = arith.constant 128 : i64
  %s64 = arith.constant 64 : i64
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<64x128xbf16>
  %kt = fakv.load %k[%c0, %c0] strides [%s128, %s1] : !fakv.ptr<bf16> -> tensor<64x128xbf16>
  %s0 = fakv.splat %zero : f32 -> tensor<64x64xf32>
  %s = fakv.dot %qt, %kt, %s0 {transpose_b} : tensor<64x128xbf16>, tensor<64x128xbf16> -> tensor<64x64xf32>
  fakv.store %s, %o[%c0, %c0] strides [%s64, %s1] : tensor<64x64xf32>, !fakv.ptr<f32>
  return
}
