// fakv-decompose: composite ops become reductions and elementwise math.
// RUN: fakv-opt %s --fakv-decompose --split-input-file | FileCheck %s --implicit-check-not=fakv.length_mask \
// RUN:   --implicit-check-not=fakv.causal_mask --implicit-check-not=fakv.window_mask \
// RUN:   --implicit-check-not=fakv.softcap --implicit-check-not=fakv.alibi
// RUN: fakv-opt %s --fakv-decompose=exp2=false --split-input-file | FileCheck %s --check-prefix=EXP

// The online-softmax step in log2 units: scores times scale * log2(e), the
// running max (natural log) times log2(e), exp2, and the new max back in
// natural-log units (times ln 2).
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[S:.*]]: tensor<4x8xf32>, %[[M:.*]]: tensor<4xf32>, %[[L:.*]]: tensor<4xf32>, %[[SC:.*]]: f32)
// CHECK-DAG: %[[LOG2E:.*]] = arith.constant 1.44269502 : f32
// CHECK: %[[F:.*]] = arith.mulf %[[SC]], %[[LOG2E]] : f32
// CHECK: %[[FT:.*]] = fakv.splat %[[F]] : f32 -> tensor<4x8xf32>
// CHECK: %[[T:.*]] = arith.mulf %[[S]], %[[FT]] : tensor<4x8xf32>
// CHECK: %[[M0:.*]] = arith.mulf %[[M]], %{{.*}} : tensor<4xf32>
// CHECK: %[[RM:.*]] = fakv.reduce max %[[T]], 1 : tensor<4x8xf32> -> tensor<4xf32>
// CHECK: %[[M1:.*]] = arith.maximumf %[[M0]], %[[RM]] : tensor<4xf32>
// CHECK: %[[EMPTY:.*]] = arith.cmpf oeq, %[[M1]], %{{.*}} : tensor<4xf32>
// CHECK: %[[SAFE:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[M1]] : tensor<4xi1>, tensor<4xf32>
// CHECK: fakv.expand_dims %[[SAFE]], 1
// CHECK: fakv.broadcast
// CHECK: %[[P:.*]] = math.exp2 %{{.*}} : tensor<4x8xf32>
// CHECK: math.exp2 %{{.*}} : tensor<4xf32>
// CHECK: fakv.reduce sum %[[P]], 1
// CHECK: arith.mulf %[[M1]], %{{.*}} : tensor<4xf32>
// CHECK-NOT: fakv.online_softmax
// EXP-LABEL: func.func @softmax(
// EXP: math.exp %{{.*}} : tensor<4x8xf32>
// EXP-NOT: math.exp2
func.func @softmax(%s: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>, %scale: f32)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %m1, %l1, %p, %a = fakv.online_softmax %s, %m, %l scale %scale : tensor<4x8xf32>, tensor<4xf32>
  return %m1, %l1, %p, %a : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>, tensor<4xf32>
}

// -----

// The LSE combine: max over splits, weights, sum, and a select that never
// reads a zero-weight split's partial.
// CHECK-LABEL: func.func @combine(
// CHECK: %[[MX:.*]] = fakv.reduce max %{{.*}}, 0 : tensor<4x2xf32> -> tensor<2xf32>
// CHECK: math.exp2
// CHECK: %[[SUM:.*]] = fakv.reduce sum %{{.*}}, 0 : tensor<4x2xf32> -> tensor<2xf32>
// CHECK: arith.cmpf oeq, %{{.*}}, %{{.*}} : tensor<4x2x8xf32>
// CHECK: arith.select %{{.*}} : tensor<4x2x8xi1>, tensor<4x2x8xf32>
// CHECK: fakv.reduce sum %{{.*}}, 0 : tensor<4x2x8xf32> -> tensor<2x8xf32>
// CHECK: math.log2 %[[SUM]]
// CHECK-NOT: fakv.lse_combine
func.func @combine(%p: tensor<4x2x8xf32>, %l: tensor<4x2xf32>) -> (tensor<2x8xf32>, tensor<2xf32>) {
  %o, %lse = fakv.lse_combine %p, %l : tensor<4x2x8xf32>, tensor<4x2xf32> -> tensor<2x8xf32>, tensor<2xf32>
  return %o, %lse : tensor<2x8xf32>, tensor<2xf32>
}

// -----

// Masks become comparisons of broadcast positions and a select against -inf.
// CHECK-LABEL: func.func @masks(
// CHECK-SAME: %[[S:[^:]*]]: tensor<4x8xf32>, %[[R:[^:]*]]: tensor<4xi32>, %[[C:[^:]*]]: tensor<8xi32>, %[[N:[^:]*]]: i32,
// CHECK: %[[NT:.*]] = fakv.splat %[[N]] : i32 -> tensor<8xi32>
// CHECK: %[[OK:.*]] = arith.cmpi slt, %[[C]], %[[NT]] : tensor<8xi32>
// CHECK: fakv.expand_dims %[[OK]], 0 : tensor<8xi1> -> tensor<1x8xi1>
// CHECK: %[[V:.*]] = fakv.broadcast %{{.*}} : tensor<1x8xi1> -> tensor<4x8xi1>
// CHECK: %[[L:.*]] = arith.select %[[V]], %[[S]], %{{.*}} : tensor<4x8xi1>, tensor<4x8xf32>
// The causal mask: a key at or before the row's position (row + n), on the length mask's scores.
// CHECK: arith.addi %[[R]], %{{.*}} : tensor<4xi32>
// CHECK: %[[CM:.*]] = arith.cmpi sle, %{{.*}}, %{{.*}} : tensor<4x8xi32>
// CHECK: %[[CS:.*]] = arith.select %[[CM]], %[[L]], %{{.*}} : tensor<4x8xi1>, tensor<4x8xf32>
// The window: a key at or past the left edge and at or before the right one, on the causal mask's scores.
// CHECK: %[[RIGHT:.*]] = arith.cmpi sle, %{{.*}}, %{{.*}} : tensor<4x8xi32>
// CHECK: %[[LEFT:.*]] = arith.cmpi sge, %{{.*}}, %{{.*}} : tensor<4x8xi32>
// CHECK: %[[IN:.*]] = arith.andi %[[LEFT]], %[[RIGHT]] : tensor<4x8xi1>
// CHECK: %[[WS:.*]] = arith.select %[[IN]], %[[CS]], %{{.*}} : tensor<4x8xi1>, tensor<4x8xf32>
// Softcap (cap * tanh(s / cap), -inf kept), then ALiBi's slope times the distance.
// CHECK: %[[SCALED:.*]] = arith.mulf %[[WS]], %{{.*}} : tensor<4x8xf32>
// CHECK: %[[T:.*]] = math.tanh %[[SCALED]] : tensor<4x8xf32>
// CHECK: %[[CAPPED:.*]] = arith.mulf %[[T]], %{{.*}} : tensor<4x8xf32>
// CHECK: %[[SOFT:.*]] = arith.select %{{.*}}, %[[WS]], %[[CAPPED]] : tensor<4x8xi1>, tensor<4x8xf32>
// CHECK: %[[DIST:.*]] = arith.maxsi %{{.*}}, %{{.*}} : tensor<4x8xi32>
// CHECK: %[[FD:.*]] = arith.sitofp %[[DIST]]
// CHECK: %[[BIAS:.*]] = arith.mulf %{{.*}}, %[[FD]] : tensor<4x8xf32>
// CHECK: %[[OUT:.*]] = arith.subf %[[SOFT]], %[[BIAS]] : tensor<4x8xf32>
// CHECK: return %[[OUT]]
func.func @masks(%s: tensor<4x8xf32>, %rows: tensor<4xi32>, %cols: tensor<8xi32>, %n: i32, %cap: f32,
                 %slopes: tensor<4xf32>) -> tensor<4x8xf32> {
  %a = fakv.length_mask %s, %cols, %n : tensor<4x8xf32>, tensor<8xi32>
  %b = fakv.causal_mask %a, %rows, %cols, %n : tensor<4x8xf32>, tensor<4xi32>, tensor<8xi32>
  %c = fakv.window_mask %b, %rows, %cols, %n, %n, %n : tensor<4x8xf32>, tensor<4xi32>, tensor<8xi32>
  %d = fakv.softcap %c, %cap : tensor<4x8xf32>
  %e = fakv.alibi %d, %rows, %cols, %n, %slopes : tensor<4x8xf32>, tensor<4xi32>, tensor<8xi32>, tensor<4xf32>
  return %e : tensor<4x8xf32>
}

// -----

// Float to int as docs/frontend.md defines it (the GPU's cvt.rzi.s64 gave INT64_MIN for NaN): saturating at
// +-2^63, NaN 0; the conversion left is marked and a second run leaves it alone.
// RUN: fakv-opt %s --fakv-decompose --fakv-decompose --split-input-file | FileCheck %s --check-prefix=TWICE
// CHECK-LABEL: func.func @to_int(
// CHECK-SAME: %[[X:.*]]: tensor<8xf32>, %[[Y:.*]]: f16)
// CHECK: %[[C:.*]] = arith.fptosi %[[X]] {fakv.saturated} : tensor<8xf32> to tensor<8xi64>
// CHECK: %[[HI:.*]] = arith.constant dense<9.22337203E+18> : tensor<8xf32>
// CHECK: %[[OVER:.*]] = arith.cmpf oge, %[[X]], %[[HI]] : tensor<8xf32>
// CHECK: %[[MAX:.*]] = arith.constant dense<9223372036854775807> : tensor<8xi64>
// CHECK: %[[R1:.*]] = arith.select %[[OVER]], %[[MAX]], %[[C]]
// CHECK: %[[LO:.*]] = arith.constant dense<-9.22337203E+18> : tensor<8xf32>
// CHECK: %[[UNDER:.*]] = arith.cmpf ole, %[[X]], %[[LO]] : tensor<8xf32>
// CHECK: %[[MIN:.*]] = arith.constant dense<-9223372036854775808> : tensor<8xi64>
// CHECK: %[[R2:.*]] = arith.select %[[UNDER]], %[[MIN]], %[[R1]]
// CHECK: %[[NAN:.*]] = arith.cmpf uno, %[[X]], %[[X]] : tensor<8xf32>
// CHECK: %[[ZERO:.*]] = arith.constant dense<0> : tensor<8xi64>
// CHECK: %[[R3:.*]] = arith.select %[[NAN]], %[[ZERO]], %[[R2]]
// f16 past i32's range: the bounds are +-inf in f16.
// CHECK: arith.fptosi %[[Y]] {fakv.saturated} : f16 to i32
// CHECK: arith.constant 0x7C00 : f16
// CHECK: return %[[R3]]
// TWICE-LABEL: func.func @to_int(
// TWICE: arith.fptosi
// TWICE-COUNT-3: arith.select
// TWICE: arith.fptosi
// TWICE-COUNT-3: arith.select
// TWICE-NOT: arith.select
// TWICE-NOT: arith.fptosi
func.func @to_int(%x: tensor<8xf32>, %y: f16) -> (tensor<8xi64>, i32) {
  %a = arith.fptosi %x : tensor<8xf32> to tensor<8xi64>
  %b = arith.fptosi %y : f16 to i32
  return %a, %b : tensor<8xi64>, i32
}
