// A dot whose operands are plain loads (registers), not paged loads.
module {
  func.func @k(%Q: !fakv.ptr<bf16>, %K: !fakv.ptr<bf16>, %O: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c1 = arith.constant 0 : i32
  %c2 = arith.constant 0 : i32
  %c3 = arith.constant 128 : i64
  %c4 = arith.constant 1 : i64
  %v5 = fakv.load %Q[%c1, %c2] strides [%c3, %c4] : !fakv.ptr<bf16> -> tensor<64x128xbf16>
  %c6 = arith.constant 0 : i32
  %c7 = arith.constant 0 : i32
  %c8 = arith.constant 128 : i64
  %c9 = arith.constant 1 : i64
  %v10 = fakv.load %K[%c6, %c7] strides [%c8, %c9] : !fakv.ptr<bf16> -> tensor<32x128xbf16>
  %c11 = arith.constant 0.0 : f32
  %v12 = fakv.splat %c11 : f32 -> tensor<64x32xf32>
  %v13 = fakv.dot %v5, %v10, %v12 {transpose_b} : tensor<64x128xbf16>, tensor<32x128xbf16> -> tensor<64x32xf32>
  %c14 = arith.constant 0 : i32
  %c15 = arith.constant 0 : i32
  %c16 = arith.constant 32 : i64
  %c17 = arith.constant 1 : i64
  fakv.store %v13, %O[%c14, %c15] strides [%c16, %c17] : tensor<64x32xf32>, !fakv.ptr<f32>
    return
  }
}

