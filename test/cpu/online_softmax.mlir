// CPU execution of fakv.online_softmax, with a scale, rows whose running max
// is still -inf, and a row whose scores are all -inf (fully masked) so far.
// Expected: reference.py (online_softmax).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/online_softmax.expected

// scores: 4x6 from s, row 2 all -inf. m0: 4 from m, entries 0 and 2 -inf.
// l0: 4 from l. out = [new_max(4), new_sum(4), probs(24), alpha(4)].
func.func @online_softmax(%s: !fakv.ptr<f32>, %m: !fakv.ptr<f32>, %l: !fakv.ptr<f32>,
                          %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %c32 = arith.constant 32 : i32
  %s1 = arith.constant 1 : i64
  %s6 = arith.constant 6 : i64
  %ninf = arith.constant 0xFF800000 : f32
  %rows = fakv.arange 0 to 4 : tensor<4xi32>
  %two = arith.constant dense<2> : tensor<4xi32>
  %not2 = arith.cmpi ne, %rows, %two : tensor<4xi32>
  %not2c = fakv.expand_dims %not2, 1 : tensor<4xi1> -> tensor<4x1xi1>
  %mask = fakv.broadcast %not2c : tensor<4x1xi1> -> tensor<4x6xi1>
  %scores = fakv.load %s[%c0, %c0] strides [%s6, %s1] mask %mask other %ninf
              : !fakv.ptr<f32> -> tensor<4x6xf32>
  %zero = arith.constant dense<0> : tensor<4xi32>
  %r2 = arith.remsi %rows, %two : tensor<4xi32>
  %odd = arith.cmpi ne, %r2, %zero : tensor<4xi32>
  %m0 = fakv.load %m[%c0] strides [%s1] mask %odd other %ninf : !fakv.ptr<f32> -> tensor<4xf32>
  %l0 = fakv.load %l[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<4xf32>
  %scale = arith.constant 1.75 : f32
  %m1, %l1, %p, %alpha = fakv.online_softmax %scores, %m0, %l0 scale %scale
                           : tensor<4x6xf32>, tensor<4xf32>
  fakv.store %m1, %out[%c0] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  fakv.store %l1, %out[%c4] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  %off8 = arith.constant 8 : i64
  %probs_out = fakv.addptr %out, %off8 : !fakv.ptr<f32>
  fakv.store %p, %probs_out[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  fakv.store %alpha, %out[%c32] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %s = memref.alloc() : memref<24xf32>
  %m = memref.alloc() : memref<4xf32>
  %l = memref.alloc() : memref<4xf32>
  %out = memref.alloc() : memref<36xf32>
  %seed0 = arith.constant 21 : i64
  %seed1 = arith.constant 22 : i64
  %seed2 = arith.constant 23 : i64
  %ds = memref.cast %s : memref<24xf32> to memref<?xf32>
  %dm = memref.cast %m : memref<4xf32> to memref<?xf32>
  %dl = memref.cast %l : memref<4xf32> to memref<?xf32>
  func.call @fill_f32(%ds, %seed0) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%dm, %seed1) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%dl, %seed2) : (memref<?xf32>, i64) -> ()
  %ps = fakv.ptr_of %s : memref<24xf32> -> !fakv.ptr<f32>
  %pm = fakv.ptr_of %m : memref<4xf32> -> !fakv.ptr<f32>
  %pl = fakv.ptr_of %l : memref<4xf32> -> !fakv.ptr<f32>
  %po = fakv.ptr_of %out : memref<36xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @online_softmax[%g, %g, %g](%ps, %pm, %pl, %po)
    : (!fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>)
  %d = memref.cast %out : memref<36xf32> to memref<?xf32>
  func.call @print_f32(%d) : (memref<?xf32>) -> ()
  return
}
