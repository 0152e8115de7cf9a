// CPU execution of fakv.lse_combine: 3 splits, 3 rows. Row 0 has one -inf
// split whose partial holds NaN (it must not be read into the sum); row 1 has
// finite LSEs only; row 2 is -inf in every split (output zeros, LSE -inf).
// Expected: reference.py (lse_combine).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/lse_combine.expected

// parts: 3 x 3 x 4 (split, row, channel); lses: 3 x 3. out = [o(12), lse(3)].
func.func @lse_combine(%parts: !fakv.ptr<f32>, %lses: !fakv.ptr<f32>, %out: !fakv.ptr<f32>)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c12 = arith.constant 12 : i32
  %s1 = arith.constant 1 : i64
  %s3 = arith.constant 3 : i64
  %s4 = arith.constant 4 : i64
  %s12 = arith.constant 12 : i64
  %p = fakv.load %parts[%c0, %c0, %c0] strides [%s12, %s4, %s1] : !fakv.ptr<f32> -> tensor<3x3x4xf32>
  %l = fakv.load %lses[%c0, %c0] strides [%s3, %s1] : !fakv.ptr<f32> -> tensor<3x3xf32>
  %o, %lse = fakv.lse_combine %p, %l : tensor<3x3x4xf32>, tensor<3x3xf32> -> tensor<3x4xf32>, tensor<3xf32>
  fakv.store %o, %out[%c0, %c0] strides [%s4, %s1] : tensor<3x4xf32>, !fakv.ptr<f32>
  fakv.store %lse, %out[%c12] strides [%s1] : tensor<3xf32>, !fakv.ptr<f32>
  return
}

// lses[s][r]: row 0 = (0.5, -inf, 1.25), row 1 = (-3, 2, 0), row 2 = all -inf.
memref.global "private" constant @lses : memref<9xf32> =
  dense<[0.5, -3.0, 0xFF800000, 0xFF800000, 2.0, 0xFF800000, 1.25, 0.0, 0xFF800000]>

func.func @main() {
  %parts = memref.alloc() : memref<36xf32>
  %out = memref.alloc() : memref<15xf32>
  %seed = arith.constant 24 : i64
  %dp = memref.cast %parts : memref<36xf32> to memref<?xf32>
  func.call @fill_f32(%dp, %seed) : (memref<?xf32>, i64) -> ()
  // parts[1][0][:] (split 1, row 0: the -inf split) = NaN
  %nan = arith.constant 0x7FC00000 : f32
  %c12 = arith.constant 12 : index
  %c16 = arith.constant 16 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c12 to %c16 step %c1 {
    memref.store %nan, %parts[%i] : memref<36xf32>
  }
  %lses = memref.get_global @lses : memref<9xf32>
  %pp = fakv.ptr_of %parts : memref<36xf32> -> !fakv.ptr<f32>
  %pl = fakv.ptr_of %lses : memref<9xf32> -> !fakv.ptr<f32>
  %po = fakv.ptr_of %out : memref<15xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @lse_combine[%g, %g, %g](%pp, %pl, %po) : (!fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>)
  %d = memref.cast %out : memref<15xf32> to memref<?xf32>
  func.call @print_f32(%d) : (memref<?xf32>) -> ()
  return
}
