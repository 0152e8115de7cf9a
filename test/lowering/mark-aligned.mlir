// fakvgpu-mark-aligned: a load or store whose vectors are aligned whatever
// the run-time values gets {fakvgpu.aligned}: 16-byte pointers and row
// strides with a column offset of 0. Unknown strides, or a column offset of
// 3 elements, leave it to the run-time check (vector-alignment.mlir shows
// both in PTX-level IR). A column bound known to be a multiple of 16 as
// well adds {fakvgpu.whole_vectors}: no element-by-element fallback (a
// bound known only as a multiple of 4, or divided inexactly, does not).
// RUN: fakv-opt %S/vector-alignment.mlir --split-input-file --fakv-to-fakvgpu | fakv-opt --split-input-file --fakvgpu-mark-aligned | FileCheck %s

// CHECK-LABEL: func.func @copy_unknown
// CHECK-NOT: fakvgpu.aligned
// CHECK-LABEL: func.func @copy_aligned
// CHECK: fakv.load {{.*}} {fakvgpu.aligned} :
// CHECK: fakv.store {{.*}} {fakvgpu.aligned} :
// CHECK-LABEL: func.func @stride_unknown
// CHECK-NOT: fakvgpu.aligned
// CHECK-LABEL: func.func @column_offset
// CHECK: fakv.load
// CHECK-NOT: fakvgpu.aligned
// CHECK-SAME: -> tensor<64x64xbf16
// CHECK: fakv.store {{.*}} {fakvgpu.aligned} :
// CHECK-LABEL: func.func @copy_whole
// CHECK: fakv.load {{.*}} {fakvgpu.aligned, fakvgpu.whole_vectors}
// CHECK: fakv.store {{.*}} {fakvgpu.aligned, fakvgpu.whole_vectors}
// CHECK-LABEL: func.func @half_bound
// CHECK: fakv.load {{.*}} {fakvgpu.aligned, fakvgpu.whole_vectors}
// CHECK-LABEL: func.func @whole_or_not
// CHECK: fakv.load {{.*}} {fakvgpu.aligned} :
// CHECK: fakv.load {{.*}} {fakvgpu.aligned} :
// CHECK: fakv.load {{.*}} {fakvgpu.aligned, fakvgpu.whole_vectors}
// CHECK: fakv.load %{{.*}}[%{{.*}}, %c-8{{.*}}] {{.*}} {fakvgpu.aligned, fakvgpu.whole_vectors}
// CHECK: fakv.store {{.*}} {fakvgpu.aligned, fakvgpu.whole_vectors}
