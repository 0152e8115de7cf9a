// convert-fakvgpu-to-nvvm on its own (what fakvgpu-to-llvm runs after the preparing passes): a planned kernel
// whose shared-memory buffer has no placement (hand-edited) gets a diagnostic, not a crash.
// RUN: fakv-opt %s -verify-diagnostics --convert-fakvgpu-to-nvvm -o /dev/null

#shared = #fakvgpu.shared<swizzle = 128>
func.func @ring_without_a_placement(%first: i32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32, fakvgpu.smem_bytes = 9344 : i64, fakvgpu.tma_args = array<i32>, fakvgpu.tma_boxes = array<i32>} {
  %c0 = arith.constant 0 : i32
  // expected-error @+1 {{has no shared-memory placement ('fakvgpu.smem_offset'): run fakvgpu-plan-shared-memory first}}
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
  fakvgpu.clear_rows %r[%c0] from %first : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
  return
}
