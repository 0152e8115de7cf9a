// convert-fakvgpu-to-nvvm (through fakvgpu-to-llvm) refuses fakvgpu IR whose tiles have no place or whose
// registers would pass through to the wrong elements, with a diagnostic (each of these crashed, hung or was
// lowered to wrong code).
// RUN: fakv-opt %s -split-input-file -verify-diagnostics --fakvgpu-to-llvm

func.func @no_layout(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'fakv.load' op has a tile without a register layout ('tensor<64xf32>'): run fakv-assign-layouts first}}
  %t = fakv.load %p[%c0] strides [%s1] : !fakv.ptr<f32> -> tensor<64xf32>
  fakv.store %t, %p[%c0] strides [%s1] : tensor<64xf32>, !fakv.ptr<f32>
  return
}

// -----

#shared = #fakvgpu.shared<swizzle = 128>
func.func @load_into_shared(%p: !fakv.ptr<bf16>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  // expected-error @+1 {{'fakv.load' op makes a tile in shared memory ('tensor<64x64xbf16, #fakvgpu.shared<swizzle = 128>>'): only fakvgpu ops (ring_view, convert_layout) do}}
  %t = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<64x64xbf16, #shared>
  fakv.store %t, %p[%c0, %c0] strides [%s64, %s1] : tensor<64x64xbf16, #shared>, !fakv.ptr<bf16>
  return
}

// -----

// A 16 x 16 tile: #a holds element (i, j) where #b holds (j, i); a reshape to the same shape must keep them.
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2]], lanes = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], warps = [[8, 0], [0, 0]]>
#b = #fakvgpu.linear<regs = [[1, 0], [2, 0]], lanes = [[4, 0], [8, 0], [0, 1], [0, 2], [0, 4]], warps = [[0, 8], [0, 0]]>
func.func @reshape_moves_elements(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s16 = arith.constant 16 : i64
  %t = fakv.load %p[%c0, %c0] strides [%s16, %s1] : !fakv.ptr<f32> -> tensor<16x16xf32, #a>
  // expected-error @+2 {{the result's layout must hold each register's element where the source's does (the source's layout, reshaped); its regs basis #0 differs}}
  // expected-error @+1 {{failed to legalize operation 'fakv.reshape'}}
  %u = fakv.reshape %t : tensor<16x16xf32, #a> -> tensor<16x16xf32, #b>
  fakv.store %u, %p[%c0, %c0] strides [%s16, %s1] : tensor<16x16xf32, #b>, !fakv.ptr<f32>
  return
}

// -----

// A tile in shared memory read by an op other than a dot or a fakvgpu op (a
// store of a ring's tile crashed the lowering).
#sh = #fakvgpu.shared<swizzle = 128>
func.func @store_of_shared(%p: !fakv.ptr<bf16>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  %v = fakvgpu.ring_view %r[%c0] : !fakvgpu.ring<2, tensor<32x64xbf16, #sh>>
  // expected-error @+1 {{'fakv.store' op reads a tile in shared memory ('tensor<32x64xbf16, #fakvgpu.shared<swizzle = 128>>'): only fakv.dot and fakvgpu ops do}}
  fakv.store %v, %p[%c0, %c0] strides [%s64, %s1] : tensor<32x64xbf16, #sh>, !fakv.ptr<bf16>
  return
}
