// A 1-D i32 tile reduced to a scalar on the GPU (the DSL's fl.sum / fl.max of
// a 1-D tile: expand_dims, fakv.reduce along axis 1, fakv.item): each thread
// combines its registers, the lanes in one redux.sync when the whole warp
// reduces (every lane bit along the axis; for max and min, replicated lanes
// too), else by butterfly shuffles (an i32 sum over replicated lanes, any
// f32), the warps through shared memory, and every thread then holds the
// scalar, broadcast from lane 0 (so that ptxas keeps what is made from it in
// uniform registers), used here as a load's index. The PTX passes ptxas for
// sm_90a.
// REQUIRES: ptxas
// RUN: fakv-compile %s -o %t --format=isa
// RUN: FileCheck %s < %t.ptx
// RUN: %ptxas -arch=sm_90a %t.ptx -o %t.cubin

// CHECK-LABEL: .entry count_and_longest(
// CHECK-NOT: shfl.sync.bfly
// CHECK: max.s32
// CHECK: redux.sync.max.s32
// CHECK-NOT: shfl.sync.bfly
// CHECK: bar.sync 0;
// CHECK: st.shared.b32
// CHECK: bar.sync 0;
// CHECK: ld.shared{{.*}}.b32
// CHECK-NOT: shfl.sync.bfly
// CHECK: redux.sync.add.s32
// CHECK-NOT: shfl.sync.bfly
// CHECK: shfl.sync.idx.b32 {{.*}}, 0, 31, -1;
// CHECK: shfl.sync.idx.b32 {{.*}}, 0, 31, -1;
// CHECK: add.s32
func.func @count_and_longest(%lens: !fakv.ptr<i32>, %out: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %x = fakv.load %lens[%c0] strides [%s1] bounds [%n] : !fakv.ptr<i32> -> tensor<256xi32>
  %x2 = fakv.expand_dims %x, 0 : tensor<256xi32> -> tensor<1x256xi32>
  %m = fakv.reduce max %x2, 1 : tensor<1x256xi32> -> tensor<1xi32>
  %s = fakv.reduce sum %x2, 1 : tensor<1x256xi32> -> tensor<1xi32>
  %longest = fakv.item %m : tensor<1xi32> -> i32
  %total = fakv.item %s : tensor<1xi32> -> i32
  %at = fakv.load_scalar %lens[%longest] : !fakv.ptr<i32> -> i32
  %r = arith.addi %at, %total : i32
  %t = fakv.splat %r : i32 -> tensor<128xi32>
  fakv.store %t, %out[%c0] strides [%s1] : tensor<128xi32>, !fakv.ptr<i32>
  return
}

// 16 lengths over 4 lanes x 4 registers, the other 3 lane bits replicating:
// max in one redux.sync, the sum by shuffles over the 2 lane bits it moves
// along (a redux.sync would count each length 8 times).
// CHECK-LABEL: .entry small_sum(
// CHECK: redux.sync.max.s32
// CHECK-NOT: redux.sync
// CHECK: shfl.sync.bfly.b32 {{.*}}, 1, 31, -1;
// CHECK: shfl.sync.bfly.b32 {{.*}}, 2, 31, -1;
// CHECK-NOT: shfl.sync.bfly
func.func @small_sum(%lens: !fakv.ptr<i32>, %out: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %x = fakv.load %lens[%c0] strides [%s1] bounds [%n] : !fakv.ptr<i32> -> tensor<16xi32>
  %x2 = fakv.expand_dims %x, 0 : tensor<16xi32> -> tensor<1x16xi32>
  %m = fakv.reduce max %x2, 1 : tensor<1x16xi32> -> tensor<1xi32>
  %s = fakv.reduce sum %x2, 1 : tensor<1x16xi32> -> tensor<1xi32>
  %longest = fakv.item %m : tensor<1xi32> -> i32
  %total = fakv.item %s : tensor<1xi32> -> i32
  %r = arith.addi %longest, %total : i32
  %t = fakv.splat %r : i32 -> tensor<128xi32>
  fakv.store %t, %out[%c0] strides [%s1] : tensor<128xi32>, !fakv.ptr<i32>
  return
}

// An f32 sum: butterfly shuffles over the 5 lane bits (sm_90 has no f32 redux).
// CHECK-LABEL: .entry float_sum(
// CHECK-NOT: redux.sync
// CHECK-COUNT-5: shfl.sync.bfly.b32
func.func @float_sum(%xs: !fakv.ptr<f32>, %out: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %x = fakv.load %xs[%c0] strides [%s1] bounds [%n] : !fakv.ptr<f32> -> tensor<256xf32>
  %x2 = fakv.expand_dims %x, 0 : tensor<256xf32> -> tensor<1x256xf32>
  %s = fakv.reduce sum %x2, 1 : tensor<1x256xf32> -> tensor<1xf32>
  %total = fakv.item %s : tensor<1xf32> -> f32
  %t = fakv.splat %total : f32 -> tensor<128xf32>
  fakv.store %t, %out[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
  return
}
