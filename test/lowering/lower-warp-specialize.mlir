// fakvgpu-lower-warp-specialize: the producer and consumer regions become
// one scf.if each on the thread id, marked with their role (first thread,
// threads, named barrier); with register counts, setmaxnreg opens each role
// and the kernel is compiled for their average.
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-lower-warp-specialize \
// RUN:   | FileCheck %s --implicit-check-not=nvvm.setmaxregister --implicit-check-not=fakvgpu.max_registers \
// RUN:     --implicit-check-not=fakvgpu.warp_specialize
// RUN: sed 's/registers 0, 0/registers 24, 168/' %S/Inputs/attention-fakvgpu.mlir | fakv-opt --fakvgpu-lower-warp-specialize | FileCheck %s --check-prefix=REGS

// CHECK-LABEL: func.func @attention
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[T:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: %[[P:.*]] = arith.cmpi slt, %[[T]], %c128_i32
// CHECK: scf.if %[[P]] {
// CHECK:   scf.for
// CHECK:     fakvgpu.async_paged_load
// CHECK: } {fakvgpu.role = array<i64: 0, 128, 1>}
// CHECK: %[[C:.*]] = arith.cmpi sge, %[[T]], %{{.*}}
// CHECK: scf.if %[[C]] {
// CHECK:   fakv.load
// CHECK:   fakv.dot
// CHECK: } {fakvgpu.role = array<i64: 128, 128, 2>}

// REGS: func.func @attention({{.*}}) attributes {{{.*}}fakvgpu.max_registers = 96 : i32
// REGS: scf.if
// REGS: nvvm.setmaxregister  decrease 24
// REGS: scf.if
// REGS: nvvm.setmaxregister  increase 168
