// fakv-assign-layouts' defaults: a tile constant with several users becomes
// one per user (each takes its user's layout: the zeros of a wgmma
// accumulator and of a plain sum), and tiles nobody constrains take a
// blocked layout largest first, so the small ones feeding a big one inherit
// its layout instead of the big one being converted (a merge of split
// partials: (4, 8) weights times (4, 8, 128) partials, summed over splits).
// RUN: fakv-opt %s --split-input-file --fakv-assign-layouts | FileCheck %s

// CHECK-LABEL: func.func @shared_zeros
// CHECK-COUNT-2: arith.constant dense<0.000000e+00> : tensor<64x64xf32
// CHECK-NOT: fakvgpu.convert_layout {{.*}}xf32
// CHECK: return
func.func @shared_zeros(%a: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %z = arith.constant dense<0.0> : tensor<64x64xf32>
  %q = fakv.load %a[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %d = fakv.dot %q, %q, %z {transpose_b} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  %x = fakv.load %o[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<f32> -> tensor<64x64xf32>
  %y = arith.addf %x, %z : tensor<64x64xf32>
  fakv.store %d, %o[%c0, %c0] strides [%s64, %s1] : tensor<64x64xf32>, !fakv.ptr<f32>
  fakv.store %y, %o[%c0, %c0] strides [%s64, %s1] : tensor<64x64xf32>, !fakv.ptr<f32>
  return
}

// -----

// The (4, 8) tiles take the (4, 8, 128) partials' layout, sliced (the weights' exp and expand_dims feed the
// broadcast without a conversion): each tile with a layout, none converted.
// CHECK-LABEL: func.func @largest_first
// CHECK-NOT: fakvgpu.convert_layout
// CHECK: fakv.load {{.*}} -> tensor<4x8xf32, #linear
// CHECK-NOT: fakvgpu.convert_layout
// CHECK: fakv.load {{.*}} -> tensor<4x8x128xf32, [[PARTS:#linear[0-9]*]]>
// CHECK-NOT: fakvgpu.convert_layout
// CHECK: fakv.broadcast {{.*}} -> tensor<4x8x128xf32, [[PARTS]]>
// CHECK-NOT: fakvgpu.convert_layout
// CHECK: return
func.func @largest_first(%lse: !fakv.ptr<f32>, %parts: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s8 = arith.constant 8 : i64
  %s128 = arith.constant 128 : i64
  %s1024 = arith.constant 1024 : i64
  %l = fakv.load %lse[%c0, %c0] strides [%s8, %s1] : !fakv.ptr<f32> -> tensor<4x8xf32>
  %p = fakv.load %parts[%c0, %c0, %c0] strides [%s1024, %s128, %s1] : !fakv.ptr<f32> -> tensor<4x8x128xf32>
  %w = math.exp %l : tensor<4x8xf32>
  %w3 = fakv.expand_dims %w, 2 : tensor<4x8xf32> -> tensor<4x8x1xf32>
  %wb = fakv.broadcast %w3 : tensor<4x8x1xf32> -> tensor<4x8x128xf32>
  %m = arith.mulf %p, %wb : tensor<4x8x128xf32>
  %s = fakv.reduce sum %m, 1 : tensor<4x8x128xf32> -> tensor<4x128xf32>
  fakv.store %s, %out[%c0, %c0] strides [%s128, %s1] : tensor<4x128xf32>, !fakv.ptr<f32>
  return
}

// -----

// N = 256 is wgmma's widest: accepted; an f16 dot too.
// CHECK-LABEL: func.func @n256_f16(
// CHECK: fakv.dot {{.*}} : tensor<16x64xf16, #shared>, tensor<256x64xf16, #shared> -> tensor<16x256xf32
func.func @n256_f16(%q: !fakv.ptr<f16>, %k: !fakv.ptr<f16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %s256 = arith.constant 256 : i64
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<f16> -> tensor<16x64xf16>
  %kt = fakv.load %k[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<f16> -> tensor<256x64xf16>
  %s0 = fakv.splat %zero : f32 -> tensor<16x256xf32>
  %s = fakv.dot %qt, %kt, %s0 {transpose_b} : tensor<16x64xf16>, tensor<256x64xf16> -> tensor<16x256xf32>
  fakv.store %s, %o[%c0, %c0] strides [%s256, %s1] : tensor<16x256xf32>, !fakv.ptr<f32>
  return
}
