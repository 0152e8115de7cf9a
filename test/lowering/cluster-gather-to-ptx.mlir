// fakv.cluster_gather on the GPU: the kernel runs in clusters of 4 programs
// on grid axis 2 (.reqnctapercluster); each program writes its tile to shared
// memory, the cluster meets (barrier.cluster arrive / wait), each element
// [i, r] is read from rank r's copy through distributed shared memory (mapa,
// ld.shared::cluster), and the cluster meets again before any program reuses
// or frees its copy. The PTX passes ptxas for sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK: .entry merged_rows(
// CHECK: .reqnctapercluster 1, 1, 4
// CHECK: st.shared.v4.b32
// CHECK: barrier.cluster.arrive;
// CHECK-NEXT: barrier.cluster.wait;
// CHECK: mapa.shared::cluster.u64
// CHECK: ld.shared::cluster.b32
// CHECK: barrier.cluster.arrive;
// CHECK-NEXT: barrier.cluster.wait;
func.func @merged_rows(%x: !fakv.ptr<f32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %split = fakv.program_id 2
  %row = arith.muli %split, %c0 : i32
  %t = fakv.load %x[%row] strides [%s1] : !fakv.ptr<f32> -> tensor<128xf32>
  %all = fakv.cluster_gather %t, 4 : tensor<128xf32> -> tensor<128x4xf32>
  %sum = fakv.reduce sum %all, 1 : tensor<128x4xf32> -> tensor<128xf32>
  fakv.store %sum, %out[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
  return
}
