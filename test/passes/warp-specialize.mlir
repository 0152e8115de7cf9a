// fakv-warp-specialize: a producer warpgroup issues the pipelined copies,
// paced by `empty` barriers; the consumer does the math and the rest.
// RUN: fakv-opt %S/Inputs/attention.mlir --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline --fakv-warp-specialize --canonicalize \
// RUN:   | FileCheck %s --implicit-check-not=fakvgpu.pipeline_prologue
// With register counts, the op records them (the lowering emits setmaxnreg):
// RUN: fakv-opt %S/Inputs/attention.mlir --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline \
// RUN:   --fakv-warp-specialize="producer-registers=24 consumer-registers=168" \
// RUN:   | FileCheck %s --check-prefix=REGS
// REGS: fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 24, 168 {
// Eight consumer warps: a slot is free once all 256 of their threads arrive.
// RUN: fakv-opt %S/Inputs/attention.mlir --fakv-decompose --canonicalize --fakv-assign-layouts=num-warps=8 \
// RUN:   --loop-invariant-code-motion --fakv-pipeline --fakv-warp-specialize --canonicalize \
// RUN:   | FileCheck %s --check-prefix=WIDE
// The gather (a run-time page size) with 8 consumer warps: its full barriers
// take the 128 producer threads' arrivals, its empty ones the 256 consumers'.
// RUN: sed -e 's/page_size %%ps/page_size %%np/' %S/Inputs/attention.mlir | fakv-opt --fakv-decompose \
// RUN:   --canonicalize --fakv-assign-layouts=num-warps=8 --loop-invariant-code-motion --fakv-pipeline \
// RUN:   --fakv-warp-specialize --canonicalize | FileCheck %s --check-prefix=WIDE-GATHER
// 16 consumer warps and the producer's 4 (num-warps is a power of two: 28 got layouts over 32 warps).
// RUN: fakv-opt %S/Inputs/attention.mlir --fakv-decompose --canonicalize --fakv-assign-layouts=num-warps=16 \
// RUN:   --loop-invariant-code-motion --fakv-pipeline --fakv-warp-specialize --canonicalize \
// RUN:   | FileCheck %s --check-prefix=W16
// WIDE: fakvgpu.num_warps = 12 : i32
// WIDE: %[[EMPTY:.*]] = fakvgpu.alloc_barriers arrivals 256 : !fakvgpu.barriers<2>
// WIDE: fakvgpu.warp_specialize producer_warps 4 consumer_warps 8
// WIDE: fakvgpu.wait %[[EMPTY]]

// CHECK-LABEL: func.func @attention(
// CHECK-SAME: fakvgpu.num_warps = 8 : i32
// CHECK-DAG: %[[KR:.*]] = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
// CHECK-DAG: %[[KF:.*]] = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
// CHECK-DAG: %[[EMPTY:.*]] = fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
// CHECK: fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
// The producer: every iteration; from the third on (i >= 2), wait for the
// consumer to free slot i % 2, in the phase of its previous use
// (i / 2 - 1) % 2.
// CHECK:   scf.for %[[I:.*]] = %c0_i32
// CHECK:     %[[SLOT:.*]] = arith.remsi %[[I]], %c2_i32 : i32
// CHECK:     %[[REUSE:.*]] = arith.cmpi sge, %[[I]], %c2_i32 : i32
// CHECK:     scf.if %[[REUSE]] {
// CHECK:       %[[USE:.*]] = arith.divsi %[[I]], %c2_i32 : i32
// CHECK:       %[[PREV:.*]] = arith.subi %[[USE]], %c1_i32 : i32
// CHECK:       %[[PHASE:.*]] = arith.remsi %[[PREV]], %c2_i32 : i32
// CHECK:       fakvgpu.wait %[[EMPTY]][%[[SLOT]]], %[[PHASE]] : !fakvgpu.barriers<2>
// CHECK:     }
// CHECK:     fakvgpu.async_paged_load {{.*}} into %[[KR]][%{{.*}}] signal %[[KF]]
// CHECK:     fakvgpu.async_paged_load
// CHECK: }, {
// The consumer: the Q tile, the math loop (no copies), releasing each slot.
// CHECK:   fakv.load
// CHECK:   fakvgpu.convert_layout
// CHECK:   scf.for
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:     fakvgpu.wait %[[KF]]
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:     fakv.dot
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:     fakv.dot
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:     fakvgpu.arrive %[[EMPTY]][%{{.*}}] : !fakvgpu.barriers<2>
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:     scf.yield
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:   fakv.store
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK: }

// WIDE-GATHER-DAG: fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
// WIDE-GATHER-DAG: fakvgpu.alloc_barriers arrivals 256 : !fakvgpu.barriers<2>
// WIDE-GATHER: fakvgpu.warp_specialize producer_warps 4 consumer_warps 8

// W16: fakvgpu.num_warps = 20 : i32
// W16: fakvgpu.warp_specialize producer_warps 4 consumer_warps 16
