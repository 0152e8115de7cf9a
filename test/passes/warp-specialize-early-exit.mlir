// fakv-warp-specialize with the pipelined loop under an early exit (the rest
// of the kernel in the else of a result-less scf.if): the rings and barriers
// move to the top level; the producer runs the loop under a copy of the
// condition (negated: the loop is in the else), with the loop's bounds
// cloned there; the consumer keeps the whole if, the early exit included.
// RUN: fakv-opt %S/Inputs/attention-early-exit.mlir --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline --fakv-warp-specialize \
// RUN:   | FileCheck %s --implicit-check-not=fakvgpu.pipeline_prologue

// CHECK-LABEL: func.func @attention_early_exit(
// CHECK-SAME: fakvgpu.num_warps = 8 : i32
// CHECK: %[[NONE:.*]] = arith.cmpi sle, %arg5
// CHECK-DAG: %[[KR:.*]] = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
// CHECK-DAG: %[[KF:.*]] = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
// CHECK-DAG: %[[EMPTY:.*]] = fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK: %[[GO:.*]] = arith.xori %[[NONE]], %[[TRUE]] : i1
// CHECK: fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
// CHECK:   scf.if %[[GO]] {
// CHECK:     %[[BLOCKS:.*]] = arith.ceildivsi %arg5
// CHECK:     scf.for %{{.*}} = %{{.*}} to %[[BLOCKS]]
// CHECK:       fakvgpu.wait %[[EMPTY]]
// CHECK:       fakvgpu.async_paged_load {{.*}} into %[[KR]][%{{.*}}] signal %[[KF]]
// CHECK:       fakvgpu.async_paged_load
// CHECK: }, {
// CHECK:   scf.if %[[NONE]] {
// CHECK-NOT: fakvgpu.wait
// CHECK:     fakv.store
// CHECK:   } else {
// CHECK:     fakv.load
// CHECK:     scf.for
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:       fakvgpu.wait %[[KF]]
// CHECK:       fakvgpu.arrive %[[EMPTY]]
// CHECK:     fakv.store
// CHECK: }

// Nested early exits: the producer's loop under copies of both conditions,
// the inner one's cloned under the outer copy.
// RUN: fakv-opt %S/Inputs/attention-nested-exits.mlir --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline --fakv-warp-specialize | FileCheck %s --check-prefix=NESTED
// NESTED-LABEL: func.func @attention_nested_exits(
// NESTED: %[[NONE:.*]] = arith.cmpi sle, %arg5
// NESTED: %[[GO:.*]] = arith.xori %[[NONE]]
// NESTED: fakvgpu.warp_specialize
// NESTED:   scf.if %[[GO]] {
// NESTED:     %[[FITS:.*]] = arith.cmpi sle, %arg5
// NESTED:     scf.if %[[FITS]] {
// NESTED:       scf.for
// NESTED:         fakvgpu.async_paged_load
// NESTED: }, {
// NESTED:   scf.if %[[NONE]] {
// NESTED:   } else {
// NESTED:     scf.if
// NESTED:       scf.for
// NESTED:         fakvgpu.arrive
// NESTED:     } else {
// NESTED:       fakv.store

// A bound the producer would have to load under the condition: refused.
// RUN: fakv-opt %S/Inputs/attention-loaded-bound.mlir --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline --fakv-warp-specialize -verify-diagnostics -o /dev/null
