// CPU execution at the edges of two ops' ranges.
// window_mask: q - left and q + right saturate instead of wrapping i32.
//   Rows 0, 1 at offset 2 (q = 2, 3), left 1, right 2147483647: keys >= q - 1
//   visible, no right bound. Then offset -5 (q = -5, -4), left 2147483647
//   (q - left below i32: no left bound), right 7: keys <= q + 7 = 2, 3.
// cast f64 -> bf16 rounds once: 1 + 2^-8 + 2^-30 (just above a bf16 tie)
//   is 1 + 2^-7 = 1.0078125, not 1 (rounded to f32 first: on the tie, to
//   even); 1 + 2^-8 (the tie itself) is 1; f64 -> f16 of 1 + 2^-11 + 2^-40
//   is 1 + 2^-10.
// arith.fptosi f32 -> i32 on a tile saturates as the GPU's cvt.rzi does:
//   2^31 (exactly the top bound, first float past INT_MAX) and 3e9 give
//   INT_MAX, -2^31 and -3e9 INT_MIN, NaN 0, 2^31 - 128 (the largest f32
//   below 2^31) itself, +-1.5 truncate to +-1. (x86's cvttss2si gives
//   INT_MIN for 2^31: only a compare x >= 2^31, not x > 2^31, saturates it.)
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | FileCheck %s
// CHECK: data =
// CHECK-NEXT: [-inf,  0,  0,  0,  -inf,  -inf,  0,  0]
// CHECK: data =
// CHECK-NEXT: [0,  0,  0,  -inf,  0,  0,  0,  0]
// CHECK: data =
// CHECK-NEXT: [1.00781,  1,  1.00098]
// CHECK: data =
// CHECK-NEXT: [2147483647,  2147483647,  -2147483648,  -2147483648,  0,  2147483520,  1,  -1]

func.func @window(%out: !fakv.ptr<f32>, %off: i32, %left: i32, %right: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %z = arith.constant 0.0 : f32
  %s = fakv.splat %z : f32 -> tensor<2x4xf32>
  %r = fakv.arange 0 to 2 : tensor<2xi32>
  %c = fakv.arange 0 to 4 : tensor<4xi32>
  %w = fakv.window_mask %s, %r, %c, %off, %left, %right : tensor<2x4xf32>, tensor<2xi32>, tensor<4xi32>
  fakv.store %w, %out[%c0, %c0] strides [%s4, %s1] : tensor<2x4xf32>, !fakv.ptr<f32>
  return
}

func.func @casts(%x: !fakv.ptr<f64>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %x[%c0] strides [%s1] : !fakv.ptr<f64> -> tensor<2xf64>
  %b = fakv.cast %t : tensor<2xf64> -> tensor<2xbf16>
  %bf = fakv.cast %b : tensor<2xbf16> -> tensor<2xf32>
  fakv.store %bf, %out[%c0] strides [%s1] : tensor<2xf32>, !fakv.ptr<f32>
  %u = fakv.load %x[%c2] strides [%s1] : !fakv.ptr<f64> -> tensor<1xf64>
  %h = fakv.cast %u : tensor<1xf64> -> tensor<1xf16>
  %hf = fakv.cast %h : tensor<1xf16> -> tensor<1xf32>
  fakv.store %hf, %out[%c2] strides [%s1] : tensor<1xf32>, !fakv.ptr<f32>
  return
}

memref.global "private" constant @X : memref<3xf64> = dense<[1.0039062509313226, 1.00390625, 1.0004882812509095]>

func.func @to_int(%x: !fakv.ptr<f32>, %out: !fakv.ptr<i32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %x[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<8xf32>
  %i = arith.fptosi %t : tensor<8xf32> to tensor<8xi32>
  fakv.store %i, %out[%c0] strides [%s1] : tensor<8xi32>, !fakv.ptr<i32>
  return
}

// 2^31, 3e9, -2^31, -3e9, NaN, 2^31 - 128, 1.5, -1.5
memref.global "private" constant @F : memref<8xf32> = dense<[2147483648.0, 3.0e9, -2147483648.0, -3.0e9, 0x7FC00000, 2147483520.0, 1.5, -1.5]>

func.func private @printMemrefI32(memref<*xi32>)

func.func @main() {
  %g = arith.constant 1 : i32
  %max = arith.constant 2147483647 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %cm5 = arith.constant -5 : i32
  %c7 = arith.constant 7 : i32
  %w1 = memref.alloc() : memref<8xf32>
  %p1 = fakv.ptr_of %w1 : memref<8xf32> -> !fakv.ptr<f32>
  fakv.launch @window[%g, %g, %g](%p1, %c2, %c1, %max) : (!fakv.ptr<f32>, i32, i32, i32)
  %w2 = memref.alloc() : memref<8xf32>
  %p2 = fakv.ptr_of %w2 : memref<8xf32> -> !fakv.ptr<f32>
  fakv.launch @window[%g, %g, %g](%p2, %cm5, %max, %c7) : (!fakv.ptr<f32>, i32, i32, i32)
  %d1 = memref.cast %w1 : memref<8xf32> to memref<?xf32>
  func.call @print_f32(%d1) : (memref<?xf32>) -> ()
  %d2 = memref.cast %w2 : memref<8xf32> to memref<?xf32>
  func.call @print_f32(%d2) : (memref<?xf32>) -> ()
  %X = memref.get_global @X : memref<3xf64>
  %px = fakv.ptr_of %X : memref<3xf64> -> !fakv.ptr<f64>
  %o = memref.alloc() : memref<3xf32>
  %po = fakv.ptr_of %o : memref<3xf32> -> !fakv.ptr<f32>
  fakv.launch @casts[%g, %g, %g](%px, %po) : (!fakv.ptr<f64>, !fakv.ptr<f32>)
  %d3 = memref.cast %o : memref<3xf32> to memref<?xf32>
  func.call @print_f32(%d3) : (memref<?xf32>) -> ()
  %F = memref.get_global @F : memref<8xf32>
  %pf = fakv.ptr_of %F : memref<8xf32> -> !fakv.ptr<f32>
  %oi = memref.alloc() : memref<8xi32>
  %poi = fakv.ptr_of %oi : memref<8xi32> -> !fakv.ptr<i32>
  fakv.launch @to_int[%g, %g, %g](%pf, %poi) : (!fakv.ptr<f32>, !fakv.ptr<i32>)
  %d4 = memref.cast %oi : memref<8xi32> to memref<*xi32>
  func.call @printMemrefI32(%d4) : (memref<*xi32>) -> ()
  return
}
