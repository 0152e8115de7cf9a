// CPU execution of fakv.reduce where the reduction's starting value shows.
// A float sum starts from -0.0 (the identity that keeps signs): a row of
//   -0.0s sums to -0.0 (1 / sum = -inf), as on the GPU, which starts from the
//   first element; a row with one +0.0 sums to +0.0 (1 / sum = +inf).
// An i32 max starts from INT_MIN, a min from INT_MAX, a sum from 0 (wrapping):
//   rows all negative, all positive, and [INT_MIN, INT_MAX, 1, -1].
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | FileCheck %s
// CHECK: data =
// CHECK-NEXT: [-inf,  inf]
// CHECK: data =
// CHECK-NEXT: [-3,  9,  2147483647,  -9,  3,  -2147483648,  -24,  24,  -1]

func.func @fsum(%in: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %x = fakv.load %in[%c0, %c0] strides [%s4, %s1] : !fakv.ptr<f32> -> tensor<2x4xf32>
  %sum = fakv.reduce sum %x, 1 : tensor<2x4xf32> -> tensor<2xf32>
  %one = arith.constant dense<1.0> : tensor<2xf32>
  %inv = arith.divf %one, %sum : tensor<2xf32>
  fakv.store %inv, %out[%c0] strides [%s1] : tensor<2xf32>, !fakv.ptr<f32>
  return
}

// out[0:3] = max over axis 1, out[3:6] = min, out[6:9] = sum.
func.func @isum(%in: !fakv.ptr<i32>, %out: !fakv.ptr<i32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c3 = arith.constant 3 : i32
  %c6 = arith.constant 6 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %x = fakv.load %in[%c0, %c0] strides [%s4, %s1] : !fakv.ptr<i32> -> tensor<3x4xi32>
  %max = fakv.reduce max %x, 1 : tensor<3x4xi32> -> tensor<3xi32>
  %min = fakv.reduce min %x, 1 : tensor<3x4xi32> -> tensor<3xi32>
  %sum = fakv.reduce sum %x, 1 : tensor<3x4xi32> -> tensor<3xi32>
  fakv.store %max, %out[%c0] strides [%s1] : tensor<3xi32>, !fakv.ptr<i32>
  fakv.store %min, %out[%c3] strides [%s1] : tensor<3xi32>, !fakv.ptr<i32>
  fakv.store %sum, %out[%c6] strides [%s1] : tensor<3xi32>, !fakv.ptr<i32>
  return
}

memref.global "private" constant @F : memref<8xf32> = dense<[-0.0, -0.0, -0.0, -0.0, -0.0, 0.0, -0.0, -0.0]>
memref.global "private" constant @I : memref<12xi32> = dense<[-5, -3, -9, -7, 5, 3, 9, 7, -2147483648, 2147483647, 1, -1]>

func.func private @printMemrefI32(memref<*xi32>)

func.func @main() {
  %g = arith.constant 1 : i32
  %F = memref.get_global @F : memref<8xf32>
  %pf = fakv.ptr_of %F : memref<8xf32> -> !fakv.ptr<f32>
  %of = memref.alloc() : memref<2xf32>
  %pof = fakv.ptr_of %of : memref<2xf32> -> !fakv.ptr<f32>
  fakv.launch @fsum[%g, %g, %g](%pf, %pof) : (!fakv.ptr<f32>, !fakv.ptr<f32>)
  %df = memref.cast %of : memref<2xf32> to memref<?xf32>
  func.call @print_f32(%df) : (memref<?xf32>) -> ()
  %I = memref.get_global @I : memref<12xi32>
  %pi = fakv.ptr_of %I : memref<12xi32> -> !fakv.ptr<i32>
  %oi = memref.alloc() : memref<9xi32>
  %poi = fakv.ptr_of %oi : memref<9xi32> -> !fakv.ptr<i32>
  fakv.launch @isum[%g, %g, %g](%pi, %poi) : (!fakv.ptr<i32>, !fakv.ptr<i32>)
  %di = memref.cast %oi : memref<9xi32> to memref<*xi32>
  func.call @printMemrefI32(%di) : (memref<*xi32>) -> ()
  return
}
