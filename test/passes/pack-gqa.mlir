// fakv-pack-gqa: a kernel written per query head becomes one per kv head
// whose tiles stack the heads of the group in their rows.
// RUN: fakv-opt %s --fakv-pack-gqa --cse --split-input-file | FileCheck %s
// A uniform tile out of a chain of row-wise ops is recomputed at the packed shape (2 ops: remsi of the packed
// arange, then the chain); a chain deeper than the pass recurses (60,000 ops overflowed its stack) is copied.
// RUN: %python %S/Inputs/deep_chain.py 2 | fakv-opt --fakv-pack-gqa --cse | FileCheck %s --check-prefix=CHAIN
// CHAIN: %[[R:.*]] = arith.remsi {{.*}} : tensor<256xi32>
// CHAIN: %[[A:.*]] = arith.addi %[[R]], %[[R]] : tensor<256xi32>
// CHAIN: arith.addi %[[A]], %[[A]] : tensor<256xi32>
// CHAIN-NOT: fakv.broadcast
// RUN: %python %S/Inputs/deep_chain.py 60000 | fakv-opt --fakv-pack-gqa | FileCheck %s --check-prefix=DEEP
// DEEP: fakv.expand_dims {{.*}} : tensor<64xi32> -> tensor<1x64xi32>
// DEEP-NEXT: fakv.broadcast {{.*}} : tensor<1x64xi32> -> tensor<4x64xi32>
// The first kernel (up to the first separator), down to ptx as well.
// RUN: sed '/^\/\/ -----/,$d' %s | fakv-opt --fakv-to-cubin="format=isa" | FileCheck %s --check-prefix=PTX
// and through fakv-compile, whose launch facts carry the grid packing:
// RUN: sed '/^\/\/ -----/,$d' %s > %t.decode.mlir
// RUN: fakv-compile %t.decode.mlir -o %t.decode --format=isa
// RUN: FileCheck %s --check-prefix=FACTS < %t.decode.json
// FACTS: "grid_packing": [
// FACTS-NEXT: 1,
// FACTS-NEXT: 3,
// FACTS-NEXT: 1
// FACTS-NEXT: ],

// Decode of one query head h = program_id(1) over the keys of kv head
// h / 3 (two query positions, head dim 64, 32 keys a block). Packed: the 3
// heads (padded to 4) times 2 positions are the 8 rows of every tile.
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: attributes {fakv.grid_packing = array<i32: 1, 3, 1>, fakv.kernel}
// CHECK-NOT: fakv.pack_gqa
// The program id is the kv head; h is kvh * 3 + j.
// CHECK: %[[KVH:.*]] = fakv.program_id 1
// CHECK: %[[H0:.*]] = arith.muli %[[KVH]], %[[C3:.*]] : i32
// Q of the group: a leading head dimension of stride q_head_stride and
// bound 3, folded into the rows.
// CHECK: %[[J1:.*]] = arith.extsi %c1_i32 : i32 to i64
// CHECK: %[[HS:.*]] = arith.muli %[[J1]], %c64_i64 : i64
// CHECK: %[[QP:.*]] = fakv.addptr %{{.*}}, %{{.*}} : !fakv.ptr<bf16>
// CHECK: %[[Q3:.*]] = fakv.load %[[QP]][%{{.*}}, %{{.*}}, %{{.*}}] strides [%[[HS]], %{{.*}}, %{{.*}}] bounds [%[[C3]], %{{.*}}, %{{.*}}] : !fakv.ptr<bf16> -> tensor<4x2x64xbf16>
// CHECK: %[[Q:.*]] = fakv.reshape %[[Q3]] : tensor<4x2x64xbf16> -> tensor<8x64xbf16>
// The query positions, the same for every head, recomputed for 8 rows.
// CHECK: %[[R:.*]] = fakv.arange 0 to 8 : tensor<8xi32>
// CHECK: %[[TWO:.*]] = fakv.splat %c2_i32 : i32 -> tensor<8xi32>
// CHECK: arith.remsi %[[R]], %[[TWO]] : tensor<8xi32>
// Loop-carried running max, sum and accumulator have 8 rows; K/V stay shared.
// CHECK: scf.for {{.*}} -> (tensor<8xf32>, tensor<8xf32>, tensor<8x64xf32>)
// CHECK: %[[K:.*]] = fakv.paged_load %{{.*}}[%[[KVH]], %{{.*}}] {{.*}} -> tensor<32x64xbf16>
// CHECK: fakv.dot %[[Q]], %[[K]], %{{.*}} {transpose_b} : tensor<8x64xbf16>, tensor<32x64xbf16> -> tensor<8x32xf32>
// CHECK: fakv.causal_mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<8xi32>, tensor<32xi32>
// CHECK: fakv.online_softmax %{{.*}} : tensor<8x32xf32>, tensor<8xf32>
// CHECK: fakv.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x32xbf16>, tensor<32x64xbf16> -> tensor<8x64xf32>
// The output and the LSE of the group: unfolded, stored through a leading
// head dimension of bound 3 (the padding head writes nothing).
// CHECK: %[[O:.*]] = fakv.reshape %{{.*}} : tensor<8x64xbf16> -> tensor<4x2x64xbf16>
// CHECK: fakv.store %[[O]], %{{.*}} bounds [%[[C3]], %{{.*}}, %{{.*}}] : tensor<4x2x64xbf16>
// CHECK: %[[L:.*]] = fakv.reshape %{{.*}} : tensor<8xf32> -> tensor<4x2xf32>
// CHECK: fakv.store %[[L]], %{{.*}} bounds [%[[C3]], %{{.*}}] : tensor<4x2xf32>
// The packed kernel goes all the way to wgmma with M = 64.
// PTX: wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
func.func @decode(%q: !fakv.ptr<bf16>, %k_cache: !fakv.ptr<bf16>, %v_cache: !fakv.ptr<bf16>,
                  %block_table: !fakv.ptr<i32>, %seqlens: !fakv.ptr<i32>,
                  %out: !fakv.ptr<bf16>, %lse: !fakv.ptr<f32>,
                  %seqlen_q: i32, %heads: i32, %kv_heads: i32,
                  %page_size: i32, %num_pages: i32, %max_pages: i32, %scale: f32)
    attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %b = fakv.program_id 2
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c3 = arith.constant 3 : i32
  %c32 = arith.constant 32 : i32
  %c64 = arith.constant 64 : i32
  %d64 = arith.constant 64 : i64
  %s1 = arith.constant 1 : i64
  %kvh = arith.divsi %h, %c3 : i32
  %seqlen = fakv.load_scalar %seqlens[%b] : !fakv.ptr<i32> -> i32
  %n_blocks = arith.ceildivsi %seqlen, %c32 : i32

  // q[b, :, h, :]: (batch, seqlen_q, heads, 64).
  %heads64 = arith.extsi %heads : i32 to i64
  %row = arith.muli %heads64, %d64 : i64
  %sq64 = arith.extsi %seqlen_q : i32 to i64
  %b64 = arith.extsi %b : i32 to i64
  %batch_stride = arith.muli %sq64, %row : i64
  %q_b_off = arith.muli %b64, %batch_stride : i64
  %h64 = arith.extsi %h : i32 to i64
  %q_h_off = arith.muli %h64, %d64 : i64
  %q_off = arith.addi %q_b_off, %q_h_off : i64
  %q_bh = fakv.addptr %q, %q_off : !fakv.ptr<bf16>
  %qt = fakv.load %q_bh[%c0, %c0] strides [%row, %s1] bounds [%seqlen_q, %c64]
          : !fakv.ptr<bf16> -> tensor<2x64xbf16>
  %qpos = fakv.arange 0 to 2 : tensor<2xi32>
  %diag = arith.subi %seqlen, %seqlen_q : i32

  %mp64 = arith.extsi %max_pages : i32 to i64
  %bt_off = arith.muli %b64, %mp64 : i64
  %bt = fakv.addptr %block_table, %bt_off : !fakv.ptr<i32>
  %ps64 = arith.extsi %page_size : i32 to i64
  %kvh64 = arith.extsi %kv_heads : i32 to i64
  %kv_row = arith.muli %kvh64, %d64 : i64
  %page_stride = arith.muli %ps64, %kv_row : i64

  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m0 = fakv.splat %ninf : f32 -> tensor<2xf32>
  %l0 = fakv.splat %zero : f32 -> tensor<2xf32>
  %acc0 = fakv.splat %zero : f32 -> tensor<2x64xf32>
  %s_zero = fakv.splat %zero : f32 -> tensor<2x32xf32>
  %key_cols = fakv.arange 0 to 32 : tensor<32xi32>
  %m, %l, %acc = scf.for %blk = %c0 to %n_blocks step %c1
      iter_args(%m_i = %m0, %l_i = %l0, %acc_i = %acc0)
      -> (tensor<2xf32>, tensor<2xf32>, tensor<2x64xf32>) : i32 {
    %n0 = arith.muli %blk, %c32 : i32
    %k = fakv.paged_load %k_cache[%kvh, %n0] table %bt valid %seqlen
           page_size %page_size num_pages %num_pages strides [%page_stride, %kv_row, %d64]
           : !fakv.ptr<bf16> -> tensor<32x64xbf16>
    %v = fakv.paged_load %v_cache[%kvh, %n0] table %bt valid %seqlen
           page_size %page_size num_pages %num_pages strides [%page_stride, %kv_row, %d64]
           : !fakv.ptr<bf16> -> tensor<32x64xbf16>
    %s = fakv.dot %qt, %k, %s_zero {transpose_b} : tensor<2x64xbf16>, tensor<32x64xbf16> -> tensor<2x32xf32>
    %n0s = fakv.splat %n0 : i32 -> tensor<32xi32>
    %cols = arith.addi %key_cols, %n0s : tensor<32xi32>
    %s1_ = fakv.length_mask %s, %cols, %seqlen : tensor<2x32xf32>, tensor<32xi32>
    %s2_ = fakv.causal_mask %s1_, %qpos, %cols, %diag : tensor<2x32xf32>, tensor<2xi32>, tensor<32xi32>
    %m_n, %l_n, %p, %alpha = fakv.online_softmax %s2_, %m_i, %l_i scale %scale
                               : tensor<2x32xf32>, tensor<2xf32>
    %alpha_c = fakv.expand_dims %alpha, 1 : tensor<2xf32> -> tensor<2x1xf32>
    %alpha_b = fakv.broadcast %alpha_c : tensor<2x1xf32> -> tensor<2x64xf32>
    %acc_s = arith.mulf %acc_i, %alpha_b : tensor<2x64xf32>
    %pk = fakv.cast %p : tensor<2x32xf32> -> tensor<2x32xbf16>
    %acc_n = fakv.dot %pk, %v, %acc_s : tensor<2x32xbf16>, tensor<32x64xbf16> -> tensor<2x64xf32>
    scf.yield %m_n, %l_n, %acc_n : tensor<2xf32>, tensor<2xf32>, tensor<2x64xf32>
  }

  %l_c = fakv.expand_dims %l, 1 : tensor<2xf32> -> tensor<2x1xf32>
  %l_b = fakv.broadcast %l_c : tensor<2x1xf32> -> tensor<2x64xf32>
  %o = arith.divf %acc, %l_b : tensor<2x64xf32>
  %ob = fakv.cast %o : tensor<2x64xf32> -> tensor<2x64xbf16>
  %o_bh = fakv.addptr %out, %q_off : !fakv.ptr<bf16>
  fakv.store %ob, %o_bh[%c0, %c0] strides [%row, %s1] bounds [%seqlen_q, %c64]
    : tensor<2x64xbf16>, !fakv.ptr<bf16>
  // lse[b, h, :]: (batch, heads, seqlen_q).
  %log_l = math.log %l : tensor<2xf32>
  %lse_t = arith.addf %m, %log_l : tensor<2xf32>
  %bh = arith.muli %b, %heads : i32
  %bh_h = arith.addi %bh, %h : i32
  %lse_row = arith.muli %bh_h, %seqlen_q : i32
  %lse_off = arith.extsi %lse_row : i32 to i64
  %lse_bh = fakv.addptr %lse, %lse_off : !fakv.ptr<f32>
  fakv.store %lse_t, %lse_bh[%c0] strides [%s1] bounds [%seqlen_q] : tensor<2xf32>, !fakv.ptr<f32>
  return
}

// -----

// Three heads a group, padded to 4 rows: an access without bounds keeps to
// the group's heads by a mask (j < 3), so the padding head writes nothing.
// CHECK-LABEL: func.func @three_heads_unbounded(
// CHECK: %[[J:.*]] = fakv.arange 0 to 4 : tensor<4xi32>
// CHECK: %[[THREE:.*]] = fakv.splat %c3_i32 : i32 -> tensor<4xi32>
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[J]], %[[THREE]] : tensor<4xi32>
// CHECK: %[[M:.*]] = fakv.reshape %[[IN]] : tensor<4xi1> -> tensor<4x1xi1>
// CHECK: fakv.store %{{.*}} mask %[[M]] : tensor<4x1xi32>, !fakv.ptr<i32>
func.func @three_heads_unbounded(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c3 = arith.constant 3 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %g = arith.divsi %h, %c3 : i32
  %t = fakv.splat %h : i32 -> tensor<1xi32>
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %t, %p[%c0] strides [%s1] : tensor<1xi32>, !fakv.ptr<i32>
  return
}

// -----

// num_programs along the packed axis is the written grid's; h % GROUP is the
// head's index j in the group, a tile where it meets tiles.
// CHECK-LABEL: func.func @grid_and_index(
// CHECK-SAME: fakv.grid_packing = array<i32: 1, 1, 4>
// CHECK: %[[P:.*]] = fakv.program_id 2
// CHECK: %[[N:.*]] = fakv.num_programs 2
// CHECK: arith.muli %[[N]], %{{.*}} : i32
// CHECK: %[[J:.*]] = fakv.arange 0 to 4 : tensor<4xi32>
// CHECK: %[[ONE:.*]] = fakv.splat %c1_i32 : i32 -> tensor<4xi32>
// CHECK: arith.muli %[[J]], %[[ONE]] : tensor<4xi32>
// CHECK: fakv.store %{{.*}} : tensor<4x1xi32>, !fakv.ptr<i32>
func.func @grid_and_index(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c4 = arith.constant 4 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %g = arith.divsi %h, %c4 : i32
  %j = arith.remsi %h, %c4 : i32
  %n = fakv.num_programs 2
  %x = arith.addi %j, %n : i32
  %t = fakv.splat %x : i32 -> tensor<1xi32>
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %t, %p[%c0] strides [%s1] : tensor<1xi32>, !fakv.ptr<i32>
  return
}

// -----

// One query head per kv head: nothing to pack.
// CHECK-LABEL: func.func @mha(
// CHECK-SAME: fakv.grid_packing = array<i32: 1, 1, 1>
// CHECK: fakv.load {{.*}} -> tensor<2x64xf32>
func.func @mha(%q: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c1 = arith.constant 1 : i32
  %c0 = arith.constant 0 : i32
  %s = arith.constant 64 : i64
  %s1 = arith.constant 1 : i64
  %kvh = arith.divsi %h, %c1 : i32
  %h64 = arith.extsi %h : i32 to i64
  %off = arith.muli %h64, %s : i64
  %p = fakv.addptr %q, %off : !fakv.ptr<f32>
  %t = fakv.load %p[%c0, %c0] strides [%s, %s1] : !fakv.ptr<f32> -> tensor<2x64xf32>
  fakv.store %t, %p[%c0, %c0] strides [%s, %s1] : tensor<2x64xf32>, !fakv.ptr<f32>
  return
}

// -----

// A branch that yields a uniform tile on one side and a packed one on the
// other: the uniform side is replicated. A constant of distinct rows meeting
// a packed tile is copied per head; key columns of a uniform mask stay
// unpacked when the mask is recomputed.
// CHECK-LABEL: func.func @uniform_sides(
// CHECK: scf.if %{{.*}} -> (tensor<8xf32>)
// CHECK: scf.yield %{{.*}} : tensor<8xf32>
// CHECK: } else {
// CHECK: scf.yield %{{.*}} : tensor<8xf32>
// CHECK: %[[W:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: %[[W1:.*]] = fakv.expand_dims %[[W]], 0 : tensor<4xf32> -> tensor<1x4xf32>
// CHECK: %[[W2:.*]] = fakv.broadcast %[[W1]] : tensor<1x4xf32> -> tensor<2x4xf32>
// CHECK: fakv.reshape %[[W2]] : tensor<2x4xf32> -> tensor<8xf32>
// CHECK: fakv.length_mask %{{.*}}, %{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<32xi32>
func.func @uniform_sides(%out: !fakv.ptr<f32>, %c: i1, %len: i32) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c2 = arith.constant 2 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %kvh = arith.divsi %h, %c2 : i32
  %z = arith.constant 0.0 : f32
  %u = fakv.splat %z : f32 -> tensor<4xf32>
  %hs = fakv.splat %h : i32 -> tensor<4xi32>
  %hf = arith.sitofp %hs : tensor<4xi32> to tensor<4xf32>
  %x = scf.if %c -> tensor<4xf32> {
    scf.yield %hf : tensor<4xf32>
  } else {
    scf.yield %u : tensor<4xf32>
  }
  %w = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %y = arith.mulf %x, %w : tensor<4xf32>
  %zs = fakv.splat %z : f32 -> tensor<4x32xf32>
  %cols = fakv.arange 0 to 32 : tensor<32xi32>
  %bias = fakv.length_mask %zs, %cols, %len : tensor<4x32xf32>, tensor<32xi32>
  %yc = fakv.expand_dims %y, 1 : tensor<4xf32> -> tensor<4x1xf32>
  %yb = fakv.broadcast %yc : tensor<4x1xf32> -> tensor<4x32xf32>
  %t = arith.addf %yb, %bias : tensor<4x32xf32>
  %h64 = arith.extsi %h : i32 to i64
  %c128 = arith.constant 128 : i64
  %off = arith.muli %h64, %c128 : i64
  %p = fakv.addptr %out, %off : !fakv.ptr<f32>
  %c32 = arith.constant 32 : i64
  fakv.store %t, %p[%c0, %c0] strides [%c32, %s1] : tensor<4x32xf32>, !fakv.ptr<f32>
  return
}

// -----

// A counter per query head: the packed program adds once, to its first
// head's counter (h = kvh * GROUP), and its value is every head's.
// CHECK-LABEL: func.func @counter_per_head
// CHECK: %[[KVH:.*]] = fakv.program_id 1
// CHECK: %[[H0:.*]] = arith.muli %[[KVH]], %c4_i32
// CHECK: fakv.atomic_add %{{.*}}[%[[H0]]], %c1_i32 : !fakv.ptr<i32>
// CHECK-NOT: fakv.atomic_add
func.func @counter_per_head(%c: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 1 : i32} {
  %h = fakv.program_id 1
  %c4 = arith.constant 4 : i32
  %kvh = arith.divsi %h, %c4 : i32
  %one = arith.constant 1 : i32
  %old = fakv.atomic_add %c[%h], %one : !fakv.ptr<i32>
  return
}

// -----

// One query head per kv head (MQA's transpose, GROUP 1): nothing to pack, so
// a body of several blocks (cf branches) passes as it is (refused only
// where the heads are packed: pack-gqa-invalid.mlir).
// CHECK-LABEL: func.func @one_head_per_kv_head
// CHECK: cf.cond_br
// CHECK: fakv.store
// CHECK: return
func.func @one_head_per_kv_head(%x: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 0 : i32} {
  %h = fakv.program_id 0
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %s1 = arith.constant 1 : i64
  %kvh = arith.divsi %h, %c1 : i32
  %c = arith.cmpi sgt, %n, %c0 : i32
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  %t = fakv.splat %c1 : i32 -> tensor<4xi32>
  %f = arith.sitofp %t : tensor<4xi32> to tensor<4xf32>
  fakv.store %f, %x[%kvh] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  cf.br ^bb2
^bb2:
  return
}

// -----

// An h-dependent integer splat into 2 rows a head: j = arange(0, 8) / 2.
// CHECK-LABEL: func.func @splat_two_rows(
// CHECK: %[[J:.*]] = fakv.arange 0 to 8 : tensor<8xi32>
// CHECK: %[[TWO:.*]] = fakv.splat %c2_i32 : i32 -> tensor<8xi32>
// CHECK: %[[H:.*]] = arith.divsi %[[J]], %[[TWO]] : tensor<8xi32>
// CHECK: arith.muli %[[H]], %{{.*}} : tensor<8xi32>
func.func @splat_two_rows(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c4 = arith.constant 4 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s2 = arith.constant 2 : i64
  %g = arith.divsi %h, %c4 : i32
  %t = fakv.splat %h : i32 -> tensor<2xi32>
  %h64 = arith.extsi %h : i32 to i64
  %off = arith.muli %h64, %s2 : i64
  %p = fakv.addptr %out, %off : !fakv.ptr<i32>
  fakv.store %t, %p[%c0] strides [%s1] : tensor<2xi32>, !fakv.ptr<i32>
  return
}

// -----

// 7 - h: coefficient 0 - 1; an arange from 5 meeting a packed tile.
// CHECK-LABEL: func.func @minus_head(
// CHECK: %[[NEG:.*]] = arith.subi %c0_i32, %c1_i32 : i32
// CHECK: %[[NEGT:.*]] = fakv.splat %[[NEG]] : i32 -> tensor<8xi32>
// CHECK: arith.muli %{{.*}}, %[[NEGT]] : tensor<8xi32>
// CHECK: %[[FIVE:.*]] = fakv.splat %c5_i32 : i32 -> tensor<8xi32>
// CHECK: arith.addi %{{.*}}, %[[FIVE]] : tensor<8xi32>
func.func @minus_head(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c4 = arith.constant 4 : i32
  %c7 = arith.constant 7 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %g = arith.divsi %h, %c4 : i32
  %x = arith.subi %c7, %h : i32
  %t = fakv.splat %x : i32 -> tensor<2xi32>
  %r = fakv.arange 5 to 7 : tensor<2xi32>
  %y = arith.addi %t, %r : tensor<2xi32>
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %y, %p[%c0] strides [%s1] : tensor<2xi32>, !fakv.ptr<i32>
  return
}

// -----

// Three heads, a store with its own mask and no bounds: both masks.
// CHECK-LABEL: func.func @masked_three(
// CHECK: %[[OWN:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : tensor<16xi32>
// CHECK: %[[THREE:.*]] = fakv.splat %c3_i32 : i32 -> tensor<16xi32>
// CHECK: %[[PAD:.*]] = arith.cmpi slt, %{{.*}}, %[[THREE]] : tensor<16xi32>
// CHECK: %[[PAD4:.*]] = fakv.reshape %[[PAD]] : tensor<16xi1> -> tensor<4x4xi1>
// CHECK: %[[OWN4:.*]] = fakv.reshape %[[OWN]] : tensor<16xi1> -> tensor<4x4xi1>
// CHECK: %[[BOTH:.*]] = arith.andi %[[PAD4]], %[[OWN4]] : tensor<4x4xi1>
// CHECK: fakv.store {{.*}} mask %[[BOTH]] : tensor<4x4xi32>
func.func @masked_three(%out: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c3 = arith.constant 3 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %g = arith.divsi %h, %c3 : i32
  %t = fakv.splat %h : i32 -> tensor<4xi32>
  %r = fakv.arange 0 to 4 : tensor<4xi32>
  %ns = fakv.splat %n : i32 -> tensor<4xi32>
  %m = arith.cmpi slt, %r, %ns : tensor<4xi32>
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %t, %p[%c0] strides [%s1] mask %m : tensor<4xi32>, !fakv.ptr<i32>
  return
}

// -----

// A packed (1, 4) row broadcast to (2, 4): within each head.
// CHECK-LABEL: func.func @row_broadcast(
// CHECK: %[[U:.*]] = fakv.reshape %{{.*}} : tensor<4x4xi32> -> tensor<4x1x4xi32>
// CHECK: %[[B:.*]] = fakv.broadcast %[[U]] : tensor<4x1x4xi32> -> tensor<4x2x4xi32>
// CHECK: fakv.reshape %[[B]] : tensor<4x2x4xi32> -> tensor<8x4xi32>
func.func @row_broadcast(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c4 = arith.constant 4 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s4 = arith.constant 4 : i64
  %g = arith.divsi %h, %c4 : i32
  %t = fakv.splat %h : i32 -> tensor<1x4xi32>
  %b = fakv.broadcast %t : tensor<1x4xi32> -> tensor<2x4xi32>
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %b, %p[%c0, %c0] strides [%s4, %s1] : tensor<2x4xi32>, !fakv.ptr<i32>
  return
}

// -----

// At the limit: 4 heads times 2^22 elements is 2^24, which the dialect allows.
// CHECK-LABEL: func.func @at_limit(
// CHECK: fakv.store {{.*}} : tensor<4x4194304xi32>
func.func @at_limit(%out: !fakv.ptr<i32>) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c4 = arith.constant 4 : i32
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %g = arith.divsi %h, %c4 : i32
  %t = fakv.splat %h : i32 -> tensor<4194304xi32>
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %t, %p[%c0] strides [%s1] : tensor<4194304xi32>, !fakv.ptr<i32>
  return
}

// -----

// CHECK-LABEL: func.func @unsigned_loop(
// CHECK: scf.for unsigned {{.*}} -> (tensor<8xi32>)
func.func @unsigned_loop(%out: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel, fakv.pack_gqa = 2 : i32} {
  %h = fakv.program_id 2
  %c4 = arith.constant 4 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %s1 = arith.constant 1 : i64
  %g = arith.divsi %h, %c4 : i32
  %t = fakv.splat %h : i32 -> tensor<2xi32>
  %r = scf.for unsigned %i = %c0 to %n step %c1 iter_args(%a = %t) -> (tensor<2xi32>) : i32 {
    %b = arith.addi %a, %a : tensor<2xi32>
    scf.yield %b : tensor<2xi32>
  }
  %h64 = arith.extsi %h : i32 to i64
  %p = fakv.addptr %out, %h64 : !fakv.ptr<i32>
  fakv.store %r, %p[%c0] strides [%s1] : tensor<2xi32>, !fakv.ptr<i32>
  return
}
