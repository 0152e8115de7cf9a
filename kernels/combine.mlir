// Merge the split-KV partial results of kernels/decode.mlir, written in fakv IR.
//
// One program per (block of 4 heads, query position, sequence): it loads the
// partial outputs and LSEs of every split (up to 8) for its rows and weights
// them by exp(lse_split - lse) (fakv.lse_combine). Splits past num_splits
// read as LSE -inf and weigh nothing. The element type of the output:
!out = bf16

func.func @combine(
    %out_partial: !fakv.ptr<f32>,     // (splits, batch, seqlen_q, heads, 64)
    %lse_partial: !fakv.ptr<f32>,     // (splits, batch, heads, seqlen_q)
    %out: !fakv.ptr<!out>,            // (batch, seqlen_q, heads, 64)
    %lse: !fakv.ptr<f32>,             // (batch, heads, seqlen_q)
    %num_splits: i32, %batch: i32, %seqlen_q: i32, %heads: i32) attributes {fakv.kernel} {
  %hb = fakv.program_id 0
  %qi = fakv.program_id 1
  %b = fakv.program_id 2
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %c64 = arith.constant 64 : i32
  %s1 = arith.constant 1 : i64
  %d64 = arith.constant 64 : i64
  %h0 = arith.muli %hb, %c4 : i32
  %heads64 = arith.extsi %heads : i32 to i64
  %sq64 = arith.extsi %seqlen_q : i32 to i64
  %b64 = arith.extsi %b : i32 to i64
  %qi64 = arith.extsi %qi : i32 to i64
  %batch64 = arith.extsi %batch : i32 to i64
  // Element offsets of row (b, qi) in the output and of (b, ., qi) in the LSEs.
  %bq0 = arith.muli %b64, %sq64 : i64
  %bq = arith.addi %bq0, %qi64 : i64
  %row_len = arith.muli %heads64, %d64 : i64
  %o_off = arith.muli %bq, %row_len : i64
  %hsq = arith.muli %heads64, %sq64 : i64
  %l_off0 = arith.muli %b64, %hsq : i64
  %l_off = arith.addi %l_off0, %qi64 : i64
  // Split strides.
  %bsq = arith.muli %batch64, %sq64 : i64
  %o_split = arith.muli %bsq, %row_len : i64
  %l_split = arith.muli %batch64, %hsq : i64

  %parts_b = fakv.addptr %out_partial, %o_off : !fakv.ptr<f32>
  %lses_b = fakv.addptr %lse_partial, %l_off : !fakv.ptr<f32>
  %ninf = arith.constant 0xFF800000 : f32
  %parts = fakv.load %parts_b[%c0, %h0, %c0] strides [%o_split, %d64, %s1]
             bounds [%num_splits, %heads, %c64] : !fakv.ptr<f32> -> tensor<8x4x64xf32>
  %lses = fakv.load %lses_b[%c0, %h0] strides [%l_split, %sq64]
            bounds [%num_splits, %heads] other %ninf : !fakv.ptr<f32> -> tensor<8x4xf32>
  %o, %l = fakv.lse_combine %parts, %lses : tensor<8x4x64xf32>, tensor<8x4xf32> -> tensor<4x64xf32>, tensor<4xf32>

  %out_b = fakv.addptr %out, %o_off : !fakv.ptr<!out>
  %oc = fakv.cast %o : tensor<4x64xf32> -> tensor<4x64x!out>
  fakv.store %oc, %out_b[%h0, %c0] strides [%d64, %s1] bounds [%heads, %c64] : tensor<4x64x!out>, !fakv.ptr<!out>
  %lse_b = fakv.addptr %lse, %l_off : !fakv.ptr<f32>
  fakv.store %l, %lse_b[%h0] strides [%sq64] bounds [%heads] : tensor<4xf32>, !fakv.ptr<f32>
  return
}
