// CPU execution of fakv.dot: bf16, f16 and f32 operands, every transpose,
// accumulating into a given f32 tile. Expected values: reference.py (dot).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/dot.expected

func.func @dot(%a: !fakv.ptr<bf16>, %b: !fakv.ptr<bf16>, %ah: !fakv.ptr<f16>, %bh: !fakv.ptr<f16>,
               %af: !fakv.ptr<f32>, %bf: !fakv.ptr<f32>, %acc: !fakv.ptr<f32>,
               %o0: !fakv.ptr<f32>, %o1: !fakv.ptr<f32>, %o2: !fakv.ptr<f32>,
               %o3: !fakv.ptr<f32>, %o4: !fakv.ptr<f32>) {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %s5 = arith.constant 5 : i64
  %s8 = arith.constant 8 : i64
  // A is 4x8 and B 8x5, both row-major; the same buffers read transposed
  // (strides swapped) give A^T (8x4) and B^T (5x8).
  %A = fakv.load %a[%c0, %c0] strides [%s8, %s1] : !fakv.ptr<bf16> -> tensor<4x8xbf16>
  %B = fakv.load %b[%c0, %c0] strides [%s5, %s1] : !fakv.ptr<bf16> -> tensor<8x5xbf16>
  %At = fakv.load %a[%c0, %c0] strides [%s1, %s8] : !fakv.ptr<bf16> -> tensor<8x4xbf16>
  %Bt = fakv.load %b[%c0, %c0] strides [%s1, %s5] : !fakv.ptr<bf16> -> tensor<5x8xbf16>
  %C = fakv.load %acc[%c0, %c0] strides [%s5, %s1] : !fakv.ptr<f32> -> tensor<4x5xf32>
  %r0 = fakv.dot %A, %B, %C : tensor<4x8xbf16>, tensor<8x5xbf16> -> tensor<4x5xf32>
  %r1 = fakv.dot %A, %Bt, %C {transpose_b} : tensor<4x8xbf16>, tensor<5x8xbf16> -> tensor<4x5xf32>
  %r2 = fakv.dot %At, %B, %C {transpose_a} : tensor<8x4xbf16>, tensor<8x5xbf16> -> tensor<4x5xf32>
  %Ah = fakv.load %ah[%c0, %c0] strides [%s1, %s8] : !fakv.ptr<f16> -> tensor<8x4xf16>
  %Bh = fakv.load %bh[%c0, %c0] strides [%s1, %s5] : !fakv.ptr<f16> -> tensor<5x8xf16>
  %r3 = fakv.dot %Ah, %Bh, %C {transpose_a, transpose_b} : tensor<8x4xf16>, tensor<5x8xf16> -> tensor<4x5xf32>
  %Af = fakv.load %af[%c0, %c0] strides [%s8, %s1] : !fakv.ptr<f32> -> tensor<4x8xf32>
  %Bf = fakv.load %bf[%c0, %c0] strides [%s5, %s1] : !fakv.ptr<f32> -> tensor<8x5xf32>
  %r4 = fakv.dot %Af, %Bf, %C : tensor<4x8xf32>, tensor<8x5xf32> -> tensor<4x5xf32>
  fakv.store %r0, %o0[%c0, %c0] strides [%s5, %s1] : tensor<4x5xf32>, !fakv.ptr<f32>
  fakv.store %r1, %o1[%c0, %c0] strides [%s5, %s1] : tensor<4x5xf32>, !fakv.ptr<f32>
  fakv.store %r2, %o2[%c0, %c0] strides [%s5, %s1] : tensor<4x5xf32>, !fakv.ptr<f32>
  fakv.store %r3, %o3[%c0, %c0] strides [%s5, %s1] : tensor<4x5xf32>, !fakv.ptr<f32>
  fakv.store %r4, %o4[%c0, %c0] strides [%s5, %s1] : tensor<4x5xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %a = memref.alloc() : memref<32xbf16>
  %b = memref.alloc() : memref<40xbf16>
  %ah = memref.alloc() : memref<32xf16>
  %bh = memref.alloc() : memref<40xf16>
  %af = memref.alloc() : memref<32xf32>
  %bf = memref.alloc() : memref<40xf32>
  %acc = memref.alloc() : memref<20xf32>
  %o = memref.alloc() : memref<100xf32>
  %s6 = arith.constant 6 : i64
  %s7 = arith.constant 7 : i64
  %s8 = arith.constant 8 : i64
  %da = memref.cast %a : memref<32xbf16> to memref<?xbf16>
  %db = memref.cast %b : memref<40xbf16> to memref<?xbf16>
  %dah = memref.cast %ah : memref<32xf16> to memref<?xf16>
  %dbh = memref.cast %bh : memref<40xf16> to memref<?xf16>
  %daf = memref.cast %af : memref<32xf32> to memref<?xf32>
  %dbf = memref.cast %bf : memref<40xf32> to memref<?xf32>
  %dacc = memref.cast %acc : memref<20xf32> to memref<?xf32>
  func.call @fill_bf16(%da, %s6) : (memref<?xbf16>, i64) -> ()
  func.call @fill_bf16(%db, %s7) : (memref<?xbf16>, i64) -> ()
  func.call @fill_f16(%dah, %s6) : (memref<?xf16>, i64) -> ()
  func.call @fill_f16(%dbh, %s7) : (memref<?xf16>, i64) -> ()
  func.call @fill_f32(%daf, %s6) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%dbf, %s7) : (memref<?xf32>, i64) -> ()
  func.call @fill_f32(%dacc, %s8) : (memref<?xf32>, i64) -> ()
  %pa = fakv.ptr_of %a : memref<32xbf16> -> !fakv.ptr<bf16>
  %pb = fakv.ptr_of %b : memref<40xbf16> -> !fakv.ptr<bf16>
  %pah = fakv.ptr_of %ah : memref<32xf16> -> !fakv.ptr<f16>
  %pbh = fakv.ptr_of %bh : memref<40xf16> -> !fakv.ptr<f16>
  %paf = fakv.ptr_of %af : memref<32xf32> -> !fakv.ptr<f32>
  %pbf = fakv.ptr_of %bf : memref<40xf32> -> !fakv.ptr<f32>
  %pacc = fakv.ptr_of %acc : memref<20xf32> -> !fakv.ptr<f32>
  %po = fakv.ptr_of %o : memref<100xf32> -> !fakv.ptr<f32>
  %g = arith.constant 1 : i32
  fakv.launch @dot_outputs[%g, %g, %g](%pa, %pb, %pah, %pbh, %paf, %pbf, %pacc, %po)
    : (!fakv.ptr<bf16>, !fakv.ptr<bf16>, !fakv.ptr<f16>, !fakv.ptr<f16>, !fakv.ptr<f32>,
       !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>)
  %d = memref.cast %o : memref<100xf32> to memref<?xf32>
  func.call @print_f32(%d) : (memref<?xf32>) -> ()
  return
}

// The kernel: the five results of @dot go to consecutive 20-element slices
// of one buffer.
func.func @dot_outputs(%a: !fakv.ptr<bf16>, %b: !fakv.ptr<bf16>, %ah: !fakv.ptr<f16>, %bh: !fakv.ptr<f16>,
                       %af: !fakv.ptr<f32>, %bf: !fakv.ptr<f32>, %acc: !fakv.ptr<f32>,
                       %o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %o1 = arith.constant 20 : i64
  %o2 = arith.constant 40 : i64
  %o3 = arith.constant 60 : i64
  %o4 = arith.constant 80 : i64
  %p1 = fakv.addptr %o, %o1 : !fakv.ptr<f32>
  %p2 = fakv.addptr %o, %o2 : !fakv.ptr<f32>
  %p3 = fakv.addptr %o, %o3 : !fakv.ptr<f32>
  %p4 = fakv.addptr %o, %o4 : !fakv.ptr<f32>
  func.call @dot(%a, %b, %ah, %bh, %af, %bf, %acc, %o, %p1, %p2, %p3, %p4)
    : (!fakv.ptr<bf16>, !fakv.ptr<bf16>, !fakv.ptr<f16>, !fakv.ptr<f16>, !fakv.ptr<f32>,
       !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>,
       !fakv.ptr<f32>, !fakv.ptr<f32>) -> ()
  return
}
