// fakv-pack-gqa: what it cannot pack is an error that names the op.
// RUN: fakv-opt %s --fakv-pack-gqa --split-input-file -verify-diagnostics

// expected-error @+1 {{never divides program_id(1) by the constant number of query heads per kv head}}
func.func @no_group(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  return
}

// -----

func.func @runtime_group(%out: !fakv.ptr<f32>, %group: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  // expected-error @+1 {{the query heads of a kv head must be a positive constant}}
  %kvh = arith.divsi %h, %group : i32
  return
}

// -----

// K/V rows that depend on the query head itself, not on h / GROUP.
func.func @kv_of_the_head(%k: !fakv.ptr<bf16>, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %s = arith.constant 64 : i64
  // expected-error @+1 {{the K/V rows a program loads may depend on its query head only through the kv head}}
  %t = fakv.paged_load %k[%h, %n] page %n valid %n page_size %n num_pages %n strides [%s, %s, %s]
         : !fakv.ptr<bf16> -> tensor<32x64xbf16>
  return
}

// -----

func.func @branch_on_the_head(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %c0 = arith.constant 0 : i32
  // expected-error @+1 {{a scalar of type 'i1' depends on the query head}}
  %first = arith.cmpi eq, %h, %c0 : i32
  scf.if %first {
  }
  return
}

// -----

func.func @float_of_the_head(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  // expected-error @+1 {{a scalar of type 'f32' depends on the query head}}
  %slope = arith.sitofp %h : i32 to f32
  return
}

// -----

func.func @one_address(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %hs = fakv.splat %h : i32 -> tensor<4xi32>
  %hf = arith.sitofp %hs : tensor<4xi32> to tensor<4xf32>
  // expected-error @+1 {{every query head would store to the same address}}
  fakv.store %hf, %out[%c0] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  return
}

// -----

// The head in a store's offsets, not its pointer: that rule's message (it said "the same address").
func.func @head_in_the_offsets(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %s1 = arith.constant 1 : i64
  %x = arith.constant dense<1.0> : tensor<4xf32>
  // expected-error @+1 {{the offsets, strides and bounds of a load or store may not depend on the query head (fold it into the pointer)}}
  fakv.store %x, %out[%h] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  return
}

// -----

// Keys shared by the rows may not depend on the head.
func.func @key_positions(%n: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %zero = arith.constant 0.0 : f32
  %s = fakv.splat %zero : f32 -> tensor<4x8xf32>
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %cols = fakv.splat %h : i32 -> tensor<8xi32>
  // expected-error @+1 {{operand #1 is shared by the rows (keys or B) and must not depend on the query head}}
  %m = fakv.length_mask %s, %cols, %n : tensor<4x8xf32>, tensor<8xi32>
  return
}

// -----

func.func @rows_reduced(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %hs = fakv.splat %h : i32 -> tensor<4x8xi32>
  %hf = arith.sitofp %hs : tensor<4x8xi32> to tensor<4x8xf32>
  // expected-error @+1 {{a reduction over the rows mixes the query heads}}
  %r = fakv.reduce sum %hf, 0 : tensor<4x8xf32> -> tensor<8xf32>
  return
}

// -----

func.func @zero_extension(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %c100 = arith.constant 100 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %r = arith.subi %c100, %h : i32
  // expected-error @+1 {{cannot pack this scalar op over the query heads: a scalar of the head packs through +, - and *}}
  %r64 = arith.extui %r : i32 to i64
  return
}

// -----

func.func @while_loop(%n: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  // expected-error @+1 {{only scf.for and scf.if may hold ops of the query head}}
  %r = scf.while (%i = %h) : (i32) -> i32 {
    %go = arith.cmpi slt, %i, %n : i32
    scf.condition(%go) %i : i32
  } do {
  ^bb0(%i: i32):
    scf.yield %i : i32
  }
  return
}

// -----

// A counter the query heads share: each per-head program adds to it, the
// packed program would add once for them all (and read other values).
func.func @shared_counter(%c: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %one = arith.constant 1 : i32
  // expected-error @+1 {{an atomic_add that the query heads of a kv head share cannot be packed}}
  %old = fakv.atomic_add %c[%kvh], %one : !fakv.ptr<i32>
  return
}

// -----

// A body of several blocks (cf branches): the rewrite copies one block (it
// left the others using erased values: invalid IR).
// expected-error @+1 {{fakv-pack-gqa: kernel @branches has several blocks (cf branches); write its control flow with scf.if / scf.for}}
func.func @branches(%x: !fakv.ptr<f32>, %o: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 0 : i32} {
  %h = fakv.program_id 0
  %c0 = arith.constant 0 : i32
  %c2 = arith.constant 2 : i32
  %s1 = arith.constant 1 : i64
  %s128 = arith.constant 128 : i64
  %kvh = arith.divsi %h, %c2 : i32
  %h64 = arith.extsi %h : i32 to i64
  %off = arith.muli %h64, %s128 : i64
  %xp = fakv.addptr %x, %off : !fakv.ptr<f32>
  %a = fakv.load %xp[%c0] strides [%s1] bounds [%n] : !fakv.ptr<f32> -> tensor<128xf32>
  %c = arith.cmpi sgt, %n, %c0 : i32
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %op = fakv.addptr %o, %off : !fakv.ptr<f32>
  fakv.store %a, %op[%c0] strides [%s1] bounds [%n] : tensor<128xf32>, !fakv.ptr<f32>
  cf.br ^bb2
^bb2:
  return
}

// -----

// `h % 2 == 0` on the query head in a grouped kernel (a user's variant): the message says it is the head's
// value that is divided, and where a per-head value is written instead.
func.func @head_modulo(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c4 = arith.constant 4 : i32
  %kvh = arith.divsi %h, %c4 : i32
  %c2 = arith.constant 2 : i32
  // expected-error @+1 {{a scalar of the query head divided or taken modulo: only program_id(1) itself may be divided by GROUP = 4 (a value or branch that depends on the head is written as tile math of it, kernels/README.md)}}
  %odd = arith.remsi %h, %c2 : i32
  %x = fakv.splat %odd : i32 -> tensor<16xi32>
  %f = arith.sitofp %x : tensor<16xi32> to tensor<16xf32>
  %c0 = arith.constant 0 : i32
  %s = arith.constant 1 : i64
  fakv.store %f, %out[%c0] strides [%s] : tensor<16xf32>, !fakv.ptr<f32>
  return
}

// -----

// Packing multiplies the head's tiles by the (padded) group: past the
// dialect's 2^24 elements it is refused here, not by the verifier after.
func.func @tile_too_big(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %group = arith.constant 1048576 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %g = arith.divsi %h, %group : i32
  // expected-error @+1 {{fakv-pack-gqa: packing the 1048576 query heads of a kv head (padded to 1048576) makes a tile 1048576 times this op's 'tensor<32xi32>': 33554432 elements, more than 16777216 (2^24)}}
  %t = fakv.splat %h : i32 -> tensor<32xi32>
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %t, %p[%c0] strides [%s1] : tensor<32xi32>, !fakv.ptr<i32>
  return
}

// -----

// A tile of no elements packed built `fakv.arange 0 to 0`, which the verifier refused after the pass.
func.func @empty_tile(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %c3 = arith.constant 3 : i32
  %s1 = arith.constant 1 : i64
  %h = fakv.program_id 1
  %kvh = arith.divsi %h, %c3 : i32
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<f32>
  %z = arith.constant 0.0 : f32
  %t = fakv.splat %z : f32 -> tensor<0xf32>
  // expected-error @+1 {{fakv-pack-gqa: has a tile of no elements: fakv-pack-gqa packs tiles of at least one element}}
  fakv.store %t, %p[%c0] strides [%s1] : tensor<0xf32>, !fakv.ptr<f32>
  return
}

// -----

// Tiles with GPU layouts (after fakv-assign-layouts): the packed tiles, built without, mixed with them.
#blocked = #fakvgpu.linear<regs = [[1], [2]], lanes = [[4], [8], [0], [0], [0]], warps = [[0], [0]]>
func.func @laid_out(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %s1 = arith.constant 1 : i64
  %s16 = arith.constant 16 : i64
  %h = fakv.program_id 1
  %kvh = arith.divsi %h, %c4 : i32
  %h64 = arith.extsi %h : i32 to i64
  %off = arith.muli %h64, %s16 : i64
  %p = fakv.addptr %out, %off : !fakv.ptr<i32>
  // expected-error @+1 {{fakv-pack-gqa: has a GPU layout: fakv-pack-gqa runs before fakv-assign-layouts}}
  %t = fakv.splat %h : i32 -> tensor<16xi32, #blocked>
  fakv.store %t, %p[%c0] strides [%s1] : tensor<16xi32, #blocked>, !fakv.ptr<i32>
  return
}

// -----

// The head divided by GROUP and by another constant: both divisions named.
func.func @two_divisors(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c4 = arith.constant 4 : i32
  %c2 = arith.constant 2 : i32
  // expected-note @+1 {{divided by 4 here}}
  %kvh = arith.divsi %h, %c4 : i32
  // expected-error @+1 {{program_id(1) is divided by 2 and by 4: only GROUP (the query heads of a kv head) may divide it}}
  %half = arith.divsi %h, %c2 : i32
  return
}

// -----

// A per-head scalar loaded: the message says how to load it as a tile.
func.func @per_head_scalar(%w: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  // expected-error @+1 {{load a tile with a row per query row instead, fl.load(P + h, (SQ_BLOCK,), (0,), (0,))}}
  %x = fakv.load_scalar %w[%h] : !fakv.ptr<i32> -> i32
  return
}

// -----

// Two program_id ops of the axis: their divisions in program order.
func.func @two_program_ids(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %h2 = fakv.program_id 1
  %c4 = arith.constant 4 : i32
  %c2 = arith.constant 2 : i32
  // expected-note @+1 {{divided by 2 here}}
  %b = arith.divsi %h2, %c2 : i32
  // expected-error @+1 {{program_id(1) is divided by 4 and by 2}}
  %a = arith.divsi %h, %c4 : i32
  return
}

// -----

func.func @index_tile_of_the_head(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %hi = arith.index_cast %h : i32 to index
  // expected-error @+1 {{fakv-pack-gqa: a rank-0 or index tile depends on the query head}}
  %t = fakv.splat %hi : index -> tensor<4xindex>
  return
}

// -----

func.func @atomic_value_of_the_head(%counts: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  // expected-error @+1 {{fakv-pack-gqa: an atomic_add's value depends on the query head}}
  %old = fakv.atomic_add %counts[%kvh], %h : !fakv.ptr<i32>
  return
}

// -----

func.func @item_of_the_head(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %t = fakv.splat %h : i32 -> tensor<1xi32>
  // expected-error @+1 {{fakv-pack-gqa: cannot pack this op: it depends on the query head}}
  %x = fakv.item %t : tensor<1xi32> -> i32
  return
}

// -----

func.func @slice_of_the_head(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %t = fakv.splat %h : i32 -> tensor<8xi32>
  // expected-error @+1 {{fakv-pack-gqa: cannot pack this op over the query heads}}
  %s = tensor.extract_slice %t[0] [4] [1] : tensor<8xi32> to tensor<4xi32>
  return
}

// -----

func.func @transposed_a_of_the_head(%q: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %hs = arith.extsi %h : i32 to i64
  %qp = fakv.addptr %q, %hs : !fakv.ptr<bf16>
  %a = fakv.load %qp[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<16x16xbf16>
  %b = fakv.load %q[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<16x16xbf16>
  %z = arith.constant 0.0 : f32
  %acc = fakv.splat %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{fakv-pack-gqa: a transposed A operand does not keep the query heads in its rows}}
  %d = fakv.dot %a, %b, %acc {transpose_a} : tensor<16x16xbf16>, tensor<16x16xbf16> -> tensor<16x16xf32>
  return
}

// -----

func.func @mask_length_of_the_head(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %z = arith.constant 0.0 : f32
  %scores = fakv.splat %z : f32 -> tensor<4x8xf32>
  %cols = fakv.arange 0 to 8 : tensor<8xi32>
  // expected-error @+1 {{fakv-pack-gqa: a scalar operand depends on the query head}}
  %m = fakv.length_mask %scores, %cols, %h : tensor<4x8xf32>, tensor<8xi32>
  return
}

// -----

func.func @square_of_the_head(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  // expected-error @+1 {{fakv-pack-gqa: a product of two values of the query head}}
  %hh = arith.muli %h, %h : i32
  return
}

// -----

func.func @other_of_the_head(%p: !fakv.ptr<i32>, %i: i32, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{fakv-pack-gqa: 'other' may not depend on the query head}}
  %t = fakv.load %p[%i] strides [%s1] bounds [%n] other %h : !fakv.ptr<i32> -> tensor<4xi32>
  return
}

// -----

func.func @trip_count_of_the_head(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{fakv-pack-gqa: the trip count may not depend on the query head}}
  scf.for %j = %c0 to %h step %c1 : i32 {
  }
  return
}

// -----

func.func @loop_carried_head(%out: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{fakv-pack-gqa: a loop-carried scalar depends on the query head}}
  %r = scf.for %j = %c0 to %n step %c1 iter_args(%a = %h) -> (i32) : i32 {
    %b = arith.addi %a, %c1 : i32
    scf.yield %b : i32
  }
  return
}

// -----

func.func @branch_result_of_the_head(%out: !fakv.ptr<i32>, %c: i1) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %kvh = arith.divsi %h, %c2 : i32
  // expected-error @+1 {{fakv-pack-gqa: a branch result scalar depends on the query head}}
  %r = scf.if %c -> (i32) {
    scf.yield %h : i32
  } else {
    scf.yield %kvh : i32
  }
  return
}
