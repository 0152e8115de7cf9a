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

// CHECK-LABEL: func.func @attention(
// CHECK-SAME: fakvgpu.num_warps = 8 : i32
// CHECK-DAG: %[[KR:.*]] = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
// CHECK-DAG: %[[KF:.*]] = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
// CHECK-DAG: %[[EMPTY:.*]] = fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
// CHECK: fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
// The producer: every iteration; from the third on, wait for the consumer
// to free the slot (phase of the previous use).
// CHECK:   scf.for
// CHECK:     %[[REUSE:.*]] = arith.cmpi sge
// CHECK:     scf.if %[[REUSE]] {
// CHECK:       fakvgpu.wait %[[EMPTY]][%{{.*}}], %{{.*}} : !fakvgpu.barriers<2>
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
