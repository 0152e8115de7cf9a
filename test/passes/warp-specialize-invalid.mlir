// fakv-warp-specialize splits the loop fakv-pipeline made: an scf.if that carries the refill's attribute but is
// not a refill (no loop around it, no comparison, a kernel without layouts) is refused (it crashed).
// RUN: fakv-opt %s -verify-diagnostics --fakv-warp-specialize

func.func @k(%c: i1) attributes {fakv.kernel} {
  // expected-error @+1 {{'scf.if' op carries 'fakvgpu.pipeline_prefetch' but is not fakv-pipeline's refill (an scf.if on an arith.cmpi in the body of the pipelined scf.for, in a kernel with layouts)}}
  scf.if %c {
  } {fakvgpu.pipeline_prefetch}
  return
}
