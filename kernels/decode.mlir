// Split-KV decode attention over a paged KV cache, written in fakv IR.
//
// One program per (split, kv head, sequence): it attends the queries of the
// heads that share kv head `kvh` (GQA: `heads / kv_heads` of them, packed
// with the query positions into the 16 rows of one tile) to its share of the
// sequence's keys, one block of 32 keys at a time, with the online softmax.
// With one split it writes the output and its LSE; with several it writes
// f32 partial outputs and LSEs for kernels/combine.mlir to merge.
//
// Tile sizes: head dim 64, 32 keys per block, up to 4 query positions x 4
// heads per kv head. A contiguous cache (batch, seqlen, kv_heads, 64) runs
// through the same kernel as `batch` pages of `seqlen` rows with the block
// table [[0], [1], ...]. The element type of q, the caches and the output:
!kv = bf16

func.func @decode(
    %q: !fakv.ptr<!kv>,               // (batch, seqlen_q, heads, 64)
    %k_cache: !fakv.ptr<!kv> {fakv.divisibility = 16 : i64},   // (num_pages, page_size, kv_heads, 64), 16-byte aligned
    %v_cache: !fakv.ptr<!kv> {fakv.divisibility = 16 : i64},   // likewise
    %block_table: !fakv.ptr<i32>,     // (batch, max_pages)
    %seqlens: !fakv.ptr<i32>,         // (batch,): keys of each sequence
    %out: !fakv.ptr<!kv>,             // (batch, seqlen_q, heads, 64)
    %lse: !fakv.ptr<f32>,             // (batch, heads, seqlen_q), natural log
    %out_partial: !fakv.ptr<f32>,     // (splits, batch, seqlen_q, heads, 64)
    %lse_partial: !fakv.ptr<f32>,     // (splits, batch, heads, seqlen_q)
    %batch: i32, %seqlen_q: i32, %heads: i32, %kv_heads: i32,
    %page_size: i32, %num_pages: i32, %max_pages: i32,
    %scale: f32, %causal: i1) attributes {fakv.kernel} {
  %split = fakv.program_id 0
  %kvh = fakv.program_id 1
  %b = fakv.program_id 2
  %num_splits = fakv.num_programs 0
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c4 = arith.constant 4 : i32
  %block_n = arith.constant 32 : i32
  %group = arith.divsi %heads, %kv_heads : i32
  %seqlen = fakv.load_scalar %seqlens[%b] : !fakv.ptr<i32> -> i32

  // This split's key blocks: [first, last).
  %n_blocks = arith.ceildivsi %seqlen, %block_n : i32
  %per_split = arith.ceildivsi %n_blocks, %num_splits : i32
  %first = arith.muli %split, %per_split : i32
  %end = arith.addi %first, %per_split : i32
  %last = arith.minsi %end, %n_blocks : i32

  // Q rows: row 4 i + j is query position i of head kvh * group + j.
  %d64 = arith.constant 64 : i64
  %s1 = arith.constant 1 : i64
  %heads64 = arith.extsi %heads : i32 to i64
  %kvheads64 = arith.extsi %kv_heads : i32 to i64
  %sq64 = arith.extsi %seqlen_q : i32 to i64
  %b64 = arith.extsi %b : i32 to i64
  %row_stride_q = arith.muli %heads64, %d64 : i64
  %q_seq = arith.muli %sq64, %row_stride_q : i64
  %q_off = arith.muli %b64, %q_seq : i64
  %q_b = fakv.addptr %q, %q_off : !fakv.ptr<!kv>
  %head0 = arith.muli %kvh, %group : i32
  %head_end = arith.addi %head0, %group : i32
  %c64 = arith.constant 64 : i32
  %q3 = fakv.load %q_b[%c0, %head0, %c0] strides [%row_stride_q, %d64, %s1]
          bounds [%seqlen_q, %head_end, %c64] : !fakv.ptr<!kv> -> tensor<4x4x64x!kv>
  %qt = fakv.reshape %q3 : tensor<4x4x64x!kv> -> tensor<16x64x!kv>
  %rows = fakv.arange 0 to 16 : tensor<16xi32>
  %fours = fakv.splat %c4 : i32 -> tensor<16xi32>
  %qpos = arith.divsi %rows, %fours : tensor<16xi32>

  // Causal: query i sees key j iff j <= i + seqlen - seqlen_q (bottom-right).
  %diag = arith.subi %seqlen, %seqlen_q : i32
  %never = arith.constant 1073741824 : i32
  %offset = arith.select %causal, %diag, %never : i32

  // The block table row of this sequence, and the cache strides.
  %mp64 = arith.extsi %max_pages : i32 to i64
  %bt_off = arith.muli %b64, %mp64 : i64
  %bt = fakv.addptr %block_table, %bt_off : !fakv.ptr<i32>
  %ps64 = arith.extsi %page_size : i32 to i64
  %row_stride = arith.muli %kvheads64, %d64 : i64
  %page_stride = arith.muli %ps64, %row_stride : i64

  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %m0 = fakv.splat %ninf : f32 -> tensor<16xf32>
  %l0 = fakv.splat %zero : f32 -> tensor<16xf32>
  %acc0 = fakv.splat %zero : f32 -> tensor<16x64xf32>
  %s_zero = fakv.splat %zero : f32 -> tensor<16x32xf32>
  %key_cols = fakv.arange 0 to 32 : tensor<32xi32>
  %m, %l, %acc = scf.for %blk = %first to %last step %c1
      iter_args(%m_i = %m0, %l_i = %l0, %acc_i = %acc0)
      -> (tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>) : i32 {
    %n0 = arith.muli %blk, %block_n : i32
    %k = fakv.paged_load %k_cache[%kvh, %n0] table %bt valid %seqlen
           page_size %page_size num_pages %num_pages strides [%page_stride, %row_stride, %d64]
           : !fakv.ptr<!kv> -> tensor<32x64x!kv>
    %v = fakv.paged_load %v_cache[%kvh, %n0] table %bt valid %seqlen
           page_size %page_size num_pages %num_pages strides [%page_stride, %row_stride, %d64]
           : !fakv.ptr<!kv> -> tensor<32x64x!kv>
    %s = fakv.dot %qt, %k, %s_zero {transpose_b} : tensor<16x64x!kv>, tensor<32x64x!kv> -> tensor<16x32xf32>
    %n0s = fakv.splat %n0 : i32 -> tensor<32xi32>
    %cols = arith.addi %key_cols, %n0s : tensor<32xi32>
    %s1_ = fakv.length_mask %s, %cols, %seqlen : tensor<16x32xf32>, tensor<32xi32>
    %s2_ = fakv.causal_mask %s1_, %qpos, %cols, %offset : tensor<16x32xf32>, tensor<16xi32>, tensor<32xi32>
    %m_n, %l_n, %p, %alpha = fakv.online_softmax %s2_, %m_i, %l_i scale %scale
                               : tensor<16x32xf32>, tensor<16xf32>
    %alpha_c = fakv.expand_dims %alpha, 1 : tensor<16xf32> -> tensor<16x1xf32>
    %alpha_b = fakv.broadcast %alpha_c : tensor<16x1xf32> -> tensor<16x64xf32>
    %acc_s = arith.mulf %acc_i, %alpha_b : tensor<16x64xf32>
    %pk = fakv.cast %p : tensor<16x32xf32> -> tensor<16x32x!kv>
    %acc_n = fakv.dot %pk, %v, %acc_s : tensor<16x32x!kv>, tensor<32x64x!kv> -> tensor<16x64xf32>
    scf.yield %m_n, %l_n, %acc_n : tensor<16xf32>, tensor<16xf32>, tensor<16x64xf32>
  }

  // out = acc / l and lse = m + log(l); rows that saw no key give 0 and -inf.
  %zeros = fakv.splat %zero : f32 -> tensor<16xf32>
  %neg_infs = fakv.splat %ninf : f32 -> tensor<16xf32>
  %empty = arith.cmpf oeq, %l, %zeros : tensor<16xf32>
  %one = arith.constant 1.0 : f32
  %one_t = fakv.splat %one : f32 -> tensor<16xf32>
  %inv_l = arith.divf %one_t, %l : tensor<16xf32>
  %inv = arith.select %empty, %zeros, %inv_l : tensor<16xi1>, tensor<16xf32>
  %inv_c = fakv.expand_dims %inv, 1 : tensor<16xf32> -> tensor<16x1xf32>
  %inv_b = fakv.broadcast %inv_c : tensor<16x1xf32> -> tensor<16x64xf32>
  %o = arith.mulf %acc, %inv_b : tensor<16x64xf32>
  %log_l = math.log %l : tensor<16xf32>
  %lse_rows = arith.addf %m, %log_l : tensor<16xf32>
  %lse_t = arith.select %empty, %neg_infs, %lse_rows : tensor<16xi1>, tensor<16xf32>
  %o3 = fakv.reshape %o : tensor<16x64xf32> -> tensor<4x4x64xf32>
  %lse2 = fakv.reshape %lse_t : tensor<16xf32> -> tensor<4x4xf32>

  // Stores: (query, head, channel) of sequence b, and LSE (head, query).
  %hsq64 = arith.muli %heads64, %sq64 : i64
  %single = arith.cmpi eq, %num_splits, %c1 : i32
  scf.if %single {
    %o_b = fakv.addptr %out, %q_off : !fakv.ptr<!kv>
    %ok = fakv.cast %o3 : tensor<4x4x64xf32> -> tensor<4x4x64x!kv>
    fakv.store %ok, %o_b[%c0, %head0, %c0] strides [%row_stride_q, %d64, %s1]
      bounds [%seqlen_q, %head_end, %c64] : tensor<4x4x64x!kv>, !fakv.ptr<!kv>
    %lse_off = arith.muli %b64, %hsq64 : i64
    %lse_b = fakv.addptr %lse, %lse_off : !fakv.ptr<f32>
    fakv.store %lse2, %lse_b[%c0, %head0] strides [%s1, %sq64]
      bounds [%seqlen_q, %head_end] : tensor<4x4xf32>, !fakv.ptr<f32>
  } else {
    %split64 = arith.extsi %split : i32 to i64
    %batch64 = arith.extsi %batch : i32 to i64
    %sb0 = arith.muli %split64, %batch64 : i64
    %sb = arith.addi %sb0, %b64 : i64
    %po_off = arith.muli %sb, %q_seq : i64
    %po = fakv.addptr %out_partial, %po_off : !fakv.ptr<f32>
    fakv.store %o3, %po[%c0, %head0, %c0] strides [%row_stride_q, %d64, %s1]
      bounds [%seqlen_q, %head_end, %c64] : tensor<4x4x64xf32>, !fakv.ptr<f32>
    %pl_off = arith.muli %sb, %hsq64 : i64
    %pl = fakv.addptr %lse_partial, %pl_off : !fakv.ptr<f32>
    fakv.store %lse2, %pl[%c0, %head0] strides [%s1, %sq64]
      bounds [%seqlen_q, %head_end] : tensor<4x4xf32>, !fakv.ptr<f32>
  }
  return
}
