// The hand-written kernels in kernels/ verify and round-trip (custom and
// generic forms). Their CPU runs are test/cpu/decode_*.mlir.
// RUN: fakv-opt %kernels/decode.mlir | fakv-opt | FileCheck %s --check-prefix=DECODE
// RUN: fakv-opt %kernels/decode.mlir --mlir-print-op-generic | fakv-opt | FileCheck %s --check-prefix=DECODE
// RUN: fakv-opt %kernels/combine.mlir | fakv-opt | FileCheck %s --check-prefix=COMBINE
// RUN: fakv-opt %kernels/combine.mlir --mlir-print-op-generic | fakv-opt | FileCheck %s --check-prefix=COMBINE

// DECODE-LABEL: func.func @decode(
// DECODE-SAME: attributes {fakv.kernel}
// DECODE: fakv.load %{{.*}} : !fakv.ptr<bf16> -> tensor<4x4x64xbf16>
// DECODE: fakv.reshape %{{.*}} : tensor<4x4x64xbf16> -> tensor<16x64xbf16>
// DECODE: scf.for
// DECODE: fakv.paged_load %{{.*}} table %{{.*}} : !fakv.ptr<bf16> -> tensor<32x64xbf16>
// DECODE: fakv.paged_load %{{.*}} table %{{.*}} : !fakv.ptr<bf16> -> tensor<32x64xbf16>
// DECODE: fakv.dot %{{.*}} {transpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xf32>
// DECODE: fakv.length_mask
// DECODE: fakv.causal_mask
// DECODE: fakv.online_softmax %{{.*}} scale %{{.*}} : tensor<16x32xf32>, tensor<16xf32>
// DECODE: fakv.dot %{{.*}} : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xf32>
// DECODE: scf.yield
// DECODE: scf.if
// DECODE: fakv.store {{.*}} : tensor<4x4x64xbf16>, !fakv.ptr<bf16>
// DECODE: } else {
// DECODE: fakv.store {{.*}} : tensor<4x4x64xf32>, !fakv.ptr<f32>

// COMBINE-LABEL: func.func @combine(
// COMBINE-SAME: attributes {fakv.kernel}
// COMBINE: fakv.load {{.*}} : !fakv.ptr<f32> -> tensor<8x4x64xf32>
// COMBINE: fakv.load {{.*}} other %{{.*}} : !fakv.ptr<f32> -> tensor<8x4xf32>
// COMBINE: fakv.lse_combine %{{.*}}, %{{.*}} : tensor<8x4x64xf32>, tensor<8x4xf32> -> tensor<4x64xf32>, tensor<4xf32>
// COMBINE: fakv.store {{.*}} : tensor<4x64xbf16>, !fakv.ptr<bf16>
// COMBINE: fakv.store {{.*}} : tensor<4xf32>, !fakv.ptr<f32>
