// A kernel asking fakv-pack-gqa to pack its query heads (fakv.pack_gqa) that reaches the GPU lowering without
// that pass computes each head in its own program, as written; the request was left on the converted function,
// which the verifier refused ("'fakv.pack_gqa' applies to fakv kernels").
// RUN: fakv-opt %s --fakv-assign-layouts --fakvgpu-to-llvm | FileCheck %s --implicit-check-not=fakv.pack_gqa

// CHECK: gpu.module @fakv_kernels
// CHECK: llvm.func @request(
func.func @request(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %z = arith.constant 0.0 : f32
  %t = fakv.splat %z : f32 -> tensor<16xf32>
  fakv.store %t, %out[%c0] strides [%s1] : tensor<16xf32>, !fakv.ptr<f32>
  return
}
