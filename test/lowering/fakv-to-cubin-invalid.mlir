// fakv-to-cubin on kernels the verifiers accept but the GPU lowering cannot
// take: a diagnostic that says why (these ended in "failed to legalize", a
// dangling call or a symbol clash).
// RUN: fakv-opt %s --fakv-to-cubin=format=isa -split-input-file -verify-diagnostics -o /dev/null

func.func @helper(%v: f32) -> f32 {
  %r = arith.mulf %v, %v : f32
  return %r : f32
}
func.func @calls_a_function(%o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %f = arith.constant 3.0 : f32
  // expected-error @+1 {{'func.call' op calls @helper: a kernel calls no function on the GPU (inline it)}}
  %g = func.call @helper(%f) : (f32) -> f32
  %t = fakv.splat %g : f32 -> tensor<128xf32>
  fakv.store %t, %o[%c0] strides [%s1] : tensor<128xf32>, !fakv.ptr<f32>
  return
}

// -----

func.func @several_values(%o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'arith.constant' op is a tile constant of several values: the GPU lowering takes splat tile constants only}}
  %t = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  fakv.store %t, %o[%c0] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  return
}

// -----

// expected-error @+1 {{'func.func' op is named like the kernels' shared memory (@fakv_smem); rename it}}
func.func @fakv_smem(%o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  return
}

// -----

// A K tile for a dot outside any loop (here a loop of one iteration, which
// canonicalize folds away): fakv-pipeline gives it no ring.
func.func @paged_tile_outside_a_loop(%q: !fakv.ptr<bf16>, %kc: !fakv.ptr<bf16> {fakv.divisibility = 16 : i64},
                                     %bt: !fakv.ptr<i32>, %o: !fakv.ptr<f32>, %n: i32, %np: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %ps = arith.constant 64 : i32
  %s1 = arith.constant 1 : i64
  %s32 = arith.constant 32 : i64
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  %zero = arith.constant 0.0 : f32
  %qt = fakv.load %q[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<bf16> -> tensor<16x64xbf16>
  %s0 = fakv.splat %zero : f32 -> tensor<16x32xf32>
  %acc = scf.for %i = %c0 to %c1 step %c1 iter_args(%a = %s0) -> (tensor<16x32xf32>) : i32 {
    // expected-error @+1 {{'fakv.paged_load' op feeds a dot from shared memory, which fakv-pipeline arranges only inside an scf.for}}
    %k = fakv.paged_load %kc[%c0, %i] table %bt valid %n page_size %ps num_pages %np
           strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16>
    %s = fakv.dot %qt, %k, %a {transpose_b} : tensor<16x64xbf16>, tensor<32x64xbf16> -> tensor<16x32xf32>
    scf.yield %s : tensor<16x32xf32>
  }
  fakv.store %acc, %o[%c0, %c0] strides [%s32, %s1] : tensor<16x32xf32>, !fakv.ptr<f32>
  return
}

// -----

// A kernel in a gpu.module or a nested module: the pipelines take the module's own functions (it reached the
// NVVM conversion without layouts and crashed).
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

// A kernel argument of a type the GPU holds no value of, unused (it reached NVPTX's printer, which trapped).
// expected-error @+1 {{'func.func' op the GPU lowering holds integers of up to 64 bits and f16, bf16, f32 or f64 values, got argument #0 of 'f80'}}
func.func @f80_argument(%x: f80, %p: !fakv.ptr<f32>) attributes {fakv.kernel} {
  return
}

// -----

// A module without a kernel (an empty gpu.binary, exit 0, and its host
// functions gone, before session 57).
// expected-error @+1 {{holds no kernel (no func.func with the fakv.kernel attribute): nothing to compile for the GPU}}
module {
  func.func @host(%a: i32) -> i32 {
    return %a : i32
  }
}

// -----

// A paged load that feeds no dot (a paged_load in registers): the GPU has it only as a dot's B, copied into
// shared memory by fakv-pipeline.
func.func @paged_load_to_a_store(%kc: !fakv.ptr<bf16>, %bt: !fakv.ptr<i32>, %o: !fakv.ptr<bf16>, %n: i32, %np: i32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %ps = arith.constant 64 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %sp = arith.constant 4096 : i64
  // expected-error @+1 {{'fakv.paged_load' op on the GPU is a dot's B operand (K or V) copied into shared memory by fakv-pipeline: use it as fakv.dot's B, in an scf.for that loads one tile per iteration, at rows iv * tile_rows}}
  %k = fakv.paged_load %kc[%c0, %c0] table %bt valid %n page_size %ps num_pages %np
         strides [%sp, %s64, %s64] : !fakv.ptr<bf16> -> tensor<32x64xbf16>
  fakv.store %k, %o[%c0, %c0] strides [%s64, %s1] : tensor<32x64xbf16>, !fakv.ptr<bf16>
  return
}

// -----

func.func @exp_of_f64(%p: !fakv.ptr<f64>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %x = fakv.load %p[%c0] strides [%s1] : !fakv.ptr<f64> -> tensor<128xf64>
  // expected-error @+1 {{'math.exp' op on the GPU takes f32, f16 or bf16 tiles}}
  %e = math.exp %x : tensor<128xf64>
  fakv.store %e, %p[%c0] strides [%s1] : tensor<128xf64>, !fakv.ptr<f64>
  return
}

// -----

func.func @reduce_of_f16(%p: !fakv.ptr<f16>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %s64 = arith.constant 64 : i64
  %x = fakv.load %p[%c0, %c0] strides [%s64, %s1] : !fakv.ptr<f16> -> tensor<16x64xf16>
  // expected-error @+1 {{'fakv.reduce' op on the GPU reduces f32 or i32 tiles}}
  %r = fakv.reduce max %x, 1 : tensor<16x64xf16> -> tensor<16xf16>
  fakv.store %r, %p[%c0] strides [%s1] : tensor<16xf16>, !fakv.ptr<f16>
  return
}
