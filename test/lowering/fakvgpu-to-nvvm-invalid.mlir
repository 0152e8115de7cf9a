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
  // expected-error @+1 {{the result's layout must hold each register's element where the source's does (the source's layout, reshaped); its regs basis #0 differs}}
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

// -----

// A reduction of a tile without a layout: fakvgpu-plan-shared-memory, the first to read layouts, crashed.
func.func @reduce_no_layout(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'fakv.load' op has a tile without a register layout ('tensor<16x64xf32>'): run fakv-assign-layouts first}}
  %t = fakv.load %p[%c0, %c0] strides [%s1, %s1] : !fakv.ptr<f32> -> tensor<16x64xf32>
  %r = fakv.reduce sum %t, 1 : tensor<16x64xf32> -> tensor<16xf32>
  return
}

// -----

// A dot whose accumulator is not in wgmma's layout (its registers were looked up where it has none: a crash).
#blk = #fakvgpu.linear<regs = [[0, 1], [0, 2]], lanes = [[0, 4], [0, 8], [0, 16], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#b = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [16, 0]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#shared = #fakvgpu.shared<swizzle = 128>
func.func @dot_accumulator(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %q = fakv.load %p[%c0, %c0] strides [%s1, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #a>
  %k = fakv.load %p[%c0, %c0] strides [%s1, %s1] : !fakv.ptr<bf16> -> tensor<32x64xbf16, #b>
  %acc = fakv.load %o[%c0, %c0] strides [%s1, %s1] : !fakv.ptr<f32> -> tensor<16x32xf32, #blk>
  %qs = fakvgpu.convert_layout %q : tensor<16x64xbf16, #a> -> tensor<16x64xbf16, #shared>
  %ks = fakvgpu.convert_layout %k : tensor<32x64xbf16, #b> -> tensor<32x64xbf16, #shared>
  // expected-error @+1 {{'fakv.dot' op the accumulator and result must be in the wgmma layout (fakv-assign-layouts gives it)}}
  %s = fakv.dot %qs, %ks, %acc {transpose_b} : tensor<16x64xbf16, #shared>, tensor<32x64xbf16, #shared> -> tensor<16x32xf32, #blk>
  fakv.store %s, %o[%c0, %c0] strides [%s1, %s1] : tensor<16x32xf32, #blk>, !fakv.ptr<f32>
  return
}

// -----

// A reduction whose result layout is not its source's slice (registers no source element reaches: a crash).
#s = #fakvgpu.linear<regs = [[0, 1], [8, 0]], lanes = [[0, 2], [0, 4], [0, 8], [0, 16], [1, 0]], warps = [[2, 0], [4, 0]]>
#d = #fakvgpu.linear<regs = [[1], [2], [4], [8]], lanes = [[0], [0], [0], [0], [0]], warps = [[0], [0]]>
func.func @reduce_result(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %x = fakv.load %p[%c0, %c0] strides [%s1, %s1] : !fakv.ptr<f32> -> tensor<16x32xf32, #s>
  // expected-error @+1 {{'fakv.reduce' op result layout is not the source's slice (fakv-assign-layouts gives it)}}
  %r = fakv.reduce sum %x, 1 : tensor<16x32xf32, #s> -> tensor<16xf32, #d>
  fakv.store %r, %p[%c0] strides [%s1] : tensor<16xf32, #d>, !fakv.ptr<f32>
  return
}

// -----

// A layout over more warps than the kernel has: rows 8-15 were never stored.
#l8 = #fakvgpu.linear<regs = [[0, 1]], lanes = [[0, 2], [0, 4], [0, 8], [0, 16], [1, 0]], warps = [[2, 0], [4, 0], [8, 0]]>
func.func @too_many_warps(%o: !fakv.ptr<f32>, %f: f32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'fakv.splat' op has a tile laid out over 8 warps}}
  %x = fakv.splat %f : f32 -> tensor<16x32xf32, #l8>
  fakv.store %x, %o[%c0, %c0] strides [%s1, %s1] : tensor<16x32xf32, #l8>, !fakv.ptr<f32>
  return
}

// -----

// A kernel in a nested module (the passes take the module's own functions): refused, not reached unprepared.
module {
  module @inner {
    // expected-error @+1 {{a fakv kernel must be a function of the module the passes run on, not of a nested 'builtin.module'}}
    func.func @k(%o: !fakv.ptr<f32>, %x: f32) attributes {fakv.kernel} {
      %c0 = arith.constant 0 : i32
      %s1 = arith.constant 1 : i64
      %t = fakv.splat %x : f32 -> tensor<128xf32>
      fakv.store %t, %o[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
      return
    }
  }
}

// -----

// fakvgpu IR written by hand skips fakv-assign-layouts' checks: an f80 tile aborted LLVM in NVPTX's instruction
// selection ("unsupported library call operation").
#f80 = #fakvgpu.linear<regs = [[1], [2]], lanes = [[4], [8], [16], [32], [0]], warps = [[0], [0]]>
func.func @f80_tile(%p: !fakv.ptr<f80>, %q: !fakv.ptr<f80>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'fakv.load' op the GPU lowering holds integers of up to 64 bits and f16, bf16, f32 or f64 values, got 'tensor<64xf80}}
  %t = fakv.load %p[%c0] strides [%s1] : !fakv.ptr<f80> -> tensor<64xf80, #f80>
  fakv.store %t, %q[%c0] strides [%s1] : tensor<64xf80, #f80>, !fakv.ptr<f80>
  return
}

// -----

// A layout every element of a 128x128 tile in each thread's registers (16384 a thread): 82 s and 14 GB to lower.
#all = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [0, 64], [1, 0], [2, 0], [4, 0], [8, 0], [16, 0], [32, 0], [64, 0]], lanes = [[0, 0], [0, 0], [0, 0], [0, 0], [0, 0]], warps = [[0, 0], [0, 0]]>
func.func @registers(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %sn = arith.constant 128 : i64
  // expected-error @+1 {{'fakv.load' op has a tile of 16384 registers a thread}}
  %t = fakv.load %p[%c0, %c0] strides [%sn, %s1] : !fakv.ptr<f32> -> tensor<128x128xf32, #all>
  fakv.store %t, %p[%c0, %c0] strides [%sn, %s1] : tensor<128x128xf32, #all>, !fakv.ptr<f32>
  return
}

// -----

// A kernel taking a function's address: the host function it names was erased (or a kernel it names outlined
// beside it), and the reference failed the verifier after the lowering.
func.func @host() {
  return
}
func.func @takes_an_address() attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  // expected-error @+1 {{'func.constant' op refers to @host: a kernel calls no function on the GPU (inline it)}}
  %f = func.constant @host : () -> ()
  func.call_indirect %f() : () -> ()
  return
}

// -----

// fakv ops outside the module's kernels (a nested module's function, an llvm.func) had no layouts checked and
// their lowerings read a null layout: a crash (a session 54 fuzz). Refused.
module {
  module {
    func.func @nested() -> tensor<64xi32> {
      // expected-error @+1 {{'fakv.arange' op is outside the module's kernels}}
      %0 = fakv.arange 0 to 64 : tensor<64xi32>
      return %0 : tensor<64xi32>
    }
  }
}

// -----

llvm.func @in_llvm_func() {
  // expected-error @+1 {{'fakv.arange' op is outside the module's kernels}}
  %0 = fakv.arange 0 to 64 : tensor<64xi32>
  llvm.return
}

// -----

// A dot's B in registers (fakv-assign-layouts puts it in shared memory: wgmma reads B from there only).
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#b = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [16, 0]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#acc = #fakvgpu.linear<regs = [[0, 1], [8, 0], [0, 8], [0, 16]], lanes = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warps = [[0, 0], [0, 0]]>
#shared = #fakvgpu.shared<swizzle = 128>
func.func @dot_b_in_registers(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %z = arith.constant 0.0 : f32
  %q = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #a>
  %k = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<32x64xbf16, #b>
  %acc = fakv.splat %z : f32 -> tensor<16x32xf32, #acc>
  %qs = fakvgpu.convert_layout %q : tensor<16x64xbf16, #a> -> tensor<16x64xbf16, #shared>
  // expected-error @+1 {{'fakv.dot' op B must be in shared memory}}
  %s = fakv.dot %qs, %k, %acc {transpose_b} : tensor<16x64xbf16, #shared>, tensor<32x64xbf16, #b> -> tensor<16x32xf32, #acc>
  fakv.store %s, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x32xf32, #acc>, !fakv.ptr<f32>
  return
}

// -----

// N = 4: wgmma's N is a multiple of 8 (K-major B of 4 rows: a valid #fakvgpu.shared tile).
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#b = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[0, 0], [0, 0]]>
#acc = #fakvgpu.linear<regs = [[0, 1], [8, 0]], lanes = [[0, 2], [0, 0], [1, 0], [2, 0], [4, 0]], warps = [[0, 0], [0, 0]]>
#shared = #fakvgpu.shared<swizzle = 128>
func.func @dot_n_of_4(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %z = arith.constant 0.0 : f32
  %q = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #a>
  %k = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<4x64xbf16, #b>
  %acc = fakv.splat %z : f32 -> tensor<16x4xf32, #acc>
  %qs = fakvgpu.convert_layout %q : tensor<16x64xbf16, #a> -> tensor<16x64xbf16, #shared>
  %ks = fakvgpu.convert_layout %k : tensor<4x64xbf16, #b> -> tensor<4x64xbf16, #shared>
  // expected-error @+1 {{'fakv.dot' op wgmma needs N a multiple of 8 up to 256 and K a multiple of 16, got N = 4, K = 64}}
  %s = fakv.dot %qs, %ks, %acc {transpose_b} : tensor<16x64xbf16, #shared>, tensor<4x64xbf16, #shared> -> tensor<16x4xf32, #acc>
  fakv.store %s, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x4xf32, #acc>, !fakv.ptr<f32>
  return
}

// -----

// A in registers in another layout than wgmma's accumulator layout (the one wgmma reads A's registers in).
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#b = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [16, 0]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#acc = #fakvgpu.linear<regs = [[0, 1], [8, 0], [0, 8], [0, 16]], lanes = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], warps = [[0, 0], [0, 0]]>
#shared = #fakvgpu.shared<swizzle = 128>
func.func @dot_a_in_other_registers(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %z = arith.constant 0.0 : f32
  %q = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #a>
  %k = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<32x64xbf16, #b>
  %acc = fakv.splat %z : f32 -> tensor<16x32xf32, #acc>
  %ks = fakvgpu.convert_layout %k : tensor<32x64xbf16, #b> -> tensor<32x64xbf16, #shared>
  // expected-error @+1 {{'fakv.dot' op A in registers must be in the wgmma layout}}
  %s = fakv.dot %q, %ks, %acc {transpose_b} : tensor<16x64xbf16, #a>, tensor<32x64xbf16, #shared> -> tensor<16x32xf32, #acc>
  fakv.store %s, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x32xf32, #acc>, !fakv.ptr<f32>
  return
}

// -----

// A dot of fewer than 64 rows in the swapped layout (fakv.swap_ab) whose A is in registers: wgmma's B, which
// the swapped dot makes of it, is read from shared memory only.
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#b = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [16, 0], [32, 0]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#acc = #fakvgpu.linear<regs = [[1, 0], [0, 8], [8, 0]], lanes = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warps = [[0, 16], [0, 32]]>
#shared = #fakvgpu.shared<swizzle = 128>
func.func @swapped_a_in_registers(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.swap_ab, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %z = arith.constant 0.0 : f32
  %q = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #a>
  %k = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<64x64xbf16, #b>
  %acc = fakv.splat %z : f32 -> tensor<16x64xf32, #acc>
  %ks = fakvgpu.convert_layout %k : tensor<64x64xbf16, #b> -> tensor<64x64xbf16, #shared>
  // expected-error @+1 {{'fakv.dot' op A of a swapped dot must be in shared memory}}
  %s = fakv.dot %q, %ks, %acc {transpose_b} : tensor<16x64xbf16, #a>, tensor<64x64xbf16, #shared> -> tensor<16x64xf32, #acc>
  fakv.store %s, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x64xf32, #acc>, !fakv.ptr<f32>
  return
}

// -----

// The swapped dot's A (wgmma's B, N = 16 rows) stored with 64 rows (no 'fakvgpu.stored_rows' on its convert_layout).
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#b = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [16, 0], [32, 0]], lanes = [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], warps = [[4, 0], [8, 0]]>
#acc = #fakvgpu.linear<regs = [[1, 0], [0, 8], [8, 0]], lanes = [[2, 0], [4, 0], [0, 1], [0, 2], [0, 4]], warps = [[0, 16], [0, 32]]>
#shared = #fakvgpu.shared<swizzle = 128>
func.func @swapped_a_rows(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>) attributes {fakv.kernel, fakv.swap_ab, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %z = arith.constant 0.0 : f32
  %q = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16, #a>
  %k = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<64x64xbf16, #b>
  %acc = fakv.splat %z : f32 -> tensor<16x64xf32, #acc>
  %qs = fakvgpu.convert_layout %q : tensor<16x64xbf16, #a> -> tensor<16x64xbf16, #shared>
  %ks = fakvgpu.convert_layout %k : tensor<64x64xbf16, #b> -> tensor<64x64xbf16, #shared>
  // expected-error @+1 {{'fakv.dot' op A of a swapped dot must be stored with 16 rows ('fakvgpu.stored_rows' of its shared tile), got 64}}
  %s = fakv.dot %qs, %ks, %acc {transpose_b} : tensor<16x64xbf16, #shared>, tensor<64x64xbf16, #shared> -> tensor<16x64xf32, #acc>
  fakv.store %s, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x64xf32, #acc>, !fakv.ptr<f32>
  return
}

// -----

// A reshape whose result layout holds more registers a thread than its source's (a replicating register basis).
#a = #fakvgpu.linear<regs = [[0, 1], [0, 2]], lanes = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], warps = [[8, 0], [0, 0]]>
#c = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 0]], lanes = [[0, 4], [0, 8], [1, 0], [2, 0], [4, 0]], warps = [[8, 0], [0, 0]]>
func.func @reshape_register_count(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s16 = arith.constant 16 : i64
  %t = fakv.load %p[%c0, %c0] strides [%s16, %s1] : !fakv.ptr<f32> -> tensor<16x16xf32, #a>
  // expected-error @+1 {{'fakv.reshape' op layouts of source and result do not match register for register}}
  %u = fakv.reshape %t : tensor<16x16xf32, #a> -> tensor<16x16xf32, #c>
  fakv.store %u, %p[%c0, %c0] strides [%s16, %s1] : tensor<16x16xf32, #c>, !fakv.ptr<f32>
  return
}

// -----

// A broadcast whose result holds in a thread's registers rows its source holds in other lanes (the registers
// it would copy from are not there).
#col = #fakvgpu.linear<regs = [], lanes = [[1, 0], [2, 0], [4, 0], [8, 0], [0, 0]], warps = [[0, 0], [0, 0]]>
#rows = #fakvgpu.linear<regs = [[1, 0], [0, 1], [0, 2], [0, 4], [0, 8]], lanes = [[2, 0], [4, 0], [8, 0], [0, 0], [0, 0]], warps = [[0, 0], [0, 0]]>
func.func @broadcast_from_other_lanes(%p: !fakv.ptr<f32>) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s16 = arith.constant 16 : i64
  %t = fakv.load %p[%c0, %c0] strides [%s1, %s1] : !fakv.ptr<f32> -> tensor<16x1xf32, #col>
  // expected-error @+1 {{'fakv.broadcast' op source layout does not hold the elements the result's registers need}}
  %b = fakv.broadcast %t : tensor<16x1xf32, #col> -> tensor<16x16xf32, #rows>
  fakv.store %b, %p[%c0, %c0] strides [%s16, %s1] : tensor<16x16xf32, #rows>, !fakv.ptr<f32>
  return
}

// -----

// Laid-out IR written by hand skips fakv-assign-layouts' check of calls: the lowering's own check.
func.func @helper(%f: f32) -> f32 {
  return %f : f32
}
func.func @calls_after_layouts(%o: !fakv.ptr<f32>, %f: f32) attributes {fakv.kernel, fakvgpu.num_warps = 4 : i32} {
  // expected-error @+1 {{'func.call' op calls @helper: a kernel calls no function on the GPU (inline it)}}
  %g = func.call @helper(%f) : (f32) -> f32
  return
}
