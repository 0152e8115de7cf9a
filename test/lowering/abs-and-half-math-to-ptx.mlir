// Integer absolute values of any width (convert-gpu-to-nvvm lowers i32's
// only, through libdevice; i8 and i64 reached LLVM IR translation as
// math.absi) and the approximate float functions of f16 / bf16 tiles
// (computed in f32, rounded back once; they were refused: "takes f32
// tiles"), on tiles and scalars.
// RUN: fakv-opt %s --fakv-to-cubin=format=isa | FileCheck %s

// CHECK-LABEL: .entry abs_widths(
// CHECK-DAG: abs.s64
// CHECK-DAG: abs.s16
// CHECK-DAG: abs.s32
// CHECK: ret;
func.func @abs_widths(%x: !fakv.ptr<i64>, %y: !fakv.ptr<i8>, %z: !fakv.ptr<i32>, %n: i32, %s: i64) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %a = fakv.load %x[%c0] strides [%s1] bounds [%n] : !fakv.ptr<i64> -> tensor<128xi64>
  %b = fakv.load %y[%c0] strides [%s1] bounds [%n] : !fakv.ptr<i8> -> tensor<128xi8>
  %c = fakv.load %z[%c0] strides [%s1] bounds [%n] : !fakv.ptr<i32> -> tensor<128xi32>
  %aa = math.absi %a : tensor<128xi64>
  %sa = math.absi %s : i64
  %st = fakv.splat %sa : i64 -> tensor<128xi64>
  %sum = arith.addi %aa, %st : tensor<128xi64>
  %ba = math.absi %b : tensor<128xi8>
  %ca = math.absi %c : tensor<128xi32>
  fakv.store %sum, %x[%c0] strides [%s1] bounds [%n] : tensor<128xi64>, !fakv.ptr<i64>
  fakv.store %ba, %y[%c0] strides [%s1] bounds [%n] : tensor<128xi8>, !fakv.ptr<i8>
  fakv.store %ca, %z[%c0] strides [%s1] bounds [%n] : tensor<128xi32>, !fakv.ptr<i32>
  return
}

// CHECK-LABEL: .entry half_math(
// CHECK-DAG: cvt.f32.bf16
// CHECK-DAG: cvt.f32.f16
// CHECK-DAG: ex2.approx.ftz.f32
// CHECK-DAG: tanh.approx.f32
// CHECK-DAG: cvt.rn.bf16.f32
// CHECK-DAG: cvt.rn.f16.f32
// exp(x) = 2^(x * log2 e), log(x) = log2(x) * ln 2 (the f32 constants
// 0x3FB8AA3B, 0x3F317218; the PTX is one string, tabs and newlines escaped):
// CHECK-DAG: mul.rn.f32 \09[[X2:%r[0-9]+]], %r{{[0-9]+}}, 0f3FB8AA3B;\0A\09ex2.approx.ftz.f32 \09%r{{[0-9]+}}, [[X2]];
// CHECK-DAG: lg2.approx.ftz.f32 \09[[L2:%r[0-9]+]], %r{{[0-9]+}};\0A\09mul.rn.f32 \09%r{{[0-9]+}}, [[L2]], 0f3F317218;
// CHECK: ret;
func.func @half_math(%x: !fakv.ptr<bf16>, %y: !fakv.ptr<f16>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %a = fakv.load %x[%c0] strides [%s1] bounds [%n] : !fakv.ptr<bf16> -> tensor<128xbf16>
  %b = fakv.load %y[%c0] strides [%s1] bounds [%n] : !fakv.ptr<f16> -> tensor<128xf16>
  %e = math.exp %a : tensor<128xbf16>
  %l = math.log %e : tensor<128xbf16>
  %t = math.tanh %b : tensor<128xf16>
  %e2 = math.exp2 %t : tensor<128xf16>
  %l2 = math.log2 %e2 : tensor<128xf16>
  fakv.store %l, %x[%c0] strides [%s1] bounds [%n] : tensor<128xbf16>, !fakv.ptr<bf16>
  fakv.store %l2, %y[%c0] strides [%s1] bounds [%n] : tensor<128xf16>, !fakv.ptr<f16>
  return
}
