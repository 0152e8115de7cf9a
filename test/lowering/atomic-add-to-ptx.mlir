// fakv.atomic_add on the GPU: once per program. The threads meet, thread 0
// adds with acquire-release order at device scope (inline PTX: LLVM's NVPTX
// would drop the ordering) and leaves the old value in shared memory, they
// meet and read it, and meet again before the word is reused. The PTX
// passes ptxas for sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK: .entry last_program(
// CHECK: bar.sync 0;
// (thread 0 alone: the other threads branch past the add)
// CHECK: setp.ne.b32 [[NOT0:%p[0-9]+]], %r{{[0-9]+}}, 0;
// CHECK-NEXT: @[[NOT0]] bra
// CHECK-NOT: {{atom\.}}
// CHECK: atom.acq_rel.gpu.global.add.u32 [[OLD:%r[0-9]+]], [{{.*}}], {{.*}};
// CHECK: st.shared.b32 [{{.*}}], [[OLD]];
// CHECK: bar.sync 0;
// CHECK-NEXT: ld.shared.b32
// CHECK-NEXT: bar.sync 0;
// CHECK-NOT: {{atom\.}}
func.func @last_program(%counter: !fakv.ptr<i32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %s1 = arith.constant 1 : i64
  %old = fakv.atomic_add %counter[%c0], %c1 : !fakv.ptr<i32>
  %f = arith.sitofp %old : i32 to f32
  %t = fakv.splat %f : f32 -> tensor<128xf32>
  fakv.store %t, %out[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
  return
}
