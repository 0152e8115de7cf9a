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
// CHECK: arith.remui %[[A]], %{{.*}} {fakv_cpu.divisor_checked} : i32
// The division by 8 as it was: no check, no store of the fault.
// CHECK-NEXT: %[[C8:.*]] = arith.constant 8 : i32
// CHECK-NEXT: arith.divsi %[[A]], %[[C8]] : i32
// CHECK-NEXT: return
func.func @divide(%a: i32, %b: i32) -> (i32, i32, i32) {
  %q = arith.divsi %a, %b : i32
  %r = arith.remui %a, %b : i32
  %c8 = arith.constant 8 : i32
  %s = arith.divsi %a, %c8 : i32
  return %q, %r, %s : i32, i32, i32
}

// A division of tiles is checked element by element; the flags are reduced
// to one (linalg.reduce) and or-ed into the fault. A tile of safe constants
// is left alone; a division already checked is not checked again.
// CHECK-LABEL: func.func @divide_tiles
// CHECK-SAME: (%[[A:.*]]: tensor<4xi32>, %[[B:.*]]: tensor<4xi32>)
// CHECK: %[[ZERO:.*]] = arith.constant dense<0> : tensor<4xi32>
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[B]], %[[ZERO]] : tensor<4xi32>
// CHECK: %[[ONE:.*]] = arith.constant dense<1> : tensor<4xi32>
// CHECK: %[[SAFE:.*]] = arith.select %[[IS0]], %[[ONE]], %[[B]] : tensor<4xi1>, tensor<4xi32>
// CHECK: %[[ANY:.*]] = linalg.reduce ins(%[[IS0]] : tensor<4xi1>)
// CHECK: arith.ori
// CHECK: %[[FLAG:.*]] = tensor.extract %[[ANY]][] : tensor<i1>
// CHECK: arith.extui %[[FLAG]] : i1 to i32
// CHECK: llvm.store
// CHECK: arith.divui %[[A]], %[[SAFE]] {fakv_cpu.divisor_checked} : tensor<4xi32>
// CHECK-NEXT: %[[CS:.*]] = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
// CHECK-NEXT: arith.remsi %[[A]], %[[CS]] : tensor<4xi32>
// CHECK-NEXT: arith.divsi %[[A]], %[[B]] {fakv_cpu.divisor_checked} : tensor<4xi32>
// CHECK-NEXT: return
func.func @divide_tiles(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %q = arith.divui %a, %b : tensor<4xi32>
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %r = arith.remsi %a, %c : tensor<4xi32>
  %s = arith.divsi %a, %b {fakv_cpu.divisor_checked} : tensor<4xi32>
  return %q, %r, %s : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}
