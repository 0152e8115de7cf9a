// kernels/decode.mlir and kernels/combine.mlir on the CPU, in f32, f16 and
// bf16: GQA (8 query heads on 2 kv heads), 2 query positions with the causal
// mask aligned bottom-right, a paged cache of 16-row pages in shuffled order
// (the unused block-table entry is -1 and never read), sequences of 37 and 50
// keys; one split, and three splits merged by the combine kernel (37 keys
// make 2 blocks, so the third split is empty).
// Expected: reference.py (decode_gqa_paged_causal_*).
// RUN: %kernels-as f32 %kernels/decode.mlir %kernels/combine.mlir %s %S/Inputs/decode_harness.mlir %S/Inputs/harness.mlir \
// RUN:   | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/decode_gqa_paged_causal_f32.expected
// RUN: %kernels-as f16 %kernels/decode.mlir %kernels/combine.mlir %s %S/Inputs/decode_harness.mlir %S/Inputs/harness.mlir \
// RUN:   | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/decode_gqa_paged_causal_f16.expected
// RUN: %kernels-as bf16 %kernels/decode.mlir %kernels/combine.mlir %s %S/Inputs/decode_harness.mlir %S/Inputs/harness.mlir \
// RUN:   | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/decode_gqa_paged_causal_bf16.expected

memref.global "private" constant @table : memref<8xi32> = dense<[7, 2, 9, -1, 3, 8, 1, 5]>
memref.global "private" constant @seqlens : memref<2xi32> = dense<[37, 50]>

func.func @main() {
  %batch = arith.constant 2 : i32
  %seqlen_q = arith.constant 2 : i32
  %heads = arith.constant 8 : i32
  %kv_heads = arith.constant 2 : i32
  %page_size = arith.constant 16 : i32
  %num_pages = arith.constant 10 : i32
  %max_pages = arith.constant 4 : i32
  %causal = arith.constant true
  %t = memref.get_global @table : memref<8xi32>
  %s = memref.get_global @seqlens : memref<2xi32>
  %dt = memref.cast %t : memref<8xi32> to memref<?xi32>
  %ds = memref.cast %s : memref<2xi32> to memref<?xi32>
  func.call @run_decode_test(%batch, %seqlen_q, %heads, %kv_heads, %page_size, %num_pages, %max_pages,
                             %causal, %dt, %ds)
    : (i32, i32, i32, i32, i32, i32, i32, i1, memref<?xi32>, memref<?xi32>) -> ()
  return
}
