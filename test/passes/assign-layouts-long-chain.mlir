// fakv-assign-layouts on a chain of 20,000 adds from a load to a dot's
// accumulator: the dot's layout flows back along the whole chain to the
// load, with no conversion on the way. (Each step along the chain took a
// sweep over every op: 16,000 adds took 16 s; the flow now visits the ops
// that read a value given a layout since their last visit, in the same
// order, so the layouts are the ones the sweeps gave.)
// RUN: %python %S/Inputs/long_chain.py 20000 | fakv-opt --fakv-assign-layouts | FileCheck %s

// CHECK: #[[ACC:linear[0-9]*]] = #fakvgpu.linear<regs = {{\[\[0, 1\], \[8, 0\]}}
// CHECK: %[[A0:.*]] = fakv.load %arg1{{.*}} -> tensor<16x64xf32, #[[ACC]]>
// CHECK-NEXT: arith.addf %[[A0]], %[[A0]] : tensor<16x64xf32, #[[ACC]]>
// CHECK-NOT: fakvgpu.convert_layout {{.*}}xf32
// CHECK: fakv.dot {{.*}} -> tensor<16x64xf32, #[[ACC]]>
