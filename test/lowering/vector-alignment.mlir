// Vector loads and stores: 16 bytes per access where a thread holds 8
// consecutive bf16. Without divisibility facts each vector checks its
// address at run time (ptrtoint, and, cmp) and falls back to elements;
// with {fakv.divisibility = 16} on the pointer and the row stride the
// lowering knows every vector is aligned and checks bounds only.
// RUN: fakv-opt %s --split-input-file --fakv-to-fakvgpu --fakvgpu-lower-warp-specialize --fakvgpu-plan-shared-memory --fakvgpu-tma-arguments --fakvgpu-mark-aligned --convert-fakvgpu-to-nvvm --fakvgpu-outline-kernels | FileCheck %s

// CHECK-LABEL: gpu.func @copy_unknown
// CHECK: llvm.ptrtoint
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: llvm.ptrtoint
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
func.func @copy_unknown(%x: !fakv.ptr<bf16>, %y: !fakv.ptr<bf16>, %stride: i64, %n: i32)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %x[%c0, %c0] strides [%stride, %s1] bounds [%n, %n] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  fakv.store %t, %y[%c0, %c0] strides [%stride, %s1] bounds [%n, %n] : tensor<64x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

// CHECK-LABEL: gpu.func @copy_aligned
// CHECK-NOT: llvm.ptrtoint
// CHECK: arith.cmpi slt, %{{.*}}, %arg3 : i32
// CHECK-NOT: llvm.ptrtoint
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK-NOT: llvm.ptrtoint
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
func.func @copy_aligned(%x: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                        %y: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                        %stride: i64 {fakv.divisibility = 16 : i64}, %n: i32)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %row = arith.constant 3 : i64
  %off = arith.muli %row, %stride : i64
  %xr = fakv.addptr %x, %off : !fakv.ptr<bf16>
  %t = fakv.load %xr[%c0, %c0] strides [%stride, %s1] bounds [%n, %n] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  fakv.store %t, %y[%c0, %c0] strides [%stride, %s1] bounds [%n, %n] : tensor<64x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

// An aligned pointer is not enough: the row stride's divisibility is unknown.
// CHECK-LABEL: gpu.func @stride_unknown
// CHECK: llvm.ptrtoint
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
func.func @stride_unknown(%x: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                          %y: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %stride: i64, %n: i32)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %x[%c0, %c0] strides [%stride, %s1] bounds [%n, %n] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  fakv.store %t, %y[%c0, %c0] strides [%s1, %s1] bounds [%n, %n] : tensor<64x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

// Nor with divisible strides when the column offset (3) is not a multiple
// of the vector width; the bounds are still checked in the aligned case.
// CHECK-LABEL: gpu.func @column_offset
// CHECK: llvm.ptrtoint
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
func.func @column_offset(%x: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                         %stride: i64 {fakv.divisibility = 16 : i64}, %n: i32)
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c3 = arith.constant 3 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %x[%c0, %c3] strides [%stride, %s1] bounds [%n, %n] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  fakv.store %t, %x[%c0, %c0] strides [%stride, %s1] bounds [%n, %n] : tensor<64x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

// With the column bound a multiple of 16 as well, a vector is wholly inside
// or wholly outside the bounds: its first element decides, and there is no
// element-by-element fallback.
// CHECK-LABEL: gpu.func @copy_whole
// CHECK-NOT: llvm.ptrtoint
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK-NOT: !llvm.ptr<1> -> bf16
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>
// CHECK-NOT: : bf16, !llvm.ptr<1>
// CHECK: gpu.return
func.func @copy_whole(%x: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                      %y: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                      %stride: i64 {fakv.divisibility = 16 : i64}, %m: i32, %n: i32 {fakv.divisibility = 16 : i64})
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %x[%c0, %c0] strides [%stride, %s1] bounds [%m, %n] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  fakv.store %t, %y[%c0, %c0] strides [%stride, %s1] bounds [%m, %n] : tensor<64x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

// Half a multiple of 16 (rotary_dim // 2, say) is a multiple of 8: whole
// vectors of 8 bf16 too.
// CHECK-LABEL: gpu.func @half_bound
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK-NOT: !llvm.ptr<1> -> bf16
// CHECK: gpu.return
func.func @half_bound(%x: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                      %y: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                      %stride: i64 {fakv.divisibility = 16 : i64}, %m: i32, %n: i32 {fakv.divisibility = 16 : i64})
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %s1 = arith.constant 1 : i64
  %h = arith.divsi %n, %c2 : i32
  %t = fakv.load %x[%c0, %c0] strides [%stride, %s1] bounds [%m, %h] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  fakv.store %t, %y[%c0, %c0] strides [%stride, %s1] bounds [%m, %n] : tensor<64x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

// Not whole: the column bound is only known to be a multiple of 4 (8-wide
// vectors), or is a multiple of 16 divided by 32 (not exact); whole: a
// multiple of 16 halved by a shift, a column offset of -8.
// CHECK-LABEL: gpu.func @whole_or_not
func.func @whole_or_not(%x: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                        %stride: i64 {fakv.divisibility = 16 : i64}, %m: i32,
                        %n4: i32 {fakv.divisibility = 4 : i64}, %n16: i32 {fakv.divisibility = 16 : i64})
    attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c32 = arith.constant 32 : i32
  %cm8 = arith.constant -8 : i32
  %s1 = arith.constant 1 : i64
  %inexact = arith.divsi %n16, %c32 : i32
  %shifted = arith.shrui %n16, %c1 : i32
  %a = fakv.load %x[%c0, %c0] strides [%stride, %s1] bounds [%m, %n4] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %b = fakv.load %x[%c0, %c0] strides [%stride, %s1] bounds [%m, %inexact] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %c = fakv.load %x[%c0, %c0] strides [%stride, %s1] bounds [%m, %shifted] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %d = fakv.load %x[%c0, %cm8] strides [%stride, %s1] bounds [%m, %n16] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %ab = arith.addf %a, %b : tensor<64x64xbf16>
  %cd = arith.addf %c, %d : tensor<64x64xbf16>
  %t = arith.addf %ab, %cd : tensor<64x64xbf16>
  fakv.store %t, %x[%c0, %c0] strides [%stride, %s1] bounds [%m, %n16] : tensor<64x64xbf16>, !fakv.ptr<bf16>
  return
}
