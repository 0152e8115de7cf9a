// fakv-warp-specialize with a fakv.dependency_wait (the DSL's
// fl.dependency_wait: wait for the kernel before, under programmatic
// dependent launch): it stays before the roles split, so the producer's K/V
// copies wait too (moved into the consumer, they read the cache before the
// kernel before had written it); in the PTX, griddepcontrol.wait comes before
// the first TMA copy. After the loop it goes with the consumer; inside a
// region it is refused.
// RUN: sed -e 's/^  %blocks = /  fakv.dependency_wait\n  %blocks = /' %S/Inputs/attention.mlir \
// RUN:   | fakv-opt --fakv-decompose --canonicalize --fakv-assign-layouts --loop-invariant-code-motion \
// RUN:   --fakv-pipeline --fakv-warp-specialize | FileCheck %s
// RUN: sed -e 's/^  %blocks = /  fakv.dependency_wait\n  %blocks = /' %S/Inputs/attention.mlir \
// RUN:   | fakv-opt --fakv-to-cubin=format=isa | FileCheck %s --check-prefix=PTX
// RUN: sed -e 's/^    %row = /    fakv.dependency_wait\n    %row = /' %S/Inputs/attention.mlir \
// RUN:   | %not fakv-opt --fakv-decompose --canonicalize --fakv-assign-layouts --loop-invariant-code-motion \
// RUN:   --fakv-pipeline --fakv-warp-specialize 2>&1 | FileCheck %s --check-prefix=NESTED

// CHECK-LABEL: func.func @attention(
// CHECK: fakv.dependency_wait
// CHECK: fakvgpu.warp_specialize
// CHECK-NOT: fakv.dependency_wait
// CHECK: fakvgpu.async_paged_load
// CHECK: }, {
// CHECK-NOT: fakv.dependency_wait
// CHECK: return

// (the kernel's own wait: after the launch of its dependents, which the
// lowering's default wait at entry comes before)
// PTX: griddepcontrol.launch_dependents;
// PTX: griddepcontrol.wait;
// PTX-NOT: griddepcontrol.wait;
// PTX: cp.async.bulk.tensor

// NESTED: has a fakv.dependency_wait inside a region; with warp specialization it must be at the kernel's top level

// After the loop, the wait goes with the consumer (the copies precede it in
// the kernel as written): the roles split first.
// RUN: sed -e 's/^  fakv.store %acc/  fakv.dependency_wait\n  fakv.store %acc/' %S/Inputs/attention.mlir \
// RUN:   | fakv-opt --fakv-decompose --canonicalize --fakv-assign-layouts --loop-invariant-code-motion \
// RUN:   --fakv-pipeline --fakv-warp-specialize | FileCheck %s --check-prefix=AFTER
// AFTER-LABEL: func.func @attention(
// AFTER-NOT: fakv.dependency_wait
// AFTER: fakvgpu.warp_specialize
// AFTER: }, {
// AFTER: scf.for
// AFTER: fakv.dependency_wait
// AFTER-NEXT: fakv.store
