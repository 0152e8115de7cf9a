// What convert-fakv-to-cpu produces: kernels with program-id arguments,
// pointers as !llvm.ptr, tiles as tensor/linalg ops, launches as loop nests.
// RUN: fakv-opt %s --convert-fakv-to-cpu -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @ids(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr, %[[PX:.*]]: i32, %[[PY:.*]]: i32, %[[PZ:.*]]: i32, %[[NX:.*]]: i32, %[[NY:.*]]: i32, %[[NZ:.*]]: i32)
// CHECK-NOT: fakv.kernel
// CHECK: arith.addi %[[PY]], %[[NZ]]
func.func @ids(%p: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %y = fakv.program_id 1
  %nz = fakv.num_programs 2
  %s = arith.addi %y, %nz : i32
  return
}

// CHECK-LABEL: func.func @host(
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index
// CHECK: %[[I:.*]] = arith.index_cast %[[ADDR]] : index to i64
// CHECK: %[[PTR:.*]] = llvm.inttoptr %[[I]] : i64 to !llvm.ptr
// CHECK: scf.for %[[X:.*]] =
// CHECK:   scf.for %[[Y:.*]] =
// CHECK:     scf.for %[[Z:.*]] =
// CHECK:       %[[XI:.*]] = arith.index_cast %[[X]] : index to i32
// CHECK:       %[[YI:.*]] = arith.index_cast %[[Y]] : index to i32
// CHECK:       %[[ZI:.*]] = arith.index_cast %[[Z]] : index to i32
// CHECK:       func.call @ids(%[[PTR]], %[[XI]], %[[YI]], %[[ZI]], %{{.*}}, %{{.*}}, %{{.*}}) : (!llvm.ptr, i32, i32, i32, i32, i32, i32) -> ()
func.func @host(%m: memref<4xf32>, %g: i32) {
  %p = fakv.ptr_of %m : memref<4xf32> -> !fakv.ptr<f32>
  fakv.launch @ids[%g, %g, %g](%p) : (!fakv.ptr<f32>)
  return
}

// -----

// A paged load looks each row's page up once, then reads the row's
// elements; rows past `valid`, and rows of a page outside [0, num_pages)
// (which `report` stores its code for), are zero.
// CHECK-LABEL: func.func @paged(
// CHECK: %[[ROWS:.*]] = tensor.generate {
// CHECK:   arith.cmpi slt
// CHECK:   scf.if
// CHECK:     arith.divsi
// CHECK:     arith.remsi
// CHECK:     llvm.getelementptr %{{.*}} : (!llvm.ptr, i64) -> !llvm.ptr, i32
// CHECK:     %[[PAGE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i32
// CHECK:     %[[OUT:.*]] = arith.cmpi uge, %[[PAGE]], %{{.*}} : i32
// CHECK:     scf.if %[[OUT]] {
// CHECK:       llvm.store volatile %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr
// CHECK:     arith.select %[[OUT]], %{{.*}}, %{{.*}} : i64
// CHECK: } : tensor<16xi64>
// CHECK: tensor.generate {
// CHECK:   tensor.extract %[[ROWS]]
// CHECK:   llvm.load %{{.*}} : !llvm.ptr -> bf16
// CHECK: } : tensor<16x8xbf16>
func.func @paged(%c: !fakv.ptr<bf16>, %t: !fakv.ptr<i32>, %i: i32, %s: i64,
                 %e: !fakv.ptr<i32>) -> tensor<16x8xbf16> {
  %k = fakv.paged_load %c[%i, %i] table %t valid %i page_size %i num_pages %i strides [%s, %s, %s]
         report %e, %i : !fakv.ptr<bf16> -> tensor<16x8xbf16>
  return %k : tensor<16x8xbf16>
}

// -----

// fakv.report: a store guarded by the condition.
// CHECK-LABEL: func.func @report(
// CHECK: scf.if %{{.*}} {
// CHECK:   llvm.store volatile %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr
func.func @report(%e: !fakv.ptr<i32>, %bad: i1, %code: i32) {
  fakv.report %e, %bad, %code : !fakv.ptr<i32>
  return
}

// -----

// fakv.dependency_wait, fakv.launch_dependents: the CPU runs a call's
// kernels in turn; nothing left.
// CHECK-LABEL: func.func @dependency_wait(
// CHECK-NOT: dependency_wait
// CHECK-NOT: launch_dependents
// CHECK: scf.if
// CHECK-NEXT: llvm.store
// CHECK-NEXT: {{^ *}}}
// CHECK-NEXT: return
func.func @dependency_wait(%e: !fakv.ptr<i32>, %bad: i1, %code: i32) {
  fakv.dependency_wait
  fakv.report %e, %bad, %code : !fakv.ptr<i32>
  fakv.launch_dependents
  return
}

// -----

// Matmul with f32 accumulation: a linalg.generic over (m, n, k).
// CHECK: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @dot(
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK:   arith.extf %{{.*}} : bf16 to f32
// CHECK:   arith.mulf
// CHECK:   arith.addf
func.func @dot(%a: tensor<4x8xbf16>, %b: tensor<5x8xbf16>, %c: tensor<4x5xf32>) -> tensor<4x5xf32> {
  %d = fakv.dot %a, %b, %c {transpose_b} : tensor<4x8xbf16>, tensor<5x8xbf16> -> tensor<4x5xf32>
  return %d : tensor<4x5xf32>
}

// -----

// The online-softmax step, decomposed first by fakv-decompose's rewrites (the
// GPU's formula, in log2 units): scaled scores, row max, new max (a row still
// at -inf subtracts 0), exp2 against it, alpha, row sum, new sum.
// CHECK-LABEL: func.func @softmax(
// CHECK: %[[T:.*]] = arith.mulf %{{.*}}, %{{.*}} : tensor<4x8xf32>
// CHECK: linalg.reduce ins(%[[T]]
// CHECK:   arith.maximumf
// CHECK: %[[M1:.*]] = arith.maximumf %{{.*}} : tensor<4xf32>
// CHECK: arith.select %{{.*}}, %{{.*}}, %[[M1]] : tensor<4xi1>, tensor<4xf32>
// CHECK: %[[D:.*]] = arith.subf %[[T]], %{{.*}} : tensor<4x8xf32>
// CHECK: math.exp2 %[[D]] : tensor<4x8xf32>
// CHECK: math.exp2 %{{.*}} : tensor<4xf32>
// CHECK: linalg.reduce
// CHECK:   arith.addf
// CHECK-NOT: fakv.online_softmax
func.func @softmax(%s: tensor<4x8xf32>, %m: tensor<4xf32>, %l: tensor<4xf32>) -> tensor<4x8xf32> {
  %m1, %l1, %p, %a = fakv.online_softmax %s, %m, %l : tensor<4x8xf32>, tensor<4xf32>
  return %p : tensor<4x8xf32>
}

// -----

// A kernel packed by fakv-pack-gqa (grid_packing 1, 4, 1): the launch checks
// that the written grid's y is a multiple of 4 (else it stops with a message)
// and runs y / 4 programs along it, passing the divided grid on.
// CHECK-LABEL: func.func @packed(
// CHECK-NOT: fakv.grid_packing
// CHECK-LABEL: func.func @launch_packed(
// CHECK-SAME: %{{.*}}: memref<4xf32>, %[[G:.*]]: i32)
// CHECK: %[[C4:.*]] = arith.constant 4 : i32
// CHECK: %[[REM:.*]] = arith.remsi %[[G]], %[[C4]] : i32
// CHECK: arith.cmpi eq, %[[REM]]
// CHECK: llvm.call @write
// CHECK: llvm.call @abort
// CHECK: %[[Y:.*]] = arith.divsi %[[G]], %[[C4]] : i32
// CHECK: %[[UB:.*]] = arith.index_cast %[[Y]] : i32 to index
// CHECK: func.call @packed(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[G]], %[[Y]], %[[G]])
func.func @packed(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.grid_packing = array<i32: 1, 4, 1>} {
  return
}
func.func @launch_packed(%m: memref<4xf32>, %g: i32) {
  %p = fakv.ptr_of %m : memref<4xf32> -> !fakv.ptr<f32>
  fakv.launch @packed[%g, %g, %g](%p) : (!fakv.ptr<f32>)
  return
}

// -----

// A kernel that asks fakv-pack-gqa to pack its query heads, lowered without
// that pass: each head in its own program, as written (the request dropped
// with fakv.kernel; left on a function that is no longer a kernel, it failed
// the verifier).
// CHECK-LABEL: func.func @unpacked(
// CHECK-NOT: fakv.pack_gqa
// CHECK: return
func.func @unpacked(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  return
}
