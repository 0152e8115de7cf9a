// fakv-assign-layouts: tiles the GPU lowering cannot hold are errors that
// name the op (issue 10: a 4096x4096 tile once compiled for ~30 s).
// RUN: fakv-opt %s --fakv-assign-layouts --split-input-file -verify-diagnostics
// num-warps is whole warpgroups of a block: 0 and 36 wrote a fakvgpu.num_warps the verifier refused, 2^32 - 4
// looped forever (a warp count doubled past 2^31 wraps to 0).
// RUN: %not fakv-opt %s --split-input-file --fakv-assign-layouts=num-warps=0 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: %not fakv-opt %s --split-input-file --fakv-assign-layouts=num-warps=36 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: %not fakv-opt %s --split-input-file --fakv-assign-layouts=num-warps=4294967292 2>&1 \
// RUN:   | FileCheck %s --check-prefix=WARPS
// 12 and 28 got layouts over 16 and 32 warps (a layout's warps are bits of the warp id): with warp
// specialisation the rows of the warps past the consumer's were never computed, without it a late error.
// RUN: %not fakv-opt %s --split-input-file --fakv-assign-layouts=num-warps=12 2>&1 | FileCheck %s --check-prefix=WARPS
// RUN: %not fakv-opt %s --split-input-file --fakv-assign-layouts=num-warps=28 2>&1 | FileCheck %s --check-prefix=WARPS
// WARPS: error: num-warps must be 4, 8, 16 or 32 (whole warpgroups, a power of two: a layout's warps are bits of the warp id)

func.func @too_big_for_registers(%p: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  // expected-error @+1 {{the GPU lowering holds a tile in registers, at most 65536 elements (512 per thread of a warpgroup), got 'tensor<512x256xf32>'}}
  %x = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<f32> -> tensor<512x256xf32>
  fakv.store %x, %p[%i, %i] strides [%s, %s] : tensor<512x256xf32>, !fakv.ptr<f32>
  return
}

// -----

func.func @not_a_power_of_two(%p: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  // expected-error @+1 {{the GPU lowering needs tiles whose dimensions are powers of two, got 'tensor<48xf32>'}}
  %x = fakv.load %p[%i] strides [%s] : !fakv.ptr<f32> -> tensor<48xf32>
  fakv.store %x, %p[%i] strides [%s] : tensor<48xf32>, !fakv.ptr<f32>
  return
}

// -----

// A reduction to a 0-d tile once sent the layout reader into an endless
// loop (out of memory).
func.func @zero_d_tile(%p: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %x = fakv.load %p[%i] strides [%s] : !fakv.ptr<f32> -> tensor<128xf32>
  // expected-error @+1 {{the GPU lowering has no 0-d tiles (a reduction of every dimension); keep a dimension of 1, e.g. fl.sum(x[None, :], 1)}}
  %t = fakv.reduce sum %x, 0 : tensor<128xf32> -> tensor<f32>
  %y = fakv.expand_dims %t, 0 : tensor<f32> -> tensor<1xf32>
  fakv.store %y, %p[%i] strides [%s] : tensor<1xf32>, !fakv.ptr<f32>
  return
}

// -----

// A paged load feeding a dot's B is loaded into shared memory, which only
// dots read: another use is refused (a store of it crashed the lowering;
// math on it or a loop carrying it failed later with internal messages).
func.func @paged_tile_also_stored(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>,
                                  %o: !fakv.ptr<f32>, %n: i32, %np: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %ps = arith.constant 64 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16>
  %a = arith.constant dense<0.0> : tensor<16x32xf32>
  // expected-error @+1 {{'fakv.paged_load' op feeds a dot's B operand, so it is loaded into shared memory, where only dots read it; its use by 'fakv.store' is not supported on the GPU (load the tile a second time for it)}}
  %k = fakv.paged_load %kc[%c0, %c0] table %bt valid %n page_size %ps num_pages %np
         strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16>
  // expected-note @+1 {{used here}}
  fakv.store %k, %q[%c0, %c0] strides [%s64, %s1] : tensor<32x64xbf16>, !fakv.ptr<bf16>
  %s = fakv.dot %qt, %k, %a {transpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xf32>
  fakv.store %s, %o[%c0, %c0] strides [%s64, %s1] : tensor<16x32xf32>, !fakv.ptr<f32>
  return
}

// -----

// A dot's operand in shared memory must fit its layout (16-bit, whole 64-column panels): a V of head dim 32 was
// laid out there anyway, and fakv-pipeline built a ring the verifier refuses, or the gather wrote past its slot.
func.func @dot_operand_of_32_columns(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %zero = arith.constant 0.0 : f32
  %a = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %b = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x32xbf16>
  %acc = fakv.splat %zero : f32 -> tensor<64x32xf32>
  // expected-error @+1 {{'fakv.dot' op needs its 'tensor<64x32xbf16>' in shared memory, as a dot's operand: a #fakvgpu.shared tile is 2-D, of 16-bit elements, its columns whole 64-column panels and at most 2^20 elements in all}}
  %d = fakv.dot %a, %b, %acc : tensor<64x64xbf16>, tensor<64x32xbf16> -> tensor<64x32xf32>
  fakv.store %d, %o[%i, %i] strides [%s, %s] : tensor<64x32xf32>, !fakv.ptr<f32>
  return
}

// -----

// An unswapped dot of more than 256 columns is one wgmma chain the lowering cannot issue: refused here, with its
// shape (it failed in the dot's conversion, followed by "failed to legalize").
func.func @dot_of_512_columns(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %a = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %b = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x512xbf16>
  %zero = arith.constant 0.0 : f32
  %acc = fakv.splat %zero : f32 -> tensor<64x512xf32>
  // expected-error @+1 {{'fakv.dot' op the GPU lowering (wgmma) handles N <= 256 columns, got 'tensor<64x512xf32>' (wider: several dots over 256-column parts of B, or @fakv.jit(swap_ab=True) with fewer than 64 rows)}}
  %d = fakv.dot %a, %b, %acc : tensor<64x64xbf16>, tensor<64x512xbf16> -> tensor<64x512xf32>
  fakv.store %d, %o[%i, %i] strides [%s, %s] : tensor<64x512xf32>, !fakv.ptr<f32>
  return
}

// -----

// Element types NVPTX selects nothing for (LLVM aborted in instruction
// selection: "Cannot select", a review's fuzz of fakv-opt).
func.func @f80_elements(%p: !fakv.ptr<f80>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{the GPU lowering holds integers of up to 64 bits and f16, bf16, f32 or f64 values, got 'tensor<64xf80>'}}
  %x = fakv.load %p[%c0] strides [%s1] bounds [%n] : !fakv.ptr<f80> -> tensor<64xf80>
  fakv.store %x, %p[%c0] strides [%s1] : tensor<64xf80>, !fakv.ptr<f80>
  return
}

// -----

// 2^32 x 2^32 elements: their count wrapped to 0 in int64 and passed.
func.func @count_past_int64(%o: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  // expected-error @+1 {{at most 65536 elements (512 per thread of a warpgroup), got 'tensor<4294967296x4294967296xf32>'}}
  %t = arith.constant dense<1.0> : tensor<4294967296x4294967296xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %t) -> (tensor<4294967296x4294967296xf32>) : i32 {
    %b = arith.addf %a, %a : tensor<4294967296x4294967296xf32>
    scf.yield %b : tensor<4294967296x4294967296xf32>
  }
  return
}

// -----

// A call's tile result took a layout its callee's type did not (invalid IR
// out of the pass); the DSL inlines its helpers.
func.func @helper(%f: f32) -> tensor<64xf32> {
  %t = fakv.splat %f : f32 -> tensor<64xf32>
  return %t : tensor<64xf32>
}
func.func @calls(%o: !fakv.ptr<f32>, %f: f32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'func.call' op calls @helper: a kernel calls no function on the GPU (inline it)}}
  %t = func.call @helper(%f) : (f32) -> tensor<64xf32>
  fakv.store %t, %o[%c0] strides [%s1] : tensor<64xf32>, !fakv.ptr<f32>
  return
}

// -----

// Ops of other dialects (affine, tensor, ub: an unexplained "failed to
// legalize" or invalid IR later) are named here.
func.func @affine_loop(%pi: !fakv.ptr<i32>) attributes {fakv.kernel} {
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'affine.for' op is not supported by the GPU lowering (a kernel's ops are fakv, arith, math, scf and func ones)}}
  affine.for %iv = 0 to 4 {
    %ivi = arith.index_cast %iv : index to i32
    %t = fakv.splat %ivi : i32 -> tensor<64xi32>
    fakv.store %t, %pi[%ivi] strides [%s1] : tensor<64xi32>, !fakv.ptr<i32>
  }
  return
}

// -----

func.func @tensor_slice(%p: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %x = fakv.load %p[%i] strides [%s] : !fakv.ptr<f32> -> tensor<128xf32>
  // expected-error @+1 {{'tensor.extract_slice' op is not supported by the GPU lowering}}
  %y = tensor.extract_slice %x[0] [64] [1] : tensor<128xf32> to tensor<64xf32>
  fakv.store %y, %p[%i] strides [%s] : tensor<64xf32>, !fakv.ptr<f32>
  return
}

// -----

// Layouts are tied through scf.for and scf.if; an scf.while carrying a tile got one layout on its operand and
// another on its block argument (invalid IR out of the pass).
func.func @tile_through_while(%o: !fakv.ptr<f32>, %n: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %t = fakv.load %o[%c0, %c0] strides [%s1, %s1] : !fakv.ptr<f32> -> tensor<16x64xf32>
  %r0 = fakv.reduce sum %t, 1 : tensor<16x64xf32> -> tensor<16xf32>
  // expected-error @+1 {{'scf.while' op carries tiles, which the GPU lowering does through scf.for and scf.if only}}
  %r = scf.while (%x = %r0) : (tensor<16xf32>) -> tensor<16xf32> {
    %c = arith.cmpi slt, %c0, %n : i32
    scf.condition(%c) %x : tensor<16xf32>
  } do {
  ^bb0(%x: tensor<16xf32>):
    %x2 = arith.addf %x, %x : tensor<16xf32>
    scf.yield %x2 : tensor<16xf32>
  }
  fakv.store %r, %o[%c0] strides [%s1] : tensor<16xf32>, !fakv.ptr<f32>
  return
}

// -----

// A composite op before fakv-decompose: its results, which share a type, got different layouts.
func.func @undecomposed(%o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %z = arith.constant 0.0 : f32
  %s = fakv.splat %z : f32 -> tensor<16x64xf32>
  %m0 = fakv.splat %z : f32 -> tensor<16xf32>
  // expected-error @+1 {{'fakv.online_softmax' op is decomposed before layouts are assigned: run fakv-decompose before fakv-assign-layouts}}
  %m1, %l1, %p, %a = fakv.online_softmax %s, %m0, %m0 : tensor<16x64xf32>, tensor<16xf32>
  %r = fakv.reduce max %s, 1 : tensor<16x64xf32> -> tensor<16xf32>
  %x = arith.addf %m1, %r : tensor<16xf32>
  fakv.store %x, %o[%c0] strides [%s1] : tensor<16xf32>, !fakv.ptr<f32>
  return
}

// -----

// An index tile: neither an integer nor a float the GPU lowering holds.
func.func @index_tile(%o: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel} {
  %i = arith.index_cast %n : i32 to index
  // expected-error @+1 {{'fakv.splat' op the GPU lowering holds tiles of integers or floats, got 'tensor<64xindex>'}}
  %t = fakv.splat %i : index -> tensor<64xindex>
  return
}

// -----

func.func @f32_dot(%p: !fakv.ptr<f32>, %o: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %a = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<f32> -> tensor<64x64xf32>
  %b = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<f32> -> tensor<64x64xf32>
  %z = arith.constant 0.0 : f32
  %acc = fakv.splat %z : f32 -> tensor<64x64xf32>
  // expected-error @+1 {{'fakv.dot' op the GPU lowering (wgmma) needs f16 or bf16 operands, got 'f32'}}
  %d = fakv.dot %a, %b, %acc : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
  fakv.store %d, %o[%i, %i] strides [%s, %s] : tensor<64x64xf32>, !fakv.ptr<f32>
  return
}

// -----

func.func @dot_of_128_rows(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %a = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<128x64xbf16>
  %b = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %z = arith.constant 0.0 : f32
  %acc = fakv.splat %z : f32 -> tensor<128x64xf32>
  // expected-error @+1 {{'fakv.dot' op the GPU lowering handles M <= 64 rows (one warpgroup's wgmma), got M = 128}}
  %d = fakv.dot %a, %b, %acc : tensor<128x64xbf16>, tensor<64x64xbf16> -> tensor<128x64xf32>
  fakv.store %d, %o[%i, %i] strides [%s, %s] : tensor<128x64xf32>, !fakv.ptr<f32>
  return
}

// -----

func.func @dot_transposed_a(%p: !fakv.ptr<bf16>, %o: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %a = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %b = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<64x64xbf16>
  %z = arith.constant 0.0 : f32
  %acc = fakv.splat %z : f32 -> tensor<64x64xf32>
  // expected-error @+1 {{'fakv.dot' op the GPU lowering takes no transposed A (one warpgroup's wgmma)}}
  %d = fakv.dot %a, %b, %acc {transpose_a} : tensor<64x64xbf16>, tensor<64x64xbf16> -> tensor<64x64xf32>
  fakv.store %d, %o[%i, %i] strides [%s, %s] : tensor<64x64xf32>, !fakv.ptr<f32>
  return
}

// -----

func.func @rotary(%p: !fakv.ptr<bf16>, %c: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %x = fakv.load %p[%i, %i] strides [%s, %s] : !fakv.ptr<bf16> -> tensor<16x64xbf16>
  %cos = fakv.load %c[%i, %i] strides [%s, %s] : !fakv.ptr<f32> -> tensor<16x32xf32>
  // expected-error @+1 {{'fakv.rotary' op is not supported by the GPU lowering yet}}
  %r = fakv.rotary %x, %cos, %cos : tensor<16x64xbf16>, tensor<16x32xf32>
  fakv.store %r, %p[%i, %i] strides [%s, %s] : tensor<16x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

// A reference to a function (func.constant), not a call: refused as a call is.
func.func @host(%f: f32) -> f32 {
  return %f : f32
}
func.func @takes_an_address(%o: !fakv.ptr<f32>, %f: f32) attributes {fakv.kernel} {
  // expected-error @+1 {{'func.constant' op refers to @host: a kernel calls no function on the GPU (inline it)}}
  %h = func.constant @host : (f32) -> f32
  return
}
