// The math ops convert-gpu-to-nvvm leaves alone (ctlz, cttz, ctpop on
// integers, trunc on floats), on tiles and scalars: the LLVM intrinsics,
// so PTX's clz / popc / cvt.rzi (they reached LLVM IR translation as math
// ops: "missing LLVMTranslationDialectInterface").
// RUN: fakv-opt %s --fakv-to-cubin=format=isa | FileCheck %s

// CHECK-LABEL: .entry integer_math(
// CHECK-DAG: clz.b32
// CHECK-DAG: popc.b32
// CHECK-DAG: cvt.rzi.f32.f32
// CHECK: ret;
func.func @integer_math(%x: !fakv.ptr<i32>, %f: !fakv.ptr<f32>, %o: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %a = fakv.load %x[%c0] strides [%s1] bounds [%n] : !fakv.ptr<i32> -> tensor<128xi32>
  %b = fakv.load %f[%c0] strides [%s1] bounds [%n] : !fakv.ptr<f32> -> tensor<128xf32>
  %lz = math.ctlz %a : tensor<128xi32>
  %tz = math.cttz %a : tensor<128xi32>
  %pc = math.ctpop %a : tensor<128xi32>
  %tr = math.trunc %b : tensor<128xf32>
  %ti = arith.fptosi %tr : tensor<128xf32> to tensor<128xi32>
  %sz = math.ctlz %n : i32
  %st = fakv.splat %sz : i32 -> tensor<128xi32>
  %r0 = arith.addi %lz, %tz : tensor<128xi32>
  %r1 = arith.addi %r0, %pc : tensor<128xi32>
  %r2 = arith.addi %r1, %ti : tensor<128xi32>
  %r3 = arith.addi %r2, %st : tensor<128xi32>
  fakv.store %r3, %o[%c0] strides [%s1] bounds [%n] : tensor<128xi32>, !fakv.ptr<i32>
  return
}
