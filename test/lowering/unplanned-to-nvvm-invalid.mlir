// convert-fakvgpu-to-nvvm on its own (what fakvgpu-to-llvm runs after the preparing passes): a planned kernel
// whose shared-memory buffer has no placement (hand-edited) gets a diagnostic, not a crash.
// RUN: fakv-opt %s -split-input-file -verify-diagnostics --convert-fakvgpu-to-nvvm -o /dev/null

#shared = #fakvgpu.shared<swizzle = 128>
func.func @ring_without_a_placement(%first: i32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32, fakvgpu.smem_bytes = 9344 : i64, fakvgpu.tma_args = array<i32>, fakvgpu.tma_boxes = array<i32>} {
  %c0 = arith.constant 0 : i32
  // expected-error @+1 {{has no shared-memory placement ('fakvgpu.smem_offset'): run fakvgpu-plan-shared-memory first}}
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
  fakvgpu.clear_rows %r[%c0] from %first : !fakvgpu.ring<2, tensor<32x64xbf16, #shared>>
  return
}

// -----

// Before fakv-assign-layouts (no 'fakvgpu.num_warps'): the conversion reads layouts.
// expected-error @+1 {{has no layouts yet: run fakv-assign-layouts first}}
func.func @no_layouts(%o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  return
}

// -----

// A kernel the preparing passes of fakvgpu-to-llvm have not seen: named with the pass it needs.
// expected-error @+1 {{is not prepared for the conversion: run fakvgpu-plan-shared-memory first}}
func.func @unplanned(%o: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  return
}

// -----

// expected-error @+1 {{is not prepared for the conversion: run fakvgpu-tma-arguments first}}
func.func @no_tensor_map_arguments(%o: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32, fakvgpu.smem_bytes = 1024 : i64} {
  return
}

// -----

// expected-error @+1 {{is not prepared for the conversion: run fakvgpu-lower-warp-specialize first}}
func.func @roles_not_lowered(%o: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 8 : i32, fakvgpu.smem_bytes = 1024 : i64, fakvgpu.tma_args = array<i32>, fakvgpu.tma_boxes = array<i32>} {
  fakvgpu.warp_specialize producer_warps 4 consumer_warps 4 registers 0, 0 {
  }, {
  }
  return
}
