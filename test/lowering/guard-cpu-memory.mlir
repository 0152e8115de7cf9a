// fakv-guard-cpu-memory: each llvm.load / llvm.store of a kernel (after
// convert-fakv-to-cpu) runs only when @fakv_cpu_in_extents finds its bytes
// in the launch's arrays (@fakv_cpu_extents: a count, then the address of
// that many [lo, hi) pairs; a count of 0 checks nothing; bit 63 of lo: read
// only, no store there; an access wrapping past 2^64 is in none);
// else a load gives 0, a store is dropped,
// and 2 is or-ed into @fakv_cpu_fault. A global's own word is not checked.
// RUN: fakv-opt %s --fakv-guard-cpu-memory | FileCheck %s

// CHECK-DAG: llvm.mlir.global external @fakv_cpu_extents(dense<0> : tensor<2xi64>)
// CHECK-DAG: llvm.mlir.global external @fakv_cpu_fault(0 : i32)
// CHECK-LABEL: func.func private @fakv_cpu_in_extents(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr, %[[N:.*]]: i64, %[[W:.*]]: i1) -> i1
// CHECK: %[[LO:.*]] = llvm.ptrtoint %[[P]]
// CHECK: %[[HI:.*]] = arith.addi %[[LO]], %[[N]]
// CHECK: scf.for
// CHECK-DAG: %[[RO:.*]] = arith.cmpi slt, %{{.*}}, %c0
// CHECK-DAG: arith.cmpi uge, %[[LO]]
// CHECK-DAG: arith.cmpi ule, %[[HI]]
// CHECK-DAG: arith.andi %[[RO]], %[[W]]

// CHECK-LABEL: func.func @copy(
// CHECK: %[[LOADOK:.*]] = call @fakv_cpu_in_extents(%{{.*}}, %c2_i64, %false)
// CHECK: %[[V:.*]] = scf.if %[[LOADOK]] -> (bf16) {
// CHECK:   %[[L:.*]] = llvm.load
// CHECK:   scf.yield %[[L]]
// CHECK: } else {
// CHECK:   llvm.mlir.addressof @fakv_cpu_fault
// CHECK:   arith.ori %{{.*}}, %c2_i32
// CHECK:   scf.yield %{{.*}} : bf16
// CHECK: %[[STOREOK:.*]] = call @fakv_cpu_in_extents(%{{.*}}, %c2_i64{{.*}}, %true)
// CHECK: scf.if %[[STOREOK]] {
// CHECK:   llvm.store %[[V]]
// CHECK: } else {
// CHECK:   arith.ori %{{.*}}, %c2_i32
// CHECK: llvm.mlir.addressof @counter
// CHECK-NEXT: llvm.load
// CHECK-NOT: call @fakv_cpu_in_extents
// CHECK: return
llvm.mlir.global external @counter(0 : i32) : i32
func.func @copy(%src: !llvm.ptr, %dst: !llvm.ptr) {
  %v = llvm.load %src : !llvm.ptr -> bf16
  llvm.store %v, %dst : bf16, !llvm.ptr
  %g = llvm.mlir.addressof @counter : !llvm.ptr
  %c = llvm.load %g : !llvm.ptr -> i32
  return
}
