// CPU execution of the memory ops at edges memory.mlir does not reach.
// paged_load whose rows wrap past 2^31 - 1: row = leftpad = 2^31 - 1 (valid
//   8, a block table [0]). Tile row i is r = row + i; rows 1.. wrap negative
//   (below valid), and from row 2 on r + leftpad wraps back to 0, 1: those
//   rows are still outside the tile's range (r < row): the tile is all zeros, not
//   cache rows 0 and 1.
// paged_load with channels 5 of an 8 x 8 tile (cache element = its index + 1,
//   8 rows x 8 channels in one page): channels 5..7 of every row are zero,
//   rows 5..7 are read (the bound is on the column, not the row).
// atomic_add returns the value before its addition: 0 then 5 for two adds
//   (5, 7) to one word from 0 (which ends at 12); three programs adding 1 to
//   another word get 0, 1, 2 (it ends at 3).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | FileCheck %s
// CHECK: data =
// CHECK-NEXT: {{\[\[}}0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0],
// CHECK-NEXT:  [0,   0,   0,   0]]
// CHECK: data =
// CHECK-NEXT: {{\[\[}}1,   2,   3,   4,   5,   0,   0,   0],
// CHECK-NEXT:  [9,   10,   11,   12,   13,   0,   0,   0],
// CHECK-NEXT:  [17,   18,   19,   20,   21,   0,   0,   0],
// CHECK-NEXT:  [25,   26,   27,   28,   29,   0,   0,   0],
// CHECK-NEXT:  [33,   34,   35,   36,   37,   0,   0,   0],
// CHECK-NEXT:  [41,   42,   43,   44,   45,   0,   0,   0],
// CHECK-NEXT:  [49,   50,   51,   52,   53,   0,   0,   0],
// CHECK-NEXT:  [57,   58,   59,   60,   61,   0,   0,   0]]
// CHECK: data =
// CHECK-NEXT: [0,  5,  0,  1,  2]
// CHECK: data =
// CHECK-NEXT: [12,  3]

func.func @wrap(%cache: !fakv.ptr<f32>, %table: !fakv.ptr<i32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %max = arith.constant 2147483647 : i32
  %valid = arith.constant 8 : i32
  %ps = arith.constant 8 : i32
  %np = arith.constant 1 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %s8 = arith.constant 8 : i64
  %s64 = arith.constant 64 : i64
  %t = fakv.paged_load %cache[%c0, %max] table %table valid %valid leftpad %max
         page_size %ps num_pages %np strides [%s64, %s8, %s8] : !fakv.ptr<f32> -> tensor<4x4xf32>
  fakv.store %t, %out[%c0, %c0] strides [%s4, %s1] : tensor<4x4xf32>, !fakv.ptr<f32>
  return
}

func.func @channels(%cache: !fakv.ptr<f32>, %table: !fakv.ptr<i32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c5 = arith.constant 5 : i32
  %valid = arith.constant 8 : i32
  %ps = arith.constant 8 : i32
  %np = arith.constant 1 : i32
  %s1 = arith.constant 1 : i64
  %s8 = arith.constant 8 : i64
  %s64 = arith.constant 64 : i64
  %t = fakv.paged_load %cache[%c0, %c0] table %table valid %valid channels %c5
         page_size %ps num_pages %np strides [%s64, %s8, %s8] : !fakv.ptr<f32> -> tensor<8x8xf32>
  fakv.store %t, %out[%c0, %c0] strides [%s8, %s1] : tensor<8x8xf32>, !fakv.ptr<f32>
  return
}

// olds[0:2] = the two adds' results on counters[0]; olds[2 + pid] = program
// pid's add of 1 on counters[1].
func.func @atomics(%counters: !fakv.ptr<i32>, %olds: !fakv.ptr<i32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c5 = arith.constant 5 : i32
  %c7 = arith.constant 7 : i32
  %s1 = arith.constant 1 : i64
  %pid = fakv.program_id 0
  %first = arith.cmpi eq, %pid, %c0 : i32
  scf.if %first {
    %a = fakv.atomic_add %counters[%c0], %c5 : !fakv.ptr<i32>
    %b = fakv.atomic_add %counters[%c0], %c7 : !fakv.ptr<i32>
    %ta = fakv.splat %a : i32 -> tensor<1xi32>
    %tb = fakv.splat %b : i32 -> tensor<1xi32>
    fakv.store %ta, %olds[%c0] strides [%s1] : tensor<1xi32>, !fakv.ptr<i32>
    fakv.store %tb, %olds[%c1] strides [%s1] : tensor<1xi32>, !fakv.ptr<i32>
  }
  %n = fakv.atomic_add %counters[%c1], %c1 : !fakv.ptr<i32>
  %tn = fakv.splat %n : i32 -> tensor<1xi32>
  %at = arith.addi %pid, %c2 : i32
  fakv.store %tn, %olds[%at] strides [%s1] : tensor<1xi32>, !fakv.ptr<i32>
  return
}

memref.global "private" constant @cache : memref<64xf32> = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0, 64.0]>
memref.global "private" constant @table : memref<1xi32> = dense<0>

func.func private @printMemrefI32(memref<*xi32>)

func.func @main() {
  %g = arith.constant 1 : i32
  %g3 = arith.constant 3 : i32
  %cache = memref.get_global @cache : memref<64xf32>
  %table = memref.get_global @table : memref<1xi32>
  %pc = fakv.ptr_of %cache : memref<64xf32> -> !fakv.ptr<f32>
  %pt = fakv.ptr_of %table : memref<1xi32> -> !fakv.ptr<i32>
  %o1 = memref.alloc() : memref<16xf32>
  %p1 = fakv.ptr_of %o1 : memref<16xf32> -> !fakv.ptr<f32>
  fakv.launch @wrap[%g, %g, %g](%pc, %pt, %p1) : (!fakv.ptr<f32>, !fakv.ptr<i32>, !fakv.ptr<f32>)
  %o2 = memref.alloc() : memref<64xf32>
  %p2 = fakv.ptr_of %o2 : memref<64xf32> -> !fakv.ptr<f32>
  fakv.launch @channels[%g, %g, %g](%pc, %pt, %p2) : (!fakv.ptr<f32>, !fakv.ptr<i32>, !fakv.ptr<f32>)
  %zero = arith.constant 0 : i32
  %counters = memref.alloc() : memref<2xi32>
  linalg.fill ins(%zero : i32) outs(%counters : memref<2xi32>)
  %olds = memref.alloc() : memref<5xi32>
  %pcn = fakv.ptr_of %counters : memref<2xi32> -> !fakv.ptr<i32>
  %po = fakv.ptr_of %olds : memref<5xi32> -> !fakv.ptr<i32>
  fakv.launch @atomics[%g3, %g, %g](%pcn, %po) : (!fakv.ptr<i32>, !fakv.ptr<i32>)
  %d1 = memref.expand_shape %o1 [[0, 1]] output_shape [4, 4] : memref<16xf32> into memref<4x4xf32>
  %u1 = memref.cast %d1 : memref<4x4xf32> to memref<*xf32>
  func.call @printMemrefF32(%u1) : (memref<*xf32>) -> ()
  %d2 = memref.expand_shape %o2 [[0, 1]] output_shape [8, 8] : memref<64xf32> into memref<8x8xf32>
  %u2 = memref.cast %d2 : memref<8x8xf32> to memref<*xf32>
  func.call @printMemrefF32(%u2) : (memref<*xf32>) -> ()
  %u3 = memref.cast %olds : memref<5xi32> to memref<*xi32>
  func.call @printMemrefI32(%u3) : (memref<*xi32>) -> ()
  %u4 = memref.cast %counters : memref<2xi32> to memref<*xi32>
  func.call @printMemrefI32(%u4) : (memref<*xi32>) -> ()
  return
}
