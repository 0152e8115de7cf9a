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
