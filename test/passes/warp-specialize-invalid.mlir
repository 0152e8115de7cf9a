// fakv-warp-specialize splits the loop fakv-pipeline made: an scf.if that carries the refill's attribute but is
// not a refill (no loop around it, no comparison, a kernel without layouts) is refused (it crashed).
// RUN: fakv-opt %s -verify-diagnostics --fakv-warp-specialize
// Register counts are set both or neither, the producer's no more than the consumer's (fakvgpu.warp_specialize's
// verifier; before, the pass made the op and the verifier refused it):
// RUN: not fakv-opt %s --fakv-warp-specialize=producer-registers=24 2>&1 | FileCheck %s --check-prefix=PAIR
// RUN: not fakv-opt %s "--fakv-warp-specialize=producer-registers=256 consumer-registers=240" 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PAIR
// PAIR: error: producer-registers and consumer-registers are both 0 (no setmaxnreg) or both set, the producer's no more than the consumer's

func.func @k(%c: i1) attributes {fakv.kernel} {
  // expected-error @+1 {{'scf.if' op carries 'fakvgpu.pipeline_prefetch' but is not fakv-pipeline's refill (an scf.if on an arith.cmpi in the body of the pipelined scf.for, in a kernel with layouts)}}
  scf.if %c {
  } {fakvgpu.pipeline_prefetch}
  return
}
