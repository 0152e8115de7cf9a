// fakv-guard-cpu-division: a division that may trap divides by 1 instead
// and sets @fakv_cpu_fault; a division by a safe constant is left alone.
// RUN: fakv-opt %s --fakv-guard-cpu-division | FileCheck %s

// CHECK: llvm.mlir.global external @fakv_cpu_fault(0 : i32)
// CHECK-LABEL: func.func @divide
// CHECK-SAME: (%[[A:.*]]: i32, %[[B:.*]]: i32)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[MIN:.*]] = arith.constant -2147483648 : i32
// CHECK-DAG: %[[M1:.*]] = arith.constant -1 : i32
// CHECK-DAG: %[[IS0:.*]] = arith.cmpi eq, %[[B]], %[[ZERO]]
// CHECK-DAG: %[[AMIN:.*]] = arith.cmpi eq, %[[A]], %[[MIN]]
// CHECK-DAG: %[[BM1:.*]] = arith.cmpi eq, %[[B]], %[[M1]]
// CHECK: %[[OVF:.*]] = arith.andi %[[AMIN]], %[[BM1]]
// CHECK: %[[BAD:.*]] = arith.ori %[[IS0]], %[[OVF]]
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[SAFE:.*]] = arith.select %[[BAD]], %[[ONE]], %[[B]]
// CHECK: %[[ADDR:.*]] = llvm.mlir.addressof @fakv_cpu_fault
// CHECK: %[[OLD:.*]] = llvm.load %[[ADDR]]
// CHECK: %[[FLAG:.*]] = arith.extui %[[BAD]] : i1 to i32
// CHECK: %[[NEW:.*]] = arith.ori %[[OLD]], %[[FLAG]]
// CHECK: llvm.store %[[NEW]], %[[ADDR]]
// CHECK: arith.divsi %[[A]], %[[SAFE]]
// CHECK: arith.select
// CHECK: llvm.store
// CHECK: arith.remui %[[A]], %{{.*}}
// CHECK: arith.divsi %[[A]], %{{.*}} : i32
// CHECK-NOT: llvm.store
// CHECK: return
func.func @divide(%a: i32, %b: i32) -> (i32, i32, i32) {
  %q = arith.divsi %a, %b : i32
  %r = arith.remui %a, %b : i32
  %c8 = arith.constant 8 : i32
  %s = arith.divsi %a, %c8 : i32
  return %q, %r, %s : i32, i32, i32
}
