// fakv-assign-layouts: tiles the GPU lowering cannot hold are errors that
// name the op (issue 10: a 4096x4096 tile once compiled for ~30 s).
// RUN: fakv-opt %s --fakv-assign-layouts --split-input-file -verify-diagnostics

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
