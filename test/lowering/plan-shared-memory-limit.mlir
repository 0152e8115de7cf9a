// fakvgpu-plan-shared-memory: a kernel that needs more than an sm_90
// block's 227 KiB of shared memory (here a ring of 8 tiles of 64 x 256 bf16,
// 256 KiB) is an error at compile time, not a launch that fails on the GPU.
// RUN: %not fakv-opt %s --fakvgpu-plan-shared-memory 2>&1 | FileCheck %s
// CHECK: error: needs 263168 bytes of shared memory; a block has at most 232448 on sm_90 (fewer stages or smaller tiles)
#sh = #fakvgpu.shared<swizzle = 128>
func.func @too_big(%out: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %r = fakvgpu.alloc_ring : !fakvgpu.ring<8, tensor<64x256xbf16, #sh>>
  return
}
