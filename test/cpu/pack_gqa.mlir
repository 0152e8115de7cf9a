// fakv-pack-gqa executed: six query heads (program_id 1) in kv groups of
// three (h / 3), packed by the pass into one program per group whose rows
// are its heads, the group padded to 4. Each head h writes 7 - h + (5 + r)
// + 100 h for its 2 rows r (a head-dependent value, a replicated arange,
// a head-scaled term) under its own mask at out[2h + r]; the padding head
// writes nothing (out[12..13] keep -1). The packed kernel prints what the
// same kernel unpacked prints; the launch of the packed kernel is checked
// against its grid packing (the CPU pipeline runs the pass).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | FileCheck %s
// RUN: sed 's/, fakv.pack_gqa = 1 : i32//' %s > %t.unpacked.mlir
// RUN: not grep -q "^func.*fakv.pack_gqa" %t.unpacked.mlir
// RUN: cat %t.unpacked.mlir %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | FileCheck %s
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | FileCheck %s --check-prefix=GRID
// CHECK: [12,  13,  111,  112,  210,  211,  309,  310,  408,  409,  507,  508,  -1,  -1]
// GRID: must be a multiple of its grid packing

func.func @heads(%out: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c3 = arith.constant 3 : i32
  %c7 = arith.constant 7 : i32
  %c100 = arith.constant 100 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s2 = arith.constant 2 : i64
  %g = arith.divsi %h, %c3 : i32
  %x = arith.subi %c7, %h : i32
  %t = fakv.splat %x : i32 -> tensor<2xi32>
  %r = fakv.arange 5 to 7 : tensor<2xi32>
  %y = arith.addi %t, %r : tensor<2xi32>
  %hh = arith.muli %h, %c100 : i32
  %ht = fakv.splat %hh : i32 -> tensor<2xi32>
  %z = arith.addi %y, %ht : tensor<2xi32>
  %zf = arith.sitofp %z : tensor<2xi32> to tensor<2xf32>
  %cols = fakv.arange 0 to 2 : tensor<2xi32>
  %ns = fakv.splat %n : i32 -> tensor<2xi32>
  %m = arith.cmpi slt, %cols, %ns : tensor<2xi32>
  %h64 = arith.extsi %h : i32 to i64
  %off = arith.muli %h64, %s2 : i64
  %p = fakv.addptr %out, %off : !fakv.ptr<f32>
  fakv.store %zf, %p[%c0] strides [%s1] mask %m : tensor<2xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %out = memref.alloc() : memref<14xf32>
  %minus = arith.constant -1.0 : f32
  linalg.fill ins(%minus : f32) outs(%out : memref<14xf32>)
  %po = fakv.ptr_of %out : memref<14xf32> -> !fakv.ptr<f32>
  %c1 = arith.constant 1 : i32
  %c6 = arith.constant 6 : i32
  %n = arith.constant 2 : i32
  fakv.launch @heads[%c1, %c6, %c1](%po, %n) : (!fakv.ptr<f32>, i32)
  %d = memref.cast %out : memref<14xf32> to memref<?xf32>
  func.call @print_f32(%d) : (memref<?xf32>) -> ()
  return
}
