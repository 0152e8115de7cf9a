// fakv.cluster_gather on the GPU: the kernel runs in clusters of 4 programs
// on grid axis 2 (.reqnctapercluster). It starts by initialising the
// gather's mbarrier (an arrival from each of the 4 programs), fencing that
// at cluster scope and arriving (relaxed) on the cluster barrier; at the
// gather each program waits on that barrier (every mbarrier ready), writes
// each element of both tiles into every program's shared memory
// (st.shared::cluster through mapa; one writer per element), meets, and its
// thread r arrives on rank r's mbarrier (release, cluster scope); all wait on their own (acquire, cluster scope) and read the
// gathered tiles from their own shared memory. The PTX passes ptxas
// for sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK: .entry merged_rows(
// CHECK: .reqnctapercluster 1, 1, 4
// CHECK: mov.b32 [[ARRIVALS:%r[0-9]+]], 4;
// CHECK-NEXT: mbarrier.init.shared.b64 [{{.*}}], [[ARRIVALS]];
// CHECK: fence.mbarrier_init.release.cluster;
// CHECK: barrier.cluster.arrive.relaxed;
// CHECK: barrier.cluster.wait;
// CHECK: mov.u32 {{.*}}, %cluster_ctarank;
// CHECK: mapa.shared::cluster.u64
// CHECK: st.shared::cluster.b32
// CHECK: bar.sync 0;
// CHECK: mbarrier.arrive.release.cluster.shared::cluster.b64
// CHECK: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64
// CHECK: ld.shared.b32
// CHECK-NOT: barrier.cluster
func.func @merged_rows(%x: !fakv.ptr<f32>, %n: !fakv.ptr<i32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %split = fakv.program_id 2
  %row = arith.muli %split, %c0 : i32
  %t = fakv.load %x[%row] strides [%s1] : !fakv.ptr<f32> -> tensor<128xf32>
  %m = fakv.load %n[%row] strides [%s1] : !fakv.ptr<i32> -> tensor<128xi32>
  %all, %ms = fakv.cluster_gather(%t, %m) size 4 : tensor<128xf32>, tensor<128xi32> -> tensor<128x4xf32>, tensor<128x4xi32>
  %sum = fakv.reduce sum %all, 1 : tensor<128x4xf32> -> tensor<128xf32>
  %big = fakv.reduce max %ms, 1 : tensor<128x4xi32> -> tensor<128xi32>
  %f = arith.sitofp %big : tensor<128xi32> to tensor<128xf32>
  %r = arith.addf %sum, %f : tensor<128xf32>
  fakv.store %r, %out[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
  return
}

// A tile shared out: each element written once, into the program of its
// slice of columns (mapa to a rank computed from the column), then the same
// arrival and wait.
// CHECK: .entry shared_out(
// CHECK: .reqnctapercluster 1, 1, 4
// CHECK: barrier.cluster.wait;
// CHECK: mapa.shared::cluster.u64 {{%rd[0-9]+}}, {{%rd[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: st.shared::cluster.b32
// CHECK: mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64
func.func @shared_out(%x: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s32 = arith.constant 32 : i64
  %t = fakv.load %x[%c0, %c0] strides [%s32, %s1] : !fakv.ptr<f32> -> tensor<4x32xf32>
  %cols = fakv.cluster_gather(%t) size 4 {scatter = array<i1: true>} : tensor<4x32xf32> -> tensor<4x8x4xf32>
  %sum = fakv.reduce sum %cols, 2 : tensor<4x8x4xf32> -> tensor<4x8xf32>
  fakv.store %sum, %out[%c0, %c0] strides [%s32, %s1] : tensor<4x8xf32>, !fakv.ptr<f32>
  return
}
