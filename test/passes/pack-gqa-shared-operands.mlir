// fakv-pack-gqa recomputes a uniform tile at the packed shape once however many paths reach it: `u = u + u`
// twelve times made 2^12 copies of the chain (24 times: minutes and gigabytes). Twelve adds of the per-head
// tile stay (dead after packing), twelve of the packed one, and the last.
// RUN: fakv-opt %s --fakv-pack-gqa | FileCheck %s
// CHECK-COUNT-25: arith.addf
// CHECK-NOT: arith.addf

func.func @k(%q: !fakv.ptr<f32>, %o: !fakv.ptr<f32>, %x: f32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %s1 = arith.constant 1 : i64
  %kvh = arith.divsi %h, %c4 : i32
  %h64 = arith.extsi %h : i32 to i64
  %qp = fakv.addptr %q, %h64 : !fakv.ptr<f32>
  %op = fakv.addptr %o, %h64 : !fakv.ptr<f32>
  %t = fakv.load %qp[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<16xf32>
  %u0 = fakv.splat %x : f32 -> tensor<16xf32>
  %u1 = arith.addf %u0, %u0 : tensor<16xf32>
  %u2 = arith.addf %u1, %u1 : tensor<16xf32>
  %u3 = arith.addf %u2, %u2 : tensor<16xf32>
  %u4 = arith.addf %u3, %u3 : tensor<16xf32>
  %u5 = arith.addf %u4, %u4 : tensor<16xf32>
  %u6 = arith.addf %u5, %u5 : tensor<16xf32>
  %u7 = arith.addf %u6, %u6 : tensor<16xf32>
  %u8 = arith.addf %u7, %u7 : tensor<16xf32>
  %u9 = arith.addf %u8, %u8 : tensor<16xf32>
  %u10 = arith.addf %u9, %u9 : tensor<16xf32>
  %u11 = arith.addf %u10, %u10 : tensor<16xf32>
  %u12 = arith.addf %u11, %u11 : tensor<16xf32>
  %r = arith.addf %t, %u12 : tensor<16xf32>
  fakv.store %r, %op[%c0] strides [%s1] : tensor<16xf32>, !fakv.ptr<f32>
  return
}
