// fakv-pipeline: the K/V loads of the loop go through rings of `stages`
// shared-memory buffers, issued stages - 1 iterations ahead.
// RUN: fakv-opt %S/Inputs/attention.mlir --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline=stages=3 --canonicalize | FileCheck %s \
// RUN:   --implicit-check-not=fakv.paged_load
// A page size known only at run time: a cp.async gather, which every thread
// of the kernel signals.
// RUN: sed -e 's/page_size %%ps/page_size %%np/' %S/Inputs/attention.mlir | fakv-opt --fakv-decompose \
// RUN:   --canonicalize --fakv-assign-layouts --fakv-pipeline | FileCheck %s --check-prefix=GATHER
// RUN: %not fakv-opt %S/Inputs/attention.mlir --fakv-pipeline 2>&1 | FileCheck %s --check-prefix=ORDER
// A contiguous cache (`page`): the rows past its page are cleared too, so
// that the TMA copy (out of bounds past the page) and the gather agree.
// RUN: sed -e 's/table %%bt/page %%c0/' %S/Inputs/attention.mlir | fakv-opt --fakv-decompose \
// RUN:   --canonicalize --fakv-assign-layouts --fakv-pipeline | FileCheck %s --check-prefix=PAGE
// A loop from 1 in steps of 32 (decode's splits start at `first`): the
// prologue loads iterations 1 and 33, the slot of iteration iv is
// (iv - 1) / 32 % 3, the refill loads iv + 64 into slot (iv + 63) / 32 % 3.
// RUN: sed -e 's/scf.for %%i = %%c0 to %%blocks step %%c1/scf.for %%i = %%c1 to %%blocks step %%c32/' \
// RUN:   %S/Inputs/attention.mlir | fakv-opt --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline=stages=3 --canonicalize | FileCheck %s --check-prefix=STEP
// A cache known only 8-byte aligned: no TMA (its rows need 16), a gather
// that every thread signals.
// RUN: sed -e 's/fakv.divisibility = 16/fakv.divisibility = 8/g' %S/Inputs/attention.mlir | fakv-opt \
// RUN:   --fakv-decompose --canonicalize --fakv-assign-layouts --fakv-pipeline \
// RUN:   | FileCheck %s --check-prefix=UNALIGNED
// 4 channels (8 bytes) of a row: no whole 16-byte chunks, yet its rows
// stay aligned.
// RUN: sed -e 's/valid %%n page_size %%ps/valid %%n channels %%c4 page_size %%ps/' \
// RUN:   -e 's/^  %%c32 = /  %%c4 = arith.constant 4 : i32\n  %%c32 = /' %S/Inputs/attention.mlir \
// RUN:   | fakv-opt --fakv-decompose --canonicalize --fakv-assign-layouts --fakv-pipeline \
// RUN:   | FileCheck %s --check-prefix=CHANNELS

// CHECK-LABEL: func.func @attention(
// CHECK: %[[N:.*]] = arith.ceildivsi
// One ring per load, and a `full` barrier per slot (TMA: one arrival, the
// elected thread announcing the bytes).
// CHECK: %[[KR:.*]] = fakvgpu.alloc_ring : !fakvgpu.ring<3, tensor<32x64xbf16, #shared>>
// CHECK: %[[VR:.*]] = fakvgpu.alloc_ring : !fakvgpu.ring<3, tensor<32x64xbf16, #shared>>
// CHECK: %[[KF:.*]] = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<3>
// CHECK: %[[VF:.*]] = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<3>
// Prologue: iterations 0 and 1 into slots 0 and 1, each only when the loop
// has that iteration (stages - 1 of them, no more).
// CHECK: %[[HAS0:.*]] = arith.cmpi sgt, %[[N]], %c0_i32 : i32
// CHECK: scf.if %[[HAS0]] {
// CHECK: fakvgpu.async_paged_load {{.*}} into %[[KR]][%c0_i32] signal %[[KF]]
// CHECK: fakvgpu.async_paged_load {{.*}} into %[[VR]][%c0_i32] signal %[[VF]]
// CHECK: } {fakvgpu.pipeline_prologue}
// CHECK: %[[HAS1:.*]] = arith.cmpi sgt, %[[N]], %c1_i32 : i32
// CHECK: scf.if %[[HAS1]] {
// CHECK: fakvgpu.async_paged_load {{.*}} into %[[KR]][%c1_i32] signal %[[KF]]
// CHECK: } {fakvgpu.pipeline_prologue}
// CHECK-NOT: pipeline_prologue
// The loop: iteration i waits on slot i % 3 in phase (i / 3) % 2; it
// refills two iterations ahead (i + 2 < n, slot (i + 2) % 3), then waits,
// clears the tail and views.
// CHECK: scf.for %[[IV:.*]] = %c0_i32 to %[[N]] step %c1_i32 iter_args
// CHECK: %[[SLOT:.*]] = arith.remsi %[[IV]], %c3_i32 : i32
// CHECK: %[[ROUND:.*]] = arith.divsi %[[IV]], %c3_i32 : i32
// CHECK: %[[PHASE:.*]] = arith.remsi %[[ROUND]], %c2_i32 : i32
// CHECK: %[[AHEAD:.*]] = arith.addi %[[IV]], %c2_i32 : i32
// CHECK: %[[MORE:.*]] = arith.cmpi slt, %[[AHEAD]], %[[N]] : i32
// CHECK: scf.if %[[MORE]] {
// CHECK: %[[AS:.*]] = arith.remsi %[[AHEAD]], %c3_i32 : i32
// CHECK: fakvgpu.async_paged_load {{.*}} into %[[KR]][%[[AS]]] signal %[[KF]]
// CHECK: fakvgpu.async_paged_load {{.*}} into %[[VR]][%[[AS]]] signal %[[VF]]
// CHECK: } {fakvgpu.pipeline_prefetch}
// CHECK: fakvgpu.wait %[[KF]][%[[SLOT]]], %[[PHASE]] : !fakvgpu.barriers<3>
// CHECK: fakvgpu.clear_rows %[[KR]][%[[SLOT]]] from %{{.*}}
// CHECK: %[[K:.*]] = fakvgpu.ring_view %[[KR]][%[[SLOT]]]
// CHECK: fakvgpu.wait %[[VF]][%[[SLOT]]], %[[PHASE]]
// CHECK: %[[V:.*]] = fakvgpu.ring_view %[[VR]][%[[SLOT]]]
// CHECK: fakv.dot %{{.*}}, %[[K]], %{{.*}} {transpose_b}
// CHECK: fakv.dot %{{.*}}, %[[V]], %{{.*}}

// GATHER: fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
// GATHER: fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>

// ORDER: error: fakv-pipeline runs after fakv-assign-layouts

// PAGE: scf.for
// PAGE: fakvgpu.wait
// PAGE: %[[READ:.*]] = arith.minsi %{{.*}}, %{{.*}} : i32
// PAGE: %[[FIRST:.*]] = arith.subi %[[READ]], %{{.*}} : i32
// PAGE: fakvgpu.clear_rows %{{.*}} from %[[FIRST]]

// STEP: %[[N:.*]] = arith.ceildivsi
// STEP: arith.cmpi sgt, %[[N]], %c1_i32 : i32
// STEP: fakvgpu.async_paged_load %arg1[%c0_i32, %c32_i32] {{.*}} into %{{.*}}[%c0_i32]
// STEP: arith.cmpi sgt, %[[N]], %c33_i32 : i32
// STEP: fakvgpu.async_paged_load %arg1[%c0_i32, %c1056_i32] {{.*}} into %{{.*}}[%c1_i32]
// STEP: scf.for %[[IV:.*]] = %c1_i32 to %[[N]] step %c32_i32
// STEP: %[[D:.*]] = arith.subi %[[IV]], %c1_i32 : i32
// STEP: %[[I:.*]] = arith.divsi %[[D]], %c32_i32 : i32
// STEP: %[[SLOT:.*]] = arith.remsi %[[I]], %c3_i32 : i32
// STEP: %[[AHEAD:.*]] = arith.addi %[[IV]], %c64_i32 : i32
// STEP: scf.if
// STEP: %[[A1:.*]] = arith.addi %[[IV]], %c63_i32 : i32
// STEP: %[[AI:.*]] = arith.divsi %[[A1]], %c32_i32 : i32
// STEP: %[[AS:.*]] = arith.remsi %[[AI]], %c3_i32 : i32
// STEP: fakvgpu.async_paged_load {{.*}} into %{{.*}}[%[[AS]]]
// STEP: fakvgpu.wait %{{.*}}[%[[SLOT]]]

// UNALIGNED-COUNT-2: fakvgpu.alloc_barriers arrivals 128 : !fakvgpu.barriers<2>
// UNALIGNED-NOT: aligned_rows

// CHANNELS: fakvgpu.async_paged_load {{.*}} channels %c4_i32 {{.*}} signal %{{.*}} {fakvgpu.aligned_rows} :
