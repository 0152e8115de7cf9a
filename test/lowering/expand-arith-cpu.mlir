// fakv-expand-arith-cpu: bf16 conversions and ceil/floor divisions expanded for the CPU path's LLVM lowering,
// maximumf / minimumf kept (arith-expand-ops' compare and select made maximum(+0.0, -0.0) -0.0).
// RUN: fakv-opt %s --fakv-expand-arith-cpu \
// RUN:   | FileCheck %s --implicit-check-not=arith.ceildivsi --implicit-check-not=arith.extf

// CHECK-LABEL: func.func @f
// CHECK-SAME: (%{{.*}}: f32, %{{.*}}: f32, %[[I:.*]]: i32, %[[J:.*]]: i32, %[[H:.*]]: bf16)
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// ceildivsi: the truncated quotient, one more where the remainder is not 0 and the signs agree.
// CHECK: %[[Q:.*]] = arith.divsi %[[I]], %[[J]] : i32
// CHECK: %[[P:.*]] = arith.muli %[[Q]], %[[J]] : i32
// CHECK: %[[R:.*]] = arith.cmpi ne, %[[I]], %[[P]] : i32
// CHECK: %[[SI:.*]] = arith.cmpi slt, %[[I]], %{{.*}} : i32
// CHECK: %[[SJ:.*]] = arith.cmpi slt, %[[J]], %{{.*}} : i32
// CHECK: %[[SAME:.*]] = arith.cmpi eq, %[[SI]], %[[SJ]] : i1
// CHECK: %[[UP:.*]] = arith.andi %[[R]], %[[SAME]] : i1
// CHECK: %[[Q1:.*]] = arith.addi %[[Q]], %{{.*}} : i32
// CHECK: %[[D:.*]] = arith.select %[[UP]], %[[Q1]], %[[Q]] : i32
// bf16 -> f32: its bits shifted into an f32's top half.
// CHECK: %[[B:.*]] = arith.bitcast %[[H]] : bf16 to i16
// CHECK: %[[W:.*]] = arith.extui %[[B]] : i16 to i32
// CHECK: %[[S:.*]] = arith.shli %[[W]], %{{.*}} : i32
// CHECK: %[[E:.*]] = arith.bitcast %[[S]] : i32 to f32
// CHECK: return %{{.*}}, %{{.*}}, %[[D]], %[[E]]
func.func @f(%a: f32, %b: f32, %i: i32, %j: i32, %h: bf16) -> (f32, f32, i32, f32) {
  %max = arith.maximumf %a, %b : f32
  %min = arith.minimumf %a, %b : f32
  %d = arith.ceildivsi %i, %j : i32
  %e = arith.extf %h : bf16 to f32
  return %max, %min, %d, %e : f32, f32, i32, f32
}
