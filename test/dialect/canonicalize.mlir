// What the fakv folders and canonicalization patterns simplify.
// RUN: fakv-opt %s -canonicalize -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @splat_of_constant
// CHECK-NEXT: %[[C:.*]] = arith.constant dense<2.500000e+00> : tensor<4x8xf32>
// CHECK-NEXT: return %[[C]]
func.func @splat_of_constant() -> tensor<4x8xf32> {
  %c = arith.constant 2.5 : f32
  %s = fakv.splat %c : f32 -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_identity
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[T]]
func.func @broadcast_identity(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %b = fakv.broadcast %t : tensor<4x8xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_of_splat
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-NEXT: %[[S:.*]] = fakv.splat %[[X]] : f32 -> tensor<4x8xf32>
// CHECK-NEXT: return %[[S]]
func.func @broadcast_of_splat(%x: f32) -> tensor<4x8xf32> {
  %s = fakv.splat %x : f32 -> tensor<4x1xf32>
  %b = fakv.broadcast %s : tensor<4x1xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_of_broadcast
// CHECK-SAME: (%[[T:.*]]: tensor<1x1xf32>)
// CHECK-NEXT: %[[B:.*]] = fakv.broadcast %[[T]] : tensor<1x1xf32> -> tensor<4x8xf32>
// CHECK-NEXT: return %[[B]]
func.func @broadcast_of_broadcast(%t: tensor<1x1xf32>) -> tensor<4x8xf32> {
  %a = fakv.broadcast %t : tensor<1x1xf32> -> tensor<4x1xf32>
  %b = fakv.broadcast %a : tensor<4x1xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_of_expanded_splat
// CHECK-SAME: (%[[X:.*]]: f32)
// CHECK-NEXT: %[[S:.*]] = fakv.splat %[[X]] : f32 -> tensor<4x8xf32>
// CHECK-NEXT: return %[[S]]
func.func @broadcast_of_expanded_splat(%x: f32) -> tensor<4x8xf32> {
  %s = fakv.splat %x : f32 -> tensor<4xf32>
  %e = fakv.expand_dims %s, 1 : tensor<4xf32> -> tensor<4x1xf32>
  %b = fakv.broadcast %e : tensor<4x1xf32> -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @constant_shapes
// CHECK-DAG: %[[A:.*]] = arith.constant dense<-1.000000e+00> : tensor<4x1xf32>
// CHECK-DAG: %[[B:.*]] = arith.constant dense<-1.000000e+00> : tensor<4x8xf32>
// CHECK-DAG: %[[C:.*]] = arith.constant dense<-1.000000e+00> : tensor<32xf32>
// CHECK: return %[[A]], %[[B]], %[[C]]
func.func @constant_shapes() -> (tensor<4x1xf32>, tensor<4x8xf32>, tensor<32xf32>) {
  %c = arith.constant dense<-1.0> : tensor<4xf32>
  %e = fakv.expand_dims %c, 1 : tensor<4xf32> -> tensor<4x1xf32>
  %b = fakv.broadcast %e : tensor<4x1xf32> -> tensor<4x8xf32>
  %r = fakv.reshape %b : tensor<4x8xf32> -> tensor<32xf32>
  return %e, %b, %r : tensor<4x1xf32>, tensor<4x8xf32>, tensor<32xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_identity
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[T]]
func.func @reshape_identity(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = fakv.reshape %t : tensor<4x8xf32> -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @reshape_of_reshape
// CHECK-SAME: (%[[T:.*]]: tensor<2x4x8xf32>)
// CHECK-NEXT: %[[R:.*]] = fakv.reshape %[[T]] : tensor<2x4x8xf32> -> tensor<64xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_of_reshape(%t: tensor<2x4x8xf32>) -> tensor<64xf32> {
  %a = fakv.reshape %t : tensor<2x4x8xf32> -> tensor<8x8xf32>
  %b = fakv.reshape %a : tensor<8x8xf32> -> tensor<64xf32>
  return %b : tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @cast_identity
// CHECK-SAME: (%[[T:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: return %[[T]]
func.func @cast_identity(%t: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c = fakv.cast %t : tensor<4x8xf32> -> tensor<4x8xf32>
  return %c : tensor<4x8xf32>
}

// -----

// A real conversion stays.
// CHECK-LABEL: func.func @cast_kept
// CHECK: fakv.cast
func.func @cast_kept(%t: tensor<4x8xf32>) -> tensor<4x8xbf16> {
  %c = fakv.cast %t : tensor<4x8xf32> -> tensor<4x8xbf16>
  return %c : tensor<4x8xbf16>
}

// -----

// CHECK-LABEL: func.func @addptr_zero
// CHECK-SAME: (%[[P:.*]]: !fakv.ptr<i32>)
// CHECK-NOT: fakv.addptr
// CHECK: %[[L:.*]] = fakv.load_scalar %[[P]]
func.func @addptr_zero(%p: !fakv.ptr<i32>) -> i32 {
  %z = arith.constant 0 : i64
  %q = fakv.addptr %p, %z : !fakv.ptr<i32>
  %i = arith.constant 0 : i32
  %v = fakv.load_scalar %q[%i] : !fakv.ptr<i32> -> i32
  return %v : i32
}

// -----

// A splat of a constant typed otherwise than its value (llvm.mlir.constant(-1 : i8) : i64) is not folded: the
// attribute's bits are not the element's value (the fold made dense<255>; builds with assertions aborted).
// CHECK-LABEL: func.func @splat_of_retyped_constant
// CHECK: fakv.splat
// CHECK-NOT: dense<255>
func.func @splat_of_retyped_constant() -> tensor<2xi64> {
  %g = llvm.mlir.constant(-1 : i8) : i64
  %v = fakv.splat %g : i64 -> tensor<2xi64>
  return %v : tensor<2xi64>
}
