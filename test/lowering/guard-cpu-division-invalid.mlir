// fakv-guard-cpu-division refuses a division of dynamically shaped tensors: its guard's constants (dense
// splats of the operands' type) were IR that did not parse back ("elements literal type must have static shape").
// RUN: fakv-opt %s --fakv-guard-cpu-division -verify-diagnostics -o /dev/null

func.func @dynamic(%a: tensor<?xi32>, %b: tensor<?xi32>) -> tensor<?xi32> {
  // expected-error @+1 {{'arith.divsi' op divides tensors of a dynamic shape ('tensor<?xi32>'): the CPU path's tiles have static shapes}}
  %r = arith.divsi %a, %b : tensor<?xi32>
  return %r : tensor<?xi32>
}
