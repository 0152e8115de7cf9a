// fakvgpu-tma-arguments: the K and V copies use TMA, so the kernel gets two
// trailing tensor-map pointers; each copy names its own, and the kernel says
// which cache argument each describes (1, 2) and the box rows (32). A cache
// copied in boxes of two heights gets a tensor map per height; a 256-row
// tile (a TMA box's most) still goes by TMA.
// RUN: fakv-opt %S/Inputs/attention-fakvgpu.mlir --fakvgpu-tma-arguments | FileCheck %s
// A tile whose first row is not a multiple of its 32 rows (row = i * 2): it
// may straddle two pages, so no box: gathered, no tensor maps.
// RUN: sed -e 's/%%8 = arith.muli %%arg7, %%c32_i32/%%8 = arith.muli %%arg7, %%c2_i32/' \
// RUN:   %S/Inputs/attention-fakvgpu.mlir | fakv-opt --fakvgpu-tma-arguments \
// RUN:   | FileCheck %s --check-prefix=UNALIGNED --implicit-check-not=fakvgpu.tma_param
// UNALIGNED: func.func @attention({{.*}}, %arg6: i32)
// UNALIGNED-SAME: fakvgpu.tma_args = array<i32>, fakvgpu.tma_boxes = array<i32>
// UNALIGNED: %[[ROW:.*]] = arith.muli %arg7, %c2_i32 : i32
// UNALIGNED: fakvgpu.async_paged_load %arg1[%c0_i32, %[[ROW]]]

// CHECK: func.func @attention({{.*}}, %arg6: i32, %arg7: !llvm.ptr, %arg8: !llvm.ptr)
// CHECK-SAME: fakvgpu.tma_args = array<i32: 1, 2>, fakvgpu.tma_boxes = array<i32: 32, 32>
// CHECK: fakvgpu.async_paged_load %arg1{{.*}}fakvgpu.tma_param = 7 : i64
// CHECK: fakvgpu.async_paged_load %arg2{{.*}}fakvgpu.tma_param = 8 : i64

// One cache copied into rings of two tile heights (32 and 64 rows, pages of
// 64): a tensor map per box height, each copy naming its own. A tile of 256
// rows (pages of 256, the most a TMA box spans) still goes by TMA, one box
// of 256 rows.
// RUN: fakv-opt %s --fakvgpu-tma-arguments | FileCheck %s --check-prefix=BOXES
// BOXES: func.func @two_heights({{.*}}, %arg5: !llvm.ptr, %arg6: !llvm.ptr)
// BOXES-SAME: fakvgpu.tma_args = array<i32: 0, 0>, fakvgpu.tma_boxes = array<i32: 32, 64>
// BOXES: fakvgpu.async_paged_load %arg0{{.*}}fakvgpu.tma_param = 5 : i64{{.*}}tensor<32x64xbf16, #shared>
// BOXES: fakvgpu.async_paged_load %arg0{{.*}}fakvgpu.tma_param = 6 : i64{{.*}}tensor<64x64xbf16, #shared>
// BOXES: func.func @tall_tile({{.*}}, %arg5: !llvm.ptr)
// BOXES-SAME: fakvgpu.tma_args = array<i32: 0>, fakvgpu.tma_boxes = array<i32: 256>
// BOXES: fakvgpu.async_paged_load %arg0{{.*}}fakvgpu.tma_param = 5 : i64{{.*}}tensor<256x64xbf16, #shared>
#sh = #fakvgpu.shared<swizzle = 128>
func.func @two_heights(%k: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %table: !fakv.ptr<i32>, %n: i32, %pages: i32, %out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c64 = arith.constant 64 : i32
  %s4096 = arith.constant 4096 : i64
  %s64 = arith.constant 64 : i64
  %small = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  %large = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<64x64xbf16, #sh>>
  %b0 = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  %b1 = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %row = arith.muli %i, %c64 : i32
    fakvgpu.async_paged_load %k[%c0, %row] table %table valid %n page_size %c64 num_pages %pages strides [%s4096, %s64, %s64] into %small[%c0] signal %b0 {fakvgpu.aligned_rows, fakvgpu.whole_chunks} : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>, !fakvgpu.barriers<2>
    fakvgpu.async_paged_load %k[%c0, %row] table %table valid %n page_size %c64 num_pages %pages strides [%s4096, %s64, %s64] into %large[%c0] signal %b1 {fakvgpu.aligned_rows, fakvgpu.whole_chunks} : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<64x64xbf16, #sh>>, !fakvgpu.barriers<2>
  }
  return
}
func.func @tall_tile(%k: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64}, %table: !fakv.ptr<i32>, %n: i32, %pages: i32, %out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c256 = arith.constant 256 : i32
  %s16384 = arith.constant 16384 : i64
  %s64 = arith.constant 64 : i64
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<256x64xbf16, #sh>>
  %b = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  scf.for %i = %c0 to %n step %c1 : i32 {
    %row = arith.muli %i, %c256 : i32
    fakvgpu.async_paged_load %k[%c0, %row] table %table valid %n page_size %c256 num_pages %pages strides [%s16384, %s64, %s64] into %r[%c0] signal %b {fakvgpu.aligned_rows, fakvgpu.whole_chunks} : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<256x64xbf16, #sh>>, !fakvgpu.barriers<2>
  }
  return
}
