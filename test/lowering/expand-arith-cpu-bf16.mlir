// fakv-expand-arith-cpu: conversions to bf16 round once, as the GPU's cvt.rn.bf16.{s32,s64,f64} do (arith's
// bf16 expansion goes through f32 to nearest first, a second rounding: i32 16842753 gave 2^24, not 16908288).
// An i32 goes to f64 exactly, an i64 too as its halves' sum with the sum's error, rounded to odd where
// inexact; an f64 goes to f32 rounded to odd; then to bf16 to nearest. Integers of up to 24 bits go to f32
// exactly. (test/python/test_dsl_semantics.py's test_integers_convert_to_floats_rounding_once runs them.)
// RUN: fakv-opt %s --fakv-expand-arith-cpu | FileCheck %s --implicit-check-not="sitofp {{.*}} to bf16" \
// RUN:   --implicit-check-not="uitofp {{.*}} to bf16" --implicit-check-not="truncf {{.*}} to bf16"

// CHECK-LABEL: func.func @i32
// CHECK: %[[D:.*]] = arith.sitofp %{{.*}} : i32 to f64
// CHECK: %[[F:.*]] = arith.truncf %[[D]] : f64 to f32
// CHECK: %[[BACK:.*]] = arith.extf %[[F]] : f32 to f64
// CHECK: arith.cmpf one, %[[BACK]], %[[D]] : f64
// CHECK: arith.ori %{{.*}}, %{{.*}} : i32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @i32(%i: i32) -> bf16 {
  %b = arith.sitofp %i : i32 to bf16
  return %b : bf16
}

// CHECK-LABEL: func.func @i64
// CHECK: %[[HI:.*]] = arith.shrsi %{{.*}}, %{{.*}} : i64
// CHECK: %[[LO:.*]] = arith.andi %{{.*}}, %{{.*}} : i64
// CHECK: %[[H:.*]] = arith.sitofp %[[HI]] : i64 to f64
// CHECK: %[[HS:.*]] = arith.mulf %[[H]], %{{.*}} : f64
// CHECK: %[[L:.*]] = arith.uitofp %[[LO]] : i64 to f64
// CHECK: %[[S:.*]] = arith.addf %[[HS]], %[[L]] : f64
// CHECK: %[[Z:.*]] = arith.subf %[[S]], %[[HS]] : f64
// CHECK: %[[E:.*]] = arith.subf %[[L]], %[[Z]] : f64
// CHECK: arith.cmpf one, %[[E]], %{{.*}} : f64
// CHECK: arith.bitcast %[[S]] : f64 to i64
// CHECK: arith.ori %{{.*}}, %{{.*}} : i64
// CHECK: arith.truncf %{{.*}} : f64 to f32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @i64(%i: i64) -> bf16 {
  %b = arith.sitofp %i : i64 to bf16
  return %b : bf16
}

// CHECK-LABEL: func.func @small
// CHECK: arith.uitofp %{{.*}} : i1 to f32
// CHECK: arith.sitofp %{{.*}} : i16 to f32
// CHECK-NOT: f64
// CHECK: return
func.func @small(%i: i1, %j: i16) -> (bf16, bf16) {
  %a = arith.uitofp %i : i1 to bf16
  %b = arith.sitofp %j : i16 to bf16
  return %a, %b : bf16, bf16
}

// CHECK-LABEL: func.func @f64
// CHECK: %[[F:.*]] = arith.truncf %[[X:.*]] : f64 to f32
// CHECK: %[[BACK:.*]] = arith.extf %[[F]] : f32 to f64
// CHECK: arith.cmpf one, %[[BACK]], %[[X]] : f64
// CHECK: arith.ori %{{.*}}, %{{.*}} : i32
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @f64(%x: f64) -> bf16 {
  %b = arith.truncf %x : f64 to bf16
  return %b : bf16
}
