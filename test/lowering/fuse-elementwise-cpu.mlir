// fakv-fuse-elementwise-cpu: chains of elementwise ops become one linalg.generic (one-shot bufferization's
// time grew with the cube of the tile ops: 1,024 took 7.5 s to compile), but nothing runs more often than
// before: a producer read through a broadcast, or defined before a loop, stays where it is
// (linalg-fuse-elementwise-ops fused both: an exp of 4 elements ran 32 times, or once an iteration).
// RUN: fakv-opt --convert-elementwise-to-linalg --fakv-fuse-elementwise-cpu %s | FileCheck %s

// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK-NEXT: arith.addf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @chain(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %e = math.exp %a : tensor<4xf32>
  %s = arith.addf %e, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}

#col = affine_map<(i, j) -> (i)>
#id = affine_map<(i, j) -> (i, j)>
// CHECK-LABEL: func.func @broadcast
// CHECK: linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK: return
func.func @broadcast(%a: tensor<4xf32>, %t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = math.exp %a : tensor<4xf32>
  %init = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#col, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%e, %t : tensor<4xf32>, tensor<4x8xf32>) outs(%init : tensor<4x8xf32>) {
    ^bb0(%x: f32, %y: f32, %o: f32):
      %r = arith.addf %x, %y : f32
      linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @loop
// CHECK: math.exp
// CHECK: scf.for
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK: return
func.func @loop(%a: tensor<4xf32>, %n: index) -> tensor<4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %e = math.exp %a : tensor<4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %a) -> tensor<4xf32> {
    %s = arith.addf %acc, %e : tensor<4xf32>
    scf.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
