// fakvgpu-tma-arguments: the K and V copies use TMA, so the kernel gets two
// trailing tensor-map pointers; each copy names its own, and the kernel says
// which cache argument each describes (1, 2) and the box rows (32).
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-tma-arguments | FileCheck %s
// A tile whose first row is not a multiple of its 32 rows (row = i * 2): it
// may straddle two pages, so no box: gathered, no tensor maps.
// RUN: sed -e 's/%%8 = arith.muli %%arg7, %%c32_i32/%%8 = arith.muli %%arg7, %%c2_i32/' \
// RUN:   %S/Inputs/attention-fakvgpu.mlir | fakv-opt --fakvgpu-tma-arguments \
// RUN:   | FileCheck %s --check-prefix=UNALIGNED --implicit-check-not=fakvgpu.tma_param
// UNALIGNED: %[[ROW:.*]] = arith.muli %arg7, %c2_i32 : i32
// UNALIGNED: fakvgpu.async_paged_load %arg1[%c0_i32, %[[ROW]]]

// CHECK: func.func @attention({{.*}}, %arg6: i32, %arg7: !llvm.ptr, %arg8: !llvm.ptr)
// CHECK-SAME: fakvgpu.tma_args = array<i32: 1, 2>, fakvgpu.tma_boxes = array<i32: 32, 32>
// CHECK: fakvgpu.async_paged_load %arg1{{.*}}fakvgpu.tma_param = 7 : i64
// CHECK: fakvgpu.async_paged_load %arg2{{.*}}fakvgpu.tma_param = 8 : i64
