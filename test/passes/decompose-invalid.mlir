// fakv-decompose runs before fakv-assign-layouts: a composite op on tiles with layouts is refused (its parts
// were built without them, and the verifier refused the mix: "requires the same encoding for all operands").
// RUN: fakv-opt %s --fakv-decompose -verify-diagnostics -o /dev/null

#blocked = #fakvgpu.linear<regs = [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [8, 0]], lanes = [[1, 0], [2, 0], [4, 0], [0, 0], [0, 0]], warps = [[0, 0], [0, 0], [0, 0]]>
func.func @laid_out(%s: tensor<16x64xf32, #blocked>, %cap: f32) -> tensor<16x64xf32, #blocked> {
  // expected-error @+1 {{'fakv.softcap' op has a GPU layout: fakv-decompose runs before fakv-assign-layouts}}
  %r = fakv.softcap %s, %cap : tensor<16x64xf32, #blocked>
  return %r : tensor<16x64xf32, #blocked>
}
