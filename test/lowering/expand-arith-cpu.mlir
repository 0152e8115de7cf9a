// fakv-expand-arith-cpu: bf16 conversions and ceil/floor divisions expanded for the CPU path's LLVM lowering,
// maximumf / minimumf kept (arith-expand-ops' compare and select made maximum(+0.0, -0.0) -0.0).
// RUN: fakv-opt %s --fakv-expand-arith-cpu | FileCheck %s

// CHECK-LABEL: func.func @f
// CHECK: arith.maximumf
// CHECK: arith.minimumf
// CHECK-NOT: arith.ceildivsi
// CHECK-NOT: arith.extf {{.*}} bf16
func.func @f(%a: f32, %b: f32, %i: i32, %j: i32, %h: bf16) -> (f32, f32, i32, f32) {
  %max = arith.maximumf %a, %b : f32
  %min = arith.minimumf %a, %b : f32
  %d = arith.ceildivsi %i, %j : i32
  %e = arith.extf %h : bf16 to f32
  return %max, %min, %d, %e : f32, f32, i32, f32
}
