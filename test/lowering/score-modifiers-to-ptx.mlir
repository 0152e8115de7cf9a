// The score modifiers on the GPU: masks become selects, softcap the PTX
// tanh.approx.f32 (LLVM 22 has no NVVM intrinsic for it), ALiBi the slope
// times the distance's absolute value; the PTX passes ptxas for sm_90a.
// Each of the 128 threads holds 16 of the 64x32 scores: 16 tanh (softcap),
// 16 abs (ALiBi), 48 selects (softcap's, the window's) and 16 predicate
// ands (the length mask's compare joined to the window's).
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: FileCheck %s --check-prefix=TANH < %t.ptx
// RUN: FileCheck %s --check-prefix=ABS < %t.ptx
// RUN: FileCheck %s --check-prefix=SELP < %t.ptx
// RUN: FileCheck %s --check-prefix=AND < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK: .entry score_modifiers(
// CHECK: tanh.approx.f32
// CHECK: ret;
// TANH-COUNT-16: tanh.approx.f32
// TANH-NOT: tanh.approx.f32
// ABS-COUNT-16: abs.s32
// ABS-NOT: abs.s32
// SELP-COUNT-48: selp.f32
// SELP-NOT: selp.f32
// AND-COUNT-16: and.pred
// AND-NOT: and.pred
func.func @score_modifiers(%s: !fakv.ptr<f32>, %sl: !fakv.ptr<f32>, %out: !fakv.ptr<f32>,
                           %valid: i32, %off: i32, %cap: f32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s32 = arith.constant 32 : i64
  %left = arith.constant 8 : i32
  %right = arith.constant 0 : i32
  %scores = fakv.load %s[%c0, %c0] strides [%s32, %s1] : !fakv.ptr<f32> -> tensor<64x32xf32>
  %slopes = fakv.load %sl[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<64xf32>
  %r = fakv.arange 0 to 64 : tensor<64xi32>
  %c = fakv.arange 0 to 32 : tensor<32xi32>
  %t0 = fakv.softcap %scores, %cap : tensor<64x32xf32>
  %t1 = fakv.alibi %t0, %r, %c, %off, %slopes : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>, tensor<64xf32>
  %t2 = fakv.window_mask %t1, %r, %c, %off, %left, %right : tensor<64x32xf32>, tensor<64xi32>, tensor<32xi32>
  %t3 = fakv.length_mask %t2, %c, %valid : tensor<64x32xf32>, tensor<32xi32>
  fakv.store %t3, %out[%c0, %c0] strides [%s32, %s1] : tensor<64x32xf32>, !fakv.ptr<f32>
  return
}
