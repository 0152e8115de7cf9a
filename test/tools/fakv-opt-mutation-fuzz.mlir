// fakv-opt on random edits of valid IR (issue 10): every mutant compiles or
// gets a diagnostic; none crashes (signal, assertion, "PLEASE submit a bug
// report") or runs past 20 s. Bounded and seeded: mutation_fuzz.py says how.
// RUN: %python %S/mutation_fuzz.py --opt fakv-opt --cases 200 --seed 1 %kernels/decode.mlir %kernels/combine.mlir %S/../dialect/ops.mlir %S/../dialect/canonicalize.mlir %S/../passes/Inputs/attention.mlir %S/../passes/pack-gqa.mlir %S/../lowering/bad-data-to-ptx.mlir | FileCheck %s
// RUN: fakv-opt %kernels/decode.mlir --fakv-to-fakvgpu -o %t.decode.mlir
// RUN: fakv-opt %kernels/combine.mlir --fakv-to-fakvgpu -o %t.combine.mlir
// (the second run's inputs are fakvgpu IR: layouts in both, decode's ring too)
// RUN: grep -q fakvgpu.alloc_ring %t.decode.mlir && grep -q "#fakvgpu.linear" %t.combine.mlir
// RUN: %python %S/mutation_fuzz.py --opt fakv-opt --cases 100 --seed 2 --level fakvgpu %t.decode.mlir %t.combine.mlir | FileCheck %s
// CHECK: mutants: {{[1-9][0-9]*}} compiled, {{[1-9][0-9]*}} diagnosed, 0 crashed or hung
