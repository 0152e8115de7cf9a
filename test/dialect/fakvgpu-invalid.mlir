// Verifier rules of the fakvgpu dialect: warp_specialize's roles and register counts, layouts on their
// tiles, rings, barriers, the kernel's warps.
// RUN: fakv-opt %s -split-input-file -verify-diagnostics
// A consumer line copied above the regions (an editing slip): %9 there is a forward reference the producer
// region resolves, %14 is then defined twice. The parser freed the parsed producer region while that use still
// pointed into it (heap corruption: "corrupted double-linked list", abort); now a diagnostic and exit 1.
// RUN: sed -e '11a\        %14 = fakvgpu.ring_view %1[%9] : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>' \
// RUN:   %S/../lowering/Inputs/attention-fakvgpu.mlir | %not fakv-opt 2>&1 | FileCheck %s --check-prefix=SLIP
// SLIP: error: redefinition of SSA value '%14'
// SLIP-NOT: Stack dump

func.func @registers_not_multiple_of_8() {
  // expected-error @+1 {{register counts are 0, 0 (no setmaxnreg) or multiples of 8 in [24, 256], got 100}}
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 100, 232 {
  }, {
  }
  return
}

// -----

func.func @registers_out_of_range() {
  // expected-error @+1 {{register counts are 0, 0 (no setmaxnreg) or multiples of 8 in [24, 256], got 16}}
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 16, 232 {
  }, {
  }
  return
}

// -----

func.func @producer_above_consumer() {
  // expected-error @+1 {{the producer gives registers to the consumer: producer count 232 above consumer count 40}}
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 232, 40 {
  }, {
  }
  return
}

// -----

func.func @partial_warpgroup() {
  // expected-error @+1 {{roles are whole warpgroups (positive multiples of 4 warps), got 1 and 4}}
  fakvgpu.warp_specialize producer_warps 1 consumer_warps 4 registers 0, 0 {
  }, {
  }
  return
}

// -----

// Valid: no setmaxnreg, a rebalancing, and equal counts (the producer gives nothing, but takes nothing
// either: only a producer count above the consumer's is refused).
func.func @valid() {
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
  }, {
  }
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 8 registers 24, 240 {
  }, {
  }
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 128, 128 {
  }, {
  }
  return
}

// -----

func.func @no_producer() {
  // expected-error @+1 {{roles are whole warpgroups (positive multiples of 4 warps), got 0 and 4}}
  fakvgpu.warp_specialize producer_warps 0 consumer_warps 4 registers 0, 0 {
  }, {
  }
  return
}

// -----

func.func @roles_past_the_kernel() attributes {fakvgpu.num_warps = 4 : i32} {
  // expected-error @+1 {{the roles' 12 warps must be the kernel's fakvgpu.num_warps (4)}}
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 8 registers 0, 0 {
  }, {
  }
  return
}

// -----

// expected-error @+1 {{'fakvgpu.num_warps' must be an i32 in [1, 32] (warps a program: at most 1024 threads)}}
func.func @num_warps_text() attributes {fakvgpu.num_warps = "x"} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.num_warps' must be an i32 in [1, 32]}}
func.func @num_warps_zero() attributes {fakvgpu.num_warps = 0 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.num_warps' must be an i32 in [1, 32]}}
func.func @num_warps_unsigned() attributes {fakvgpu.num_warps = 4 : ui32} {
  return
}

// -----

// Layouts checked against their tiles (they crashed the lowering, hung it, or lowered to loads outside the tile).
// A 16 x 16 tile: registers along the columns, 16 lanes along the rows (the fifth lane bit replicates), no warps.

// expected-error @+1 {{a rank-1 layout on a tile of rank 2}}
func.func @layout_rank(%t: tensor<16x16xf32, #fakvgpu.linear<regs = [[1], [2]], lanes = [[4], [8], [0], [0], [0]], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{warps basis #0 reaches 64 in dimension 0 of a tile of 16}}
func.func @layout_outside(%t: tensor<16x16xf32, #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = [[64, 0]]>>) {
  return
}

// -----

// expected-error @+1 {{the layout holds 128 of the tile's 256 elements}}
func.func @layout_short(%t: tensor<16x16xf32, #fakvgpu.linear<regs = [[0, 1], [0, 1], [0, 4], [0, 8]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{a layout of at most 16 register bases (65536 registers), got 17}}
func.func @layout_registers(%t: tensor<16x16xf32, #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8], [1, 0], [2, 0], [4, 0], [8, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0], [0, 0]], lanes = [[0, 0], [0, 0], [0, 0], [0, 0], [0, 0]], warps = []>>) {
  return
}

// -----

#layout = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = []>
#transposed = #fakvgpu.linear<regs = [[1, 0], [2, 0], [4, 0], [8, 0]], lanes = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 0]], warps = []>
func.func @cast_keeps_the_layout(%t: tensor<16x16xf32, #layout>) {
  // expected-error @+1 {{converts elements in place: the tile's layout stays}}
  %c = fakv.cast %t : tensor<16x16xf32, #layout> -> tensor<16x16xbf16, #transposed>
  %ok = fakv.cast %t : tensor<16x16xf32, #layout> -> tensor<16x16xbf16, #layout>
  return
}

// -----

// The shared layout's tiles: 2-D, 16-bit, whole 64-column panels, at most 2^20 elements (the ring's tiles
// among them; a 1-D tile's bytes were planned from a dimension it does not have).
// expected-error @+1 {{a #fakvgpu.shared tile is 2-D, of 16-bit elements, its columns whole 64-column panels and at most 2^20 elements in all}}
func.func @shared_f32(%t: tensor<32x64xf32, #fakvgpu.shared<swizzle = 128>>) {
  return
}

// -----

// expected-error @+1 {{a #fakvgpu.shared tile is 2-D}}
func.func @shared_columns(%t: tensor<32x48xbf16, #fakvgpu.shared<swizzle = 128>>) {
  return
}

// -----

// expected-error @+1 {{a #fakvgpu.shared tile is 2-D}}
func.func @shared_1d(%t: tensor<64xbf16, #fakvgpu.shared<swizzle = 128>>) {
  return
}

// -----

// expected-error @+1 {{a #fakvgpu.shared tile is 2-D}}
func.func @shared_huge(%t: tensor<32768x64xbf16, #fakvgpu.shared<swizzle = 128>>) {
  return
}

// -----

// expected-error @+1 {{ring tiles are 2-D f16 or bf16 tiles of whole 64-column panels, at most 2^20 elements (#fakvgpu.shared), got 'tensor<32x64xi16, #fakvgpu.shared<swizzle = 128>>'}}
func.func @ring_i16(%r: !fakvgpu.ring<2, tensor<32x64xi16, #fakvgpu.shared<swizzle = 128>>>) {
  return
}

// -----

// (a ring's or a barrier array's size wrapped the shared-memory plan: 2^51 stages planned as 1024 bytes)
// expected-error @+1 {{a ring has 1 to 64 stages, got 2251799813685248}}
func.func @ring_stages(%r: !fakvgpu.ring<2251799813685248, tensor<64x64xbf16, #fakvgpu.shared<swizzle = 128>>>) {
  return
}

// -----

// expected-error @+1 {{an array of 1 to 1024 mbarriers (8 bytes each in shared memory), got 0}}
func.func @no_barriers(%b: !fakvgpu.barriers<0>) {
  return
}

// -----

// expected-error @+1 {{an array of 1 to 1024 mbarriers (8 bytes each in shared memory), got 2305843009213693952}}
func.func @barriers_huge(%b: !fakvgpu.barriers<2305843009213693952>) {
  return
}

// -----

// expected-error @+1 {{a tile in registers holds at most 2^24 elements, got 2^64}}
func.func @linear_huge(%t: tensor<4294967296x4294967296xf32, #fakvgpu.linear<regs = [], lanes = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16]], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.warp_specialize' op splits a kernel's warps: it must be inside a kernel function}}
fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 24, 168 {
}, {
}

// -----

// Valid: a layout that replicates across a lane bit and two warps, on a tile it covers.
func.func @layout_valid(%t: tensor<16x16xf32, #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = [[0, 0]]>>,
                        %r: !fakvgpu.ring<3, tensor<64x128xf16, #fakvgpu.shared<swizzle = 128>>>, %b: !fakvgpu.barriers<3>) attributes {fakvgpu.num_warps = 8 : i32} {
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
  }, {
  }
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
// Constant slots and barrier indices are checked against the ring's stages and the barrier count (a review
// compiled slot 7 of a two-slot ring, barrier -1, to PTX).
func.func @slot_outside_the_ring() {
  %c7 = arith.constant 7 : i32
  %ring = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
  // expected-error @+1 {{slot 7 is outside [0, 2)}}
  %v = fakvgpu.ring_view %ring[%c7] : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
  return
}

// -----

func.func @barrier_outside_the_set() {
  %c2 = arith.constant 2 : i32
  %c0 = arith.constant 0 : i32
  %b = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  // expected-error @+1 {{barrier 2 is outside [0, 2)}}
  fakvgpu.wait %b[%c2], %c0 : !fakvgpu.barriers<2>
  return
}

// -----

func.func @negative_barrier() {
  %m1 = arith.constant -1 : i32
  %b = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  // expected-error @+1 {{barrier -1 is outside [0, 2)}}
  fakvgpu.arrive %b[%m1] : !fakvgpu.barriers<2>
  return
}

// -----

func.func @phase_not_a_parity() {
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %b = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  // expected-error @+1 {{phase parity is 0 or 1, got 2}}
  fakvgpu.wait %b[%c0], %c2 : !fakvgpu.barriers<2>
  return
}

// -----

func.func @too_many_arrivals() {
  // expected-error @+1 {{whose maximum value is 1048575}}
  %b = fakvgpu.alloc_barriers arrivals 1048576 : !fakvgpu.barriers<2>
  return
}

// -----

// The attributes the lowering leaves are verified: hand-written or stale IR gets a diagnostic (these crashed or
// hung convert-fakvgpu-to-nvvm: a tensor-map argument past the kernel's, a role of no threads, a huge stored tile).

// expected-error @+1 {{'fakvgpu.smem_bytes' must be an integer in [0, 2147483647] (the kernel's shared-memory bytes)}}
func.func @smem_bytes_negative() attributes {fakvgpu.smem_bytes = -8 : i64} {
  return
}

// -----

func.func @smem_offset_not_an_integer() {
  // expected-error @+1 {{'fakvgpu.smem_offset' must be an integer in [0, 2147483647] (a byte offset in shared memory)}}
  %b = fakvgpu.alloc_barriers arrivals 1 {fakvgpu.smem_offset = []} : !fakvgpu.barriers<2>
  return
}

// -----

func.func @tma_param_past_the_arguments(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %n: i32, %np: i32) {
  %c0 = arith.constant 0 : i32
  %c64 = arith.constant 64 : i32
  %s = arith.constant 64 : i64
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #fakvgpu.shared<swizzle = 128>>>
  %b = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  // expected-error @+1 {{'fakvgpu.tma_param' must be an integer in [0, 3] (the kernel argument holding the copy's tensor map)}}
  fakvgpu.async_paged_load %kc[%c0, %c0] table %bt valid %n page_size %c64 num_pages %np strides [%s, %s, %s] into %r[%c0] signal %b {fakvgpu.tma_param = 100 : i64} : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #fakvgpu.shared<swizzle = 128>>>, !fakvgpu.barriers<2>
  return
}

// -----

func.func @role_too_short(%c: i1) {
  // expected-error @+1 {{'fakvgpu.role' must be array<i64: first, count, barrier>: threads [first, first + count) in whole warps within 1024, a barrier in [0, 15]}}
  scf.if %c {
  } {fakvgpu.role = array<i64>}
  return
}

// -----

func.func @role_of_no_threads(%c: i1) {
  // expected-error @+1 {{'fakvgpu.role' must be array<i64: first, count, barrier>}}
  scf.if %c {
  } {fakvgpu.role = array<i64: 0, 0, 1>}
  return
}

// -----

func.func @stored_rows_huge(%p: !fakv.ptr<bf16>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %t = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = [[0, 0], [0, 0]]>>
  // expected-error @+1 {{'fakvgpu.stored_rows' must be an integer in [1, 256] (the rows a shared tile is stored with: a wgmma's N at most)}}
  %s = fakvgpu.convert_layout %t {fakvgpu.stored_rows = 144115188075855872 : i64} : tensor<16x64xbf16, #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = [[0, 0], [0, 0]]>> -> tensor<16x64xbf16, #fakvgpu.shared<swizzle = 128>>
  return
}

// -----

// expected-error @+1 {{'fakvgpu.max_registers' must be a multiple of 8 (setmaxnreg's), got 100}}
func.func @max_registers_not_multiple_of_8() attributes {fakvgpu.max_registers = 100 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.tma_args' holds 7; not one of the kernel's arguments}}
func.func @tma_args_past_the_arguments(%a: !fakv.ptr<bf16>) attributes {fakvgpu.tma_args = array<i32: 7>} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.tma_args' and 'fakvgpu.tma_boxes' must have one length}}
func.func @tma_boxes_of_another_length(%a: !fakv.ptr<bf16>, %m: !llvm.ptr) attributes {fakvgpu.tma_args = array<i32: 0>, fakvgpu.tma_boxes = array<i32: 64, 64>} {
  return
}

// -----

// A layout over more warps than a thread block has (its warp count, 1 << bases, overflowed past 31).
// expected-error @+1 {{a layout of at most 5 warp bases (32 warps, a thread block's 1024 threads), got 6}}
func.func @six_warp_bases(%t: tensor<64xf32, #fakvgpu.linear<regs = [], lanes = [[1], [2], [4], [8], [16]], warps = [[32], [0], [0], [0], [0], [0]]>>) {
  return
}

// -----

// expected-error @+1 {{every basis must have 2 entries}}
func.func @layout_ragged(%t: tensor<16x16xf32, #fakvgpu.linear<regs = [[0, 1], [2]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{a linear layout needs rank >= 1}}
func.func @layout_rank0(%t: tensor<16xf32, #fakvgpu.linear<regs = [], lanes = [], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{a linear layout has 5 lane bases (32 lanes), got 4}}
func.func @layout_four_lanes(%t: tensor<16xf32, #fakvgpu.linear<regs = [], lanes = [[1], [2], [4], [8]], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{basis entries must be 0 or powers of two, got 3}}
func.func @layout_basis_not_pow2(%t: tensor<16xf32, #fakvgpu.linear<regs = [[3]], lanes = [[1], [2], [4], [8], [0]], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{a linear layout's tile has power-of-two dimensions, got 12}}
func.func @layout_tile_not_pow2(%t: tensor<12x16xf32, #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8]], lanes = [[1, 0], [2, 0], [4, 0], [0, 0], [0, 0]], warps = []>>) {
  return
}

// -----

// expected-error @+1 {{only 128-byte swizzle is supported, got 64}}
func.func @swizzle_64(%t: tensor<32x64xbf16, #fakvgpu.shared<swizzle = 64>>) {
  return
}

// -----

// expected-error @+1 {{ring tiles live in shared memory (#fakvgpu.shared encoding), got 'tensor<64x64xbf16>'}}
func.func @ring_in_registers(%r: !fakvgpu.ring<2, tensor<64x64xbf16>>) {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.max_registers' must be an integer in [24, 256] (registers a thread, a multiple of 8)}}
func.func @max_registers_too_many() attributes {fakvgpu.max_registers = 512 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.cluster_size' must be an integer in [1, 16] (programs a cluster)}}
func.func @cluster_size_zero() attributes {fakvgpu.cluster_size = 0 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.num_warps' applies to functions (the kernels)}}
module attributes {fakvgpu.num_warps = 4 : i32} {
}

// -----

// expected-error @+1 {{'fakvgpu.smem_bytes' applies to functions (the kernels)}}
module attributes {fakvgpu.smem_bytes = 1024 : i32} {
}

// -----

func.func @stored_rows_not_on_a_convert(%c: i1) {
  // expected-error @+1 {{'fakvgpu.stored_rows' applies to fakvgpu.convert_layout}}
  scf.if %c {
  } {fakvgpu.stored_rows = 64 : i32}
  return
}

// -----

// expected-error @+1 {{'fakvgpu.tma_args' must be an array<i32> of one entry per tensor map, at most one per kernel argument (1)}}
func.func @tma_args_too_many(%a: !fakv.ptr<bf16>) attributes {fakvgpu.tma_args = array<i32: 0, 0>} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.tma_boxes' must be an array<i32> of one entry per tensor map, at most one per kernel argument (1)}}
func.func @tma_boxes_not_an_array(%a: !fakv.ptr<bf16>) attributes {fakvgpu.tma_boxes = 64 : i32} {
  return
}

// -----

// expected-error @+1 {{'fakvgpu.tma_boxes' holds 512; a box's rows are in [1, 256]}}
func.func @tma_box_too_tall(%a: !fakv.ptr<bf16>) attributes {fakvgpu.tma_boxes = array<i32: 512>} {
  return
}

// -----

#layout = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = []>
func.func @convert_layout_shape(%t: tensor<16x16xf32, #layout>) {
  // expected-error @+1 {{must keep the shape and element type (it changes the layout only); got 'tensor<16x16xf32, #fakvgpu.linear<}}
  %c = fakvgpu.convert_layout %t : tensor<16x16xf32, #layout> -> tensor<16x16xbf16, #layout>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
#layout = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32]], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = []>
func.func @convert_layout_from_shared(%r: !fakvgpu.ring<2, tensor<16x64xbf16, #shared>>) {
  %c0 = arith.constant 0 : i32
  %v = fakvgpu.ring_view %r[%c0] : !fakvgpu.ring<2, tensor<16x64xbf16, #shared>>
  // expected-error @+1 {{reads registers; a shared tile is read by its consumer (fakv.dot) directly}}
  %c = fakvgpu.convert_layout %v : tensor<16x64xbf16, #shared> -> tensor<16x64xbf16, #layout>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @ring_view_type(%r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %i: i32) {
  // expected-error @+1 {{failed to verify that result is the ring's tile}}
  %v = "fakvgpu.ring_view"(%r, %i) : (!fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, i32) -> tensor<32x64xf16, #shared>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @clear_rows_slot(%r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %i: i32) {
  %c2 = arith.constant 2 : i32
  // expected-error @+1 {{slot 2 is outside [0, 2)}}
  fakvgpu.clear_rows %r[%c2] from %i : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @async_cache_type(%kc: !fakv.ptr<f16>, %bt: !fakv.ptr<i32>, %i: i32, %s: i64,
                            %r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %b: !fakvgpu.barriers<2>) {
  // expected-error @+1 {{cache element type 'f16' does not match the ring's element type 'bf16'}}
  fakvgpu.async_paged_load %kc[%i, %i] table %bt valid %i page_size %i num_pages %i strides [%s, %s, %s] into %r[%i] signal %b : !fakv.ptr<f16>, !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, !fakvgpu.barriers<2>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @async_table_and_page(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %i: i32, %s: i64,
                                %r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %b: !fakvgpu.barriers<2>) {
  // expected-error @+1 {{expects exactly one of 'table' and 'page'}}
  fakvgpu.async_paged_load %kc[%i, %i] table %bt page %i valid %i page_size %i num_pages %i strides [%s, %s, %s] into %r[%i] signal %b : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, !fakvgpu.barriers<2>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @async_neither(%kc: !fakv.ptr<bf16>, %i: i32, %s: i64,
                         %r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %b: !fakvgpu.barriers<2>) {
  // expected-error @+1 {{expects exactly one of 'table' and 'page'}}
  fakvgpu.async_paged_load %kc[%i, %i] valid %i page_size %i num_pages %i strides [%s, %s, %s] into %r[%i] signal %b : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, !fakvgpu.barriers<2>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @async_report_without_code(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %i: i32, %s: i64,
                                     %r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %b: !fakvgpu.barriers<2>) {
  // expected-error @+1 {{'report' takes an error pointer and a code}}
  "fakvgpu.async_paged_load"(%kc, %i, %i, %bt, %i, %i, %i, %s, %s, %s, %bt, %r, %i, %b)
      <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1>}>
      : (!fakv.ptr<bf16>, i32, i32, !fakv.ptr<i32>, i32, i32, i32, i64, i64, i64, !fakv.ptr<i32>,
         !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, i32, !fakvgpu.barriers<2>) -> ()
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @async_barriers_per_slot(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %i: i32, %s: i64,
                                   %r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %b: !fakvgpu.barriers<3>) {
  // expected-error @+1 {{needs one barrier per ring slot}}
  fakvgpu.async_paged_load %kc[%i, %i] table %bt valid %i page_size %i num_pages %i strides [%s, %s, %s] into %r[%i] signal %b : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, !fakvgpu.barriers<3>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @async_slot(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %i: i32, %s: i64,
                      %r: !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, %b: !fakvgpu.barriers<2>) {
  %c5 = arith.constant 5 : i32
  // expected-error @+1 {{slot 5 is outside [0, 2)}}
  fakvgpu.async_paged_load %kc[%i, %i] table %bt valid %i page_size %i num_pages %i strides [%s, %s, %s] into %r[%c5] signal %b : !fakv.ptr<bf16>, !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>, !fakvgpu.barriers<2>
  return
}
