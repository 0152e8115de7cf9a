// A block-table entry outside [0, num_pages) reads nothing: its rows are
// zero, and `report` stores the code (here block_table's kind, 2 << 24, plus
// a batch row, 3) to the error word. Rows of pages inside the cache read as
// usual: entry 0 is page 1 (elements 16..31: tile rows 0..3), entry 1 is
// page 9 of 2 (tile rows 4..7).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner 2>&1 | FileCheck %s
// CHECK: data =
// CHECK-NEXT: {{\[}}[16, 17, 18, 19],
// CHECK-NEXT: [20, 21, 22, 23],
// CHECK-NEXT: [24, 25, 26, 27],
// CHECK-NEXT: [28, 29, 30, 31],
// CHECK-NEXT: [0, 0, 0, 0],
// CHECK-NEXT: [0, 0, 0, 0],
// CHECK-NEXT: [0, 0, 0, 0],
// CHECK-NEXT: [0, 0, 0, 0]]
// CHECK: data =
// CHECK-NEXT: [33554435]

func.func @bad_page(%cache: !fakv.ptr<f32>, %table: !fakv.ptr<i32>, %out: !fakv.ptr<f32>,
                    %errors: !fakv.ptr<i32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %valid = arith.constant 8 : i32
  %ps = arith.constant 4 : i32
  %np = arith.constant 2 : i32
  %sp = arith.constant 16 : i64
  %sr = arith.constant 4 : i64
  %sh = arith.constant 4 : i64
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %code = arith.constant 33554435 : i32   // 2 << 24 (block_table) + batch row 3
  %k = fakv.paged_load %cache[%c0, %c0] table %table valid %valid page_size %ps num_pages %np
         strides [%sp, %sr, %sh] report %errors, %code : !fakv.ptr<f32> -> tensor<8x4xf32>
  fakv.store %k, %out[%c0, %c0] strides [%s4, %s1] : tensor<8x4xf32>, !fakv.ptr<f32>
  return
}

func.func private @printMemrefI32(memref<*xi32>)

memref.global "private" constant @table : memref<2xi32> = dense<[1, 9]>

func.func @main() {
  %cache = memref.alloc() : memref<32xf32>
  %out = memref.alloc() : memref<32xf32>
  %errors = memref.alloc() : memref<1xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  scf.for %i = %c0 to %c32 step %c1 {
    %v = arith.index_cast %i : index to i32
    %f = arith.sitofp %v : i32 to f32
    memref.store %f, %cache[%i] : memref<32xf32>
  }
  %z = arith.constant 0 : i32
  memref.store %z, %errors[%c0] : memref<1xi32>
  %table = memref.get_global @table : memref<2xi32>
  %pc = fakv.ptr_of %cache : memref<32xf32> -> !fakv.ptr<f32>
  %pt = fakv.ptr_of %table : memref<2xi32> -> !fakv.ptr<i32>
  %po = fakv.ptr_of %out : memref<32xf32> -> !fakv.ptr<f32>
  %pe = fakv.ptr_of %errors : memref<1xi32> -> !fakv.ptr<i32>
  %g = arith.constant 1 : i32
  fakv.launch @bad_page[%g, %g, %g](%pc, %pt, %po, %pe)
    : (!fakv.ptr<f32>, !fakv.ptr<i32>, !fakv.ptr<f32>, !fakv.ptr<i32>)
  %shaped = memref.reinterpret_cast %out to offset: [0], sizes: [8, 4], strides: [4, 1]
    : memref<32xf32> to memref<8x4xf32>
  %u = memref.cast %shaped : memref<8x4xf32> to memref<*xf32>
  call @printMemrefF32(%u) : (memref<*xf32>) -> ()
  %eu = memref.cast %errors : memref<1xi32> to memref<*xi32>
  call @printMemrefI32(%eu) : (memref<*xi32>) -> ()
  return
}
