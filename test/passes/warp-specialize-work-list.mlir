// A loop whose copies take their row from a work list (kernels/worklist.py's
// form): the producer reads the list's entry for iteration iv before it waits
// for the slot to be free, and only the copies come after the wait.
// RUN: fakv-opt %s --fakv-decompose --canonicalize --fakv-assign-layouts \
// RUN:   --loop-invariant-code-motion --fakv-pipeline --fakv-warp-specialize --canonicalize | FileCheck %s

// CHECK-LABEL: func.func @work_list(
// CHECK: fakvgpu.warp_specialize
// CHECK:   scf.for %[[IV:.*]] = {{.*}} {
// CHECK:     fakv.load_scalar %{{.*}}[%[[IV]]]
// CHECK-NOT: fakvgpu.async_paged_load
// CHECK:     scf.if
// CHECK-NEXT:  arith.divsi
// CHECK:       fakvgpu.wait
// CHECK:     }
// CHECK-NEXT: fakvgpu.async_paged_load
// CHECK:     fakvgpu.async_paged_load
// CHECK: }, {
func.func @work_list(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                     %vc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %bt: !fakv.ptr<i32>,
                     %wl: !fakv.ptr<i32>, %o: !fakv.ptr<f32>, %n: i32, %np: i32, %count: i32)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %ps = arith.constant 64 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16>
  %m0 = fakv.splat %ninf : f32 -> tensor<16xf32>
  %l0 = fakv.splat %zero : f32 -> tensor<16xf32>
  %a0 = fakv.splat %zero : f32 -> tensor<16x64xf32>
  %s0 = fakv.splat %zero : f32 -> tensor<16x32xf32>
  %m, %l, %acc = scf.for %i = %c0 to %count step %c1 iter_args(%mi = %m0, %li = %l0, %ai = %a0)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>) : i32 {
    %blk = fakv.load_scalar %wl[%i] : !fakv.ptr<i32> -> i32
    %row = arith.muli %blk, %c32 : i32
    %k = fakv.paged_load %kc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16>
    %v = fakv.paged_load %vc[%c0, %row] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16>
    %s = fakv.dot %qt, %k, %s0 {transpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xf32>
    %m1, %l1, %p, %alpha = fakv.online_softmax %s, %mi, %li scale %scale : tensor<16x32xf32>, tensor<16xf32>
    %ae = fakv.expand_dims %alpha, 1 : tensor<16xf32> -> tensor<16x1xf32>
    %ab = fakv.broadcast %ae : tensor<16x1xf32> -> tensor<16x64xf32>
    %as = arith.mulf %ai, %ab : tensor<16x64xf32>
    %pb = fakv.cast %p : tensor<16x32xf32> -> tensor<16x32xbf16>
    %a1 = fakv.dot %pb, %v, %as : tensor<16x32xbf16>, tensor<32x64xbf16> -> tensor<16x64xf32>
    scf.yield %m1, %l1, %a1 : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  }
  fakv.store %acc, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x64xf32>, !fakv.ptr<f32>
  return
}
