// CPU execution of fakv.reduce: sum, max and min along either axis, with a
// row of -inf (masked-out scores) in the input. Expected: reference.py (reduce).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/reduce.expected

// out[0:4] = sum over axis 1, out[4:10] = sum over axis 0, out[10:14] = max
// over axis 1, out[14:20] = min over axis 0, of x = in (3x6) with a 4th row
// of -inf.
func.func @reduce(%in: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c3 = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %c6 = arith.constant 6 : i32
  %c10 = arith.constant 10 : i32
  %c14 = arith.constant 14 : i32
  %s1 = arith.constant 1 : i64
  %s6 = arith.constant 6 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %x = fakv.load %in[%c0, %c0] strides [%s6, %s1] bounds [%c3, %c6] other %ninf
         : !fakv.ptr<f32> -> tensor<4x6xf32>
  %sum1 = fakv.reduce sum %x, 1 : tensor<4x6xf32> -> tensor<4xf32>
  %sum0 = fakv.reduce sum %x, 0 : tensor<4x6xf32> -> tensor<6xf32>
  %max1 = fakv.reduce max %x, 1 : tensor<4x6xf32> -> tensor<4xf32>
  %min0 = fakv.reduce min %x, 0 : tensor<4x6xf32> -> tensor<6xf32>
  fakv.store %sum1, %out[%c0] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  fakv.store %sum0, %out[%c4] strides [%s1] : tensor<6xf32>, !fakv.ptr<f32>
  fakv.store %max1, %out[%c10] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  fakv.store %min0, %out[%c14] strides [%s1] : tensor<6xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %in = memref.alloc() : memref<18xf32>
  %out = memref.alloc() : memref<20xf32>
  %seed = arith.constant 20 : i64
  %din = memref.cast %in : memref<18xf32> to memref<?xf32>
  func.call @fill_f32(%din, %seed) : (memref<?xf32>, i64) -> ()
  %pin = fakv.ptr_of %in : memref<18xf32> -> !fakv.ptr<f32>
  %pout = fakv.ptr_of %out : memref<20xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @reduce[%g, %g, %g](%pin, %pout) : (!fakv.ptr<f32>, !fakv.ptr<f32>)
  %d = memref.cast %out : memref<20xf32> to memref<?xf32>
  func.call @print_f32(%d) : (memref<?xf32>) -> ()
  return
}
