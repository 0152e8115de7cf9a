// kernels/decode.mlir and kernels/combine.mlir on the CPU, in f32, f16 and
// bf16: MQA (4 query heads on 1 kv head), one query position, no causal mask,
// a contiguous cache (3 sequences x 64 rows, seen as 3 pages of 64 rows with
// the block table [[0], [1], [2]]) holding 1, 64 (the full cache) and 41
// keys; one split, and three splits merged by the combine kernel.
// Expected: reference.py (decode_mqa_contiguous_*).
// RUN: %kernels-as f32 %kernels/decode.mlir %kernels/combine.mlir %s %S/Inputs/decode_harness.mlir %S/Inputs/harness.mlir \
// RUN:   | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/decode_mqa_contiguous_f32.expected
// RUN: %kernels-as f16 %kernels/decode.mlir %kernels/combine.mlir %s %S/Inputs/decode_harness.mlir %S/Inputs/harness.mlir \
// RUN:   | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/decode_mqa_contiguous_f16.expected
// RUN: %kernels-as bf16 %kernels/decode.mlir %kernels/combine.mlir %s %S/Inputs/decode_harness.mlir %S/Inputs/harness.mlir \
// RUN:   | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/decode_mqa_contiguous_bf16.expected

memref.global "private" constant @table : memref<3xi32> = dense<[0, 1, 2]>
memref.global "private" constant @seqlens : memref<3xi32> = dense<[1, 64, 41]>

func.func @main() {
  %batch = arith.constant 3 : i32
  %seqlen_q = arith.constant 1 : i32
  %heads = arith.constant 4 : i32
  %kv_heads = arith.constant 1 : i32
  %page_size = arith.constant 64 : i32
  %num_pages = arith.constant 3 : i32
  %max_pages = arith.constant 1 : i32
  %causal = arith.constant false
  %t = memref.get_global @table : memref<3xi32>
  %s = memref.get_global @seqlens : memref<3xi32>
  %dt = memref.cast %t : memref<3xi32> to memref<?xi32>
  %ds = memref.cast %s : memref<3xi32> to memref<?xi32>
  func.call @run_decode_test(%batch, %seqlen_q, %heads, %kv_heads, %page_size, %num_pages, %max_pages,
                             %causal, %dt, %ds)
    : (i32, i32, i32, i32, i32, i32, i32, i1, memref<?xi32>, memref<?xi32>) -> ()
  return
}
