// A block-table entry outside [0, num_pages) stops the CPU path with a
// message instead of reading outside the cache.
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | not %mlir-runner 2>&1 | FileCheck %s
// CHECK: fakv.paged_load: page index outside [0, num_pages)

func.func @bad_page(%cache: !fakv.ptr<f32>, %table: !fakv.ptr<i32>, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %valid = arith.constant 8 : i32
  %ps = arith.constant 4 : i32
  %np = arith.constant 2 : i32
  %sp = arith.constant 16 : i64
  %sr = arith.constant 4 : i64
  %sh = arith.constant 4 : i64
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %k = fakv.paged_load %cache[%c0, %c0] table %table valid %valid page_size %ps num_pages %np
         strides [%sp, %sr, %sh] : !fakv.ptr<f32> -> tensor<8x4xf32>
  fakv.store %k, %out[%c0, %c0] strides [%s4, %s1] : tensor<8x4xf32>, !fakv.ptr<f32>
  return
}

memref.global "private" constant @table : memref<2xi32> = dense<[1, 9]>

func.func @main() {
  %cache = memref.alloc() : memref<32xf32>
  %out = memref.alloc() : memref<32xf32>
  %table = memref.get_global @table : memref<2xi32>
  %pc = fakv.ptr_of %cache : memref<32xf32> -> !fakv.ptr<f32>
  %pt = fakv.ptr_of %table : memref<2xi32> -> !fakv.ptr<i32>
  %po = fakv.ptr_of %out : memref<32xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @bad_page[%g, %g, %g](%pc, %pt, %po) : (!fakv.ptr<f32>, !fakv.ptr<i32>, !fakv.ptr<f32>)
  return
}
