// CPU execution of the memory ops: load (bounds, negative offsets, mask,
// other), store (bounds, mask), addptr, load_scalar, and paged_load through a
// block table (with left padding and rows past the valid length) and on a
// contiguous cache. Expected values: reference.py (memory).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/memory.expected

func.func @memory(%mat: !fakv.ptr<f32>, %ints: !fakv.ptr<i32>, %cache: !fakv.ptr<bf16>,
                  %o0: !fakv.ptr<f32>, %o1: !fakv.ptr<f32>, %o2: !fakv.ptr<f32>,
                  %o3: !fakv.ptr<f32>, %o4: !fakv.ptr<f32>, %o5: !fakv.ptr<f32>,
                  %o6: !fakv.ptr<bf16>, %o7: !fakv.ptr<bf16>,
                  %o8: !fakv.ptr<bf16>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c5 = arith.constant 5 : i32
  %c6 = arith.constant 6 : i32
  %cm1 = arith.constant -1 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %s6 = arith.constant 6 : i64
  %s8 = arith.constant 8 : i64
  // mat is 5 x 6 (row-major). o0 = 4x8 tile at (1, 2), bounds (5, 6), other -7.
  %other = arith.constant -7.0 : f32
  %t0 = fakv.load %mat[%c1, %c2] strides [%s6, %s1] bounds [%c5, %c6] other %other
          : !fakv.ptr<f32> -> tensor<4x8xf32>
  fakv.store %t0, %o0[%c0, %c0] strides [%s8, %s1] : tensor<4x8xf32>, !fakv.ptr<f32>
  // o1 = 3x4 tile at (-1, 0): row 0 is before the start -> 0.
  %t1 = fakv.load %mat[%cm1, %c0] strides [%s6, %s1] bounds [%c5, %c6]
          : !fakv.ptr<f32> -> tensor<3x4xf32>
  fakv.store %t1, %o1[%c0, %c0] strides [%s4, %s1] : tensor<3x4xf32>, !fakv.ptr<f32>
  // o2 = row 2 of mat, columns 0..5, masked to the even columns.
  %cols = fakv.arange 0 to 6 : tensor<6xi32>
  %two = arith.constant dense<2> : tensor<6xi32>
  %zero = arith.constant dense<0> : tensor<6xi32>
  %rem = arith.remsi %cols, %two : tensor<6xi32>
  %even = arith.cmpi eq, %rem, %zero : tensor<6xi32>
  %t2 = fakv.load %mat[%c2] strides [%s1] mask %even : !fakv.ptr<f32> -> tensor<6xf32>
  %t2r = fakv.load %mat[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<6xf32>
  fakv.store %t2, %o2[%c0] strides [%s1] : tensor<6xf32>, !fakv.ptr<f32>
  // o3 (3 x 3, pre-filled with -1): store a 4x4 tile at (1, 1) with bounds (3, 3).
  %t3 = fakv.load %mat[%c0, %c0] strides [%s6, %s1] : !fakv.ptr<f32> -> tensor<4x4xf32>
  fakv.store %t3, %o3[%c1, %c1] strides [%s4, %s1] bounds [%c3, %c3] : tensor<4x4xf32>, !fakv.ptr<f32>
  // o4 (6, pre-filled with -1): store row 0 of mat where the column is even.
  fakv.store %t2r, %o4[%c0] strides [%s1] mask %even : tensor<6xf32>, !fakv.ptr<f32>
  // o5[0] = ints[4 + 3] through addptr and load_scalar.
  %four = arith.constant 4 : i64
  %p = fakv.addptr %ints, %four : !fakv.ptr<i32>
  %v = fakv.load_scalar %p[%c3] : !fakv.ptr<i32> -> i32
  %vf = arith.sitofp %v : i32 to f32
  %vt = fakv.splat %vf : f32 -> tensor<1xf32>
  fakv.store %vt, %o5[%c0] strides [%s1] : tensor<1xf32>, !fakv.ptr<f32>
  // The cache is 5 pages x 4 rows x 2 heads x 8 channels. Block table
  // ints[0:4] = [3, 0, 4, -1]. o6 = rows [4, 12) of head 1, valid 9, leftpad 2.
  %ps = arith.constant 4 : i32
  %np = arith.constant 5 : i32
  %valid = arith.constant 9 : i32
  %four32 = arith.constant 4 : i32
  %sp = arith.constant 64 : i64
  %sr = arith.constant 16 : i64
  %sh = arith.constant 8 : i64
  %k = fakv.paged_load %cache[%c1, %four32] table %ints valid %valid leftpad %c2
         page_size %ps num_pages %np strides [%sp, %sr, %sh] : !fakv.ptr<bf16> -> tensor<8x8xbf16>
  fakv.store %k, %o6[%c0, %c0] strides [%s8, %s1] : tensor<8x8xbf16>, !fakv.ptr<bf16>
  // The first 256 elements of the same buffer seen as a contiguous cache of
  // 2 sequences x 8 rows x 2 heads x 8 channels: o7 = sequence 1, head 0,
  // rows [0, 8), valid 6, leftpad 1.
  %ps8 = arith.constant 8 : i32
  %nb = arith.constant 2 : i32
  %sp2 = arith.constant 128 : i64
  %v6 = arith.constant 6 : i32
  %vv = fakv.paged_load %cache[%c0, %c0] page %c1 valid %v6 leftpad %c1
         page_size %ps8 num_pages %nb strides [%sp2, %sr, %sh] : !fakv.ptr<bf16> -> tensor<8x8xbf16>
  fakv.store %vv, %o7[%c0, %c0] strides [%s8, %s1] : tensor<8x8xbf16>, !fakv.ptr<bf16>
  // o8 = sequence 0, head 0, valid 8, leftpad 1: its last row would be row 8, past the sequence's
  // 8 rows (the next sequence's first): zeros.
  %v8 = arith.constant 8 : i32
  %vw = fakv.paged_load %cache[%c0, %c0] page %c0 valid %v8 leftpad %c1
         page_size %ps8 num_pages %nb strides [%sp2, %sr, %sh] : !fakv.ptr<bf16> -> tensor<8x8xbf16>
  fakv.store %vw, %o8[%c0, %c0] strides [%s8, %s1] : tensor<8x8xbf16>, !fakv.ptr<bf16>
  return
}

memref.global "private" constant @ints : memref<8xi32> = dense<[3, 0, 4, -1, 10, 20, 30, 40]>

func.func @main() {
  %mat = memref.alloc() : memref<30xf32>
  %cache = memref.alloc() : memref<320xbf16>
  %o0 = memref.alloc() : memref<32xf32>
  %o1 = memref.alloc() : memref<12xf32>
  %o2 = memref.alloc() : memref<6xf32>
  %o3 = memref.alloc() : memref<12xf32>
  %o4 = memref.alloc() : memref<6xf32>
  %o5 = memref.alloc() : memref<1xf32>
  %o6 = memref.alloc() : memref<64xbf16>
  %o7 = memref.alloc() : memref<64xbf16>
  %o8 = memref.alloc() : memref<64xbf16>
  %ints = memref.get_global @ints : memref<8xi32>
  %m1 = arith.constant -1.0 : f32
  linalg.fill ins(%m1 : f32) outs(%o3 : memref<12xf32>)
  linalg.fill ins(%m1 : f32) outs(%o4 : memref<6xf32>)
  %seed4 = arith.constant 4 : i64
  %seed5 = arith.constant 5 : i64
  %dmat = memref.cast %mat : memref<30xf32> to memref<?xf32>
  %dcache = memref.cast %cache : memref<320xbf16> to memref<?xbf16>
  func.call @fill_f32(%dmat, %seed4) : (memref<?xf32>, i64) -> ()
  func.call @fill_bf16(%dcache, %seed5) : (memref<?xbf16>, i64) -> ()
  %pmat = fakv.ptr_of %mat : memref<30xf32> -> !fakv.ptr<f32>
  %pints = fakv.ptr_of %ints : memref<8xi32> -> !fakv.ptr<i32>
  %pcache = fakv.ptr_of %cache : memref<320xbf16> -> !fakv.ptr<bf16>
  %p0 = fakv.ptr_of %o0 : memref<32xf32> -> !fakv.ptr<f32>
  %p1 = fakv.ptr_of %o1 : memref<12xf32> -> !fakv.ptr<f32>
  %p2 = fakv.ptr_of %o2 : memref<6xf32> -> !fakv.ptr<f32>
  %p3 = fakv.ptr_of %o3 : memref<12xf32> -> !fakv.ptr<f32>
  %p4 = fakv.ptr_of %o4 : memref<6xf32> -> !fakv.ptr<f32>
  %p5 = fakv.ptr_of %o5 : memref<1xf32> -> !fakv.ptr<f32>
  %p6 = fakv.ptr_of %o6 : memref<64xbf16> -> !fakv.ptr<bf16>
  %p7 = fakv.ptr_of %o7 : memref<64xbf16> -> !fakv.ptr<bf16>
  %p8 = fakv.ptr_of %o8 : memref<64xbf16> -> !fakv.ptr<bf16>
  %g = arith.constant 1 : i32
  fakv.launch @memory[%g, %g, %g](%pmat, %pints, %pcache, %p0, %p1, %p2, %p3, %p4, %p5, %p6, %p7, %p8)
    : (!fakv.ptr<f32>, !fakv.ptr<i32>, !fakv.ptr<bf16>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>,
       !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<bf16>, !fakv.ptr<bf16>,
       !fakv.ptr<bf16>)
  %d0 = memref.cast %o0 : memref<32xf32> to memref<?xf32>
  %d1 = memref.cast %o1 : memref<12xf32> to memref<?xf32>
  %d2 = memref.cast %o2 : memref<6xf32> to memref<?xf32>
  %d3 = memref.cast %o3 : memref<12xf32> to memref<?xf32>
  %d4 = memref.cast %o4 : memref<6xf32> to memref<?xf32>
  %d5 = memref.cast %o5 : memref<1xf32> to memref<?xf32>
  %d6 = memref.cast %o6 : memref<64xbf16> to memref<?xbf16>
  %d7 = memref.cast %o7 : memref<64xbf16> to memref<?xbf16>
  %d8 = memref.cast %o8 : memref<64xbf16> to memref<?xbf16>
  func.call @print_f32(%d0) : (memref<?xf32>) -> ()
  func.call @print_f32(%d1) : (memref<?xf32>) -> ()
  func.call @print_f32(%d2) : (memref<?xf32>) -> ()
  func.call @print_f32(%d3) : (memref<?xf32>) -> ()
  func.call @print_f32(%d4) : (memref<?xf32>) -> ()
  func.call @print_f32(%d5) : (memref<?xf32>) -> ()
  func.call @print_bf16(%d6) : (memref<?xbf16>) -> ()
  func.call @print_bf16(%d7) : (memref<?xbf16>) -> ()
  func.call @print_bf16(%d8) : (memref<?xbf16>) -> ()
  return
}
