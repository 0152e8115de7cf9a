// The CPU pipeline refuses a kernel in a nested module with a diagnostic (it built calls to a check function
// the nested module cannot see, and the verifier refused the pass's own output).
// RUN: fakv-opt %s --fakv-to-llvm-cpu -verify-diagnostics -o /dev/null

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
