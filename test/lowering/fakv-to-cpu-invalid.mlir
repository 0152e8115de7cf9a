// The CPU pipeline refuses a kernel in a nested module with a diagnostic (it built calls to a check function
// the nested module cannot see, and the verifier refused the pass's own output).
// RUN: fakv-opt %s --fakv-to-llvm-cpu -verify-diagnostics -o /dev/null -split-input-file
// So are a call to a kernel or another reference to it (the pass gives kernels their program-id arguments: the
// call no longer matched), tiles with GPU layouts (IR after fakv-assign-layouts: "failed to legalize unresolved
// materialization"), and what the lowering has no rewrite for (fakvgpu ops, f8 values), which it left in its
// output (exit 0; mlir-translate refused it).

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

func.func @k(%o: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  %z = arith.constant 1.0 : f32
  %t = fakv.splat %z : f32 -> tensor<4xf32>
  fakv.store %t, %o[%c0] strides [%s1] : tensor<4xf32>, !fakv.ptr<f32>
  return
}
func.func @host(%buf: memref<4xf32>) {
  %p = fakv.ptr_of %buf : memref<4xf32> -> !fakv.ptr<f32>
  // expected-error @+1 {{'func.call' op calls kernel @k: a kernel is launched over its programs (fakv.launch), not called}}
  func.call @k(%p) : (!fakv.ptr<f32>) -> ()
  return
}

// -----

#blocked = #fakvgpu.linear<regs = [], lanes = [[1], [2], [4], [8], [16]], warps = [[32], [64]]>
func.func @laid_out(%o: !fakv.ptr<f32>, %x: f32) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'fakv.splat' op has a GPU layout ('tensor<128xf32, #fakvgpu.linear<regs = [], lanes = [[1], [2], [4], [8], [16]], warps = [[32], [64]]>>'): the CPU path takes fakv IR from before fakv-assign-layouts}}
  %t = fakv.splat %x : f32 -> tensor<128xf32, #blocked>
  fakv.store %t, %o[%c0] strides [%s1] : tensor<128xf32, #blocked>, !fakv.ptr<f32>
  return
}

// -----

func.func @k(%p: !fakv.ptr<f32>) attributes {fakv.kernel} {
  return
}
func.func @host() -> ((!fakv.ptr<f32>) -> ()) {
  // expected-error @+1 {{'func.constant' op refers to kernel @k: a kernel is launched over its programs (fakv.launch), not called}}
  %f = func.constant @k : (!fakv.ptr<f32>) -> ()
  return %f : (!fakv.ptr<f32>) -> ()
}

// -----

func.func @f8(%x: f32, %out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  %s1 = arith.constant 1 : i64
  // expected-error @+1 {{'arith.truncf' op the CPU path holds integers of up to 64 bits and f16, bf16, f32 or f64 values, got 'f8E4M3FN'}}
  %t = arith.truncf %x : f32 to f8E4M3FN
  %f = arith.extf %t : f8E4M3FN to f32
  %o = fakv.splat %f : f32 -> tensor<1xf32>
  fakv.store %o, %out[%c0] strides [%s1] : tensor<1xf32>, !fakv.ptr<f32>
  return
}

// -----

func.func @gpu_level(%out: !fakv.ptr<f32>) attributes {fakv.kernel} {
  %c0 = arith.constant 0 : i32
  // expected-error @+1 {{'fakvgpu.alloc_barriers' op is GPU-level IR: the CPU path takes fakv IR from before fakv-to-fakvgpu}}
  %b = fakvgpu.alloc_barriers arrivals 1 : !fakvgpu.barriers<2>
  fakvgpu.wait %b[%c0], %c0 : !fakvgpu.barriers<2>
  return
}

// -----

// The CPU path's own symbols' names (@fakv_cpu_fault, @fakv_cpu_in_extents, @fakv_cpu_extents): a kernel of one
// was a redefinition of the symbol, or (@fakv_cpu_extents) read as "guarded already" and left unguarded.
// expected-error @+1 {{'func.func' op is named like the CPU path's own symbols (@fakv_cpu_...); rename it}}
func.func @fakv_cpu_extents(%a: !fakv.ptr<i32>, %n: i32) attributes {fakv.kernel} {
  %v = fakv.load_scalar %a[%n] : !fakv.ptr<i32> -> i32
  return
}

// -----

// A tensor of a dynamic shape: the rewrites' dense constants of its type were IR that did not parse back.
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xi32> {
  // expected-error @+1 {{'arith.fptosi' op has a result of a dynamic shape ('tensor<?xi32>'): the CPU path takes tiles of static shapes}}
  %r = arith.fptosi %a : tensor<?xf32> to tensor<?xi32>
  return %r : tensor<?xi32>
}

// -----

// A function value of a function with fakv types: the pass changes that function's signature, and the
// func.constant kept the old type ("reference to function with mismatched type"; a session 54 fuzz).
func.func @k(%p: !fakv.ptr<f32>) {
  return
}
func.func @host() -> ((!fakv.ptr<f32>) -> ()) {
  // expected-error @+1 {{'func.constant' op refers to a function of fakv types}}
  %f = constant @k : (!fakv.ptr<f32>) -> ()
  return %f : (!fakv.ptr<f32>) -> ()
}
