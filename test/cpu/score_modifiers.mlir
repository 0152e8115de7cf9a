// CPU execution of the score modifiers: length, causal and sliding-window
// masks, softcap (which keeps -inf) and ALiBi. Scores are 4x6; the rows are
// queries 2..5 and the columns keys 0..5, aligned with offset 1.
// Expected: reference.py (score_modifiers).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/score_modifiers.expected

// out = 7 consecutive 4x6 tiles: length(valid 5), causal, window(2, 1),
// window(-1, 0) (= causal), softcap(0.3) of the length-masked scores, alibi,
// window(0, 1) (a left bound of 0: the query's own key, not every key left of it).
func.func @score_modifiers(%s: !fakv.ptr<f32>, %sl: !fakv.ptr<f32>, %out: !fakv.ptr<f32>)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s6 = arith.constant 6 : i64
  %scores = fakv.load %s[%c0, %c0] strides [%s6, %s1] : !fakv.ptr<f32> -> tensor<4x6xf32>
  %slopes = fakv.load %sl[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<4xf32>
  %r = fakv.arange 2 to 6 : tensor<4xi32>
  %c = fakv.arange 0 to 6 : tensor<6xi32>
  %off = arith.constant 1 : i32
  %valid = arith.constant 5 : i32
  %left = arith.constant 2 : i32
  %right = arith.constant 1 : i32
  %m1 = arith.constant -1 : i32
  %cap = arith.constant 0.3 : f32
  %t0 = fakv.length_mask %scores, %c, %valid : tensor<4x6xf32>, tensor<6xi32>
  %t1 = fakv.causal_mask %scores, %r, %c, %off : tensor<4x6xf32>, tensor<4xi32>, tensor<6xi32>
  %t2 = fakv.window_mask %scores, %r, %c, %off, %left, %right : tensor<4x6xf32>, tensor<4xi32>, tensor<6xi32>
  %t3 = fakv.window_mask %scores, %r, %c, %off, %m1, %c0 : tensor<4x6xf32>, tensor<4xi32>, tensor<6xi32>
  %t4 = fakv.softcap %t0, %cap : tensor<4x6xf32>
  %t5 = fakv.alibi %scores, %r, %c, %off, %slopes : tensor<4x6xf32>, tensor<4xi32>, tensor<6xi32>, tensor<4xf32>
  %t6 = fakv.window_mask %scores, %r, %c, %off, %c0, %right : tensor<4x6xf32>, tensor<4xi32>, tensor<6xi32>
  %o = arith.constant 24 : i64
  %p1 = fakv.addptr %out, %o : !fakv.ptr<f32>
  %p2 = fakv.addptr %p1, %o : !fakv.ptr<f32>
  %p3 = fakv.addptr %p2, %o : !fakv.ptr<f32>
  %p4 = fakv.addptr %p3, %o : !fakv.ptr<f32>
  %p5 = fakv.addptr %p4, %o : !fakv.ptr<f32>
  %p6 = fakv.addptr %p5, %o : !fakv.ptr<f32>
  fakv.store %t0, %out[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  fakv.store %t1, %p1[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  fakv.store %t2, %p2[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  fakv.store %t3, %p3[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  fakv.store %t4, %p4[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  fakv.store %t5, %p5[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  fakv.store %t6, %p6[%c0, %c0] strides [%s6, %s1] : tensor<4x6xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %s = memref.alloc() : memref<24xf32>
  %sl = memref.alloc() : memref<4xf32>
  %out = memref.alloc() : memref<168xf32>
  %seed0 = arith.constant 25 : i64
  %seed1 = arith.constant 26 : i64
  %ds = memref.cast %s : memref<24xf32> to memref<?xf32>
  %dsl = memref.cast %sl : memref<4xf32> to memref<?xf32>
  func.call @fill_f32(%ds, %seed0) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%dsl, %seed1) : (memref<?xf32>, i64) -> ()
  %ps = fakv.ptr_of %s : memref<24xf32> -> !fakv.ptr<f32>
  %psl = fakv.ptr_of %sl : memref<4xf32> -> !fakv.ptr<f32>
  %po = fakv.ptr_of %out : memref<168xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @score_modifiers[%g, %g, %g](%ps, %psl, %po) : (!fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>)
  %d = memref.cast %out : memref<168xf32> to memref<?xf32>
  func.call @print_f32(%d) : (memref<?xf32>) -> ()
  return
}
