// Runs kernels/decode.mlir and kernels/combine.mlir on the CPU for one
// configuration (test/cpu/decode_*.mlir), appended after the two kernels
// (whose type aliases !kv and !out it uses) and Inputs/harness.mlir.
//
// Inputs: q, k_cache, v_cache filled by the harness hash with seeds 31, 32,
// 33 (f32, then converted to !kv). Prints, in order: out and lse with one
// split, then out and lse with 3 splits merged by the combine kernel.

// dst[i] = src[i] for i < n, converted; 64 elements per program.
func.func @to_kv(%dst: !fakv.ptr<!kv>, %src: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
  %pid = fakv.program_id 0
  %c64 = arith.constant 64 : i32
  %off = arith.muli %pid, %c64 : i32
  %s1 = arith.constant 1 : i64
  %x = fakv.load %src[%off] strides [%s1] bounds [%n] : !fakv.ptr<f32> -> tensor<64xf32>
  %y = fakv.cast %x : tensor<64xf32> -> tensor<64x!kv>
  fakv.store %y, %dst[%off] strides [%s1] bounds [%n] : tensor<64x!kv>, !fakv.ptr<!kv>
  return
}

func.func @to_f32(%dst: !fakv.ptr<f32>, %src: !fakv.ptr<!kv>, %n: i32) attributes {fakv.kernel} {
  %pid = fakv.program_id 0
  %c64 = arith.constant 64 : i32
  %off = arith.muli %pid, %c64 : i32
  %s1 = arith.constant 1 : i64
  %x = fakv.load %src[%off] strides [%s1] bounds [%n] : !fakv.ptr<!kv> -> tensor<64x!kv>
  %y = fakv.cast %x : tensor<64x!kv> -> tensor<64xf32>
  fakv.store %y, %dst[%off] strides [%s1] bounds [%n] : tensor<64xf32>, !fakv.ptr<f32>
  return
}

// A buffer of n elements of !kv holding the hash values of `seed`.
func.func @hashed_kv(%n: index, %seed: i64) -> memref<?x!kv> {
  %f = memref.alloc(%n) : memref<?xf32>
  func.call @fill_f32(%f, %seed) : (memref<?xf32>, i64) -> ()
  %k = memref.alloc(%n) : memref<?x!kv>
  %pf = fakv.ptr_of %f : memref<?xf32> -> !fakv.ptr<f32>
  %pk = fakv.ptr_of %k : memref<?x!kv> -> !fakv.ptr<!kv>
  %n32 = arith.index_cast %n : index to i32
  %c64 = arith.constant 64 : i32
  %g = arith.ceildivsi %n32, %c64 : i32
  %one = arith.constant 1 : i32
  fakv.launch @to_kv[%g, %one, %one](%pk, %pf, %n32) : (!fakv.ptr<!kv>, !fakv.ptr<f32>, i32)
  return %k : memref<?x!kv>
}

func.func @print_kv(%k: memref<?x!kv>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %k, %c0 : memref<?x!kv>
  %f = memref.alloc(%n) : memref<?xf32>
  %pf = fakv.ptr_of %f : memref<?xf32> -> !fakv.ptr<f32>
  %pk = fakv.ptr_of %k : memref<?x!kv> -> !fakv.ptr<!kv>
  %n32 = arith.index_cast %n : index to i32
  %c64 = arith.constant 64 : i32
  %g = arith.ceildivsi %n32, %c64 : i32
  %one = arith.constant 1 : i32
  fakv.launch @to_f32[%g, %one, %one](%pf, %pk, %n32) : (!fakv.ptr<f32>, !fakv.ptr<!kv>, i32)
  func.call @print_f32(%f) : (memref<?xf32>) -> ()
  return
}

func.func @run_decode_test(%batch: i32, %seqlen_q: i32, %heads: i32, %kv_heads: i32,
                           %page_size: i32, %num_pages: i32, %max_pages: i32, %causal: i1,
                           %table: memref<?xi32>, %seqlens: memref<?xi32>) {
  %c64 = arith.constant 64 : i32
  %one = arith.constant 1 : i32
  %three = arith.constant 3 : i32
  %c4 = arith.constant 4 : i32
  %b_sq = arith.muli %batch, %seqlen_q : i32
  %b_sq_h = arith.muli %b_sq, %heads : i32
  %q_n32 = arith.muli %b_sq_h, %c64 : i32
  %q_n = arith.index_cast %q_n32 : i32 to index
  %lse_n = arith.index_cast %b_sq_h : i32 to index
  %pages_rows = arith.muli %num_pages, %page_size : i32
  %pages_rows_h = arith.muli %pages_rows, %kv_heads : i32
  %cache_n32 = arith.muli %pages_rows_h, %c64 : i32
  %cache_n = arith.index_cast %cache_n32 : i32 to index
  %c3 = arith.constant 3 : index
  %part_n = arith.muli %q_n, %c3 : index
  %part_lse_n = arith.muli %lse_n, %c3 : index
  %seed_q = arith.constant 31 : i64
  %seed_k = arith.constant 32 : i64
  %seed_v = arith.constant 33 : i64
  %q = func.call @hashed_kv(%q_n, %seed_q) : (index, i64) -> memref<?x!kv>
  %k = func.call @hashed_kv(%cache_n, %seed_k) : (index, i64) -> memref<?x!kv>
  %v = func.call @hashed_kv(%cache_n, %seed_v) : (index, i64) -> memref<?x!kv>
  %out = memref.alloc(%q_n) : memref<?x!kv>
  %lse = memref.alloc(%lse_n) : memref<?xf32>
  %out_part = memref.alloc(%part_n) : memref<?xf32>
  %lse_part = memref.alloc(%part_lse_n) : memref<?xf32>
  %pq = fakv.ptr_of %q : memref<?x!kv> -> !fakv.ptr<!kv>
  %pk = fakv.ptr_of %k : memref<?x!kv> -> !fakv.ptr<!kv>
  %pv = fakv.ptr_of %v : memref<?x!kv> -> !fakv.ptr<!kv>
  %pt = fakv.ptr_of %table : memref<?xi32> -> !fakv.ptr<i32>
  %ps = fakv.ptr_of %seqlens : memref<?xi32> -> !fakv.ptr<i32>
  %po = fakv.ptr_of %out : memref<?x!kv> -> !fakv.ptr<!kv>
  %pl = fakv.ptr_of %lse : memref<?xf32> -> !fakv.ptr<f32>
  %ppo = fakv.ptr_of %out_part : memref<?xf32> -> !fakv.ptr<f32>
  %ppl = fakv.ptr_of %lse_part : memref<?xf32> -> !fakv.ptr<f32>
  %d = arith.constant 64.0 : f32
  %rsqrt = math.rsqrt %d : f32

  // One split: the decode kernel writes out and lse itself.
  fakv.launch @decode[%one, %kv_heads, %batch](%pq, %pk, %pv, %pt, %ps, %po, %pl, %ppo, %ppl,
      %batch, %seqlen_q, %heads, %kv_heads, %page_size, %num_pages, %max_pages, %rsqrt, %causal)
    : (!fakv.ptr<!kv>, !fakv.ptr<!kv>, !fakv.ptr<!kv>, !fakv.ptr<i32>, !fakv.ptr<i32>, !fakv.ptr<!kv>,
       !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, i32, i32, i32, i32, i32, i32, i32, f32, i1)
  func.call @print_kv(%out) : (memref<?x!kv>) -> ()
  func.call @print_f32(%lse) : (memref<?xf32>) -> ()

  // Three splits, then the combine kernel, into outputs filled with NaN first (what the one-split run
  // printed must not pass for the combine's).
  %zero_kv = arith.constant 0.0 : !kv
  %nan_kv = arith.divf %zero_kv, %zero_kv : !kv
  %zero_f32 = arith.constant 0.0 : f32
  %nan_f32 = arith.divf %zero_f32, %zero_f32 : f32
  linalg.fill ins(%nan_kv : !kv) outs(%out : memref<?x!kv>)
  linalg.fill ins(%nan_f32 : f32) outs(%lse : memref<?xf32>)
  fakv.launch @decode[%three, %kv_heads, %batch](%pq, %pk, %pv, %pt, %ps, %po, %pl, %ppo, %ppl,
      %batch, %seqlen_q, %heads, %kv_heads, %page_size, %num_pages, %max_pages, %rsqrt, %causal)
    : (!fakv.ptr<!kv>, !fakv.ptr<!kv>, !fakv.ptr<!kv>, !fakv.ptr<i32>, !fakv.ptr<i32>, !fakv.ptr<!kv>,
       !fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<f32>, i32, i32, i32, i32, i32, i32, i32, f32, i1)
  %head_blocks = arith.ceildivsi %heads, %c4 : i32
  fakv.launch @combine[%head_blocks, %seqlen_q, %batch](%ppo, %ppl, %po, %pl, %three, %batch, %seqlen_q, %heads)
    : (!fakv.ptr<f32>, !fakv.ptr<f32>, !fakv.ptr<!out>, !fakv.ptr<f32>, i32, i32, i32, i32)
  func.call @print_kv(%out) : (memref<?x!kv>) -> ()
  func.call @print_f32(%lse) : (memref<?xf32>) -> ()
  return
}
