// CPU execution of fakv.launch over a 3x2x2 grid: every program adds
// x + 10 y + 100 z + 1000 (nx + 10 ny + 100 nz) to the zeros at its linear
// index, so each program must run exactly once (twice would double it) with
// the right ids.
// Expected: reference.py (grid).
// RUN: cat %s %S/Inputs/harness.mlir | fakv-opt --fakv-to-llvm-cpu | %mlir-runner | %compare %S/Inputs/grid.expected

func.func @ids(%out: !fakv.ptr<f32>, %base: f32) attributes {fakv.kernel} {
  %x = fakv.program_id 0
  %y = fakv.program_id 1
  %z = fakv.program_id 2
  %nx = fakv.num_programs 0
  %ny = fakv.num_programs 1
  %nz = fakv.num_programs 2
  %c10 = arith.constant 10 : i32
  %c100 = arith.constant 100 : i32
  %c1000 = arith.constant 1000 : i32
  %y10 = arith.muli %y, %c10 : i32
  %z100 = arith.muli %z, %c100 : i32
  %ids = arith.addi %x, %y10 : i32
  %ids2 = arith.addi %ids, %z100 : i32
  %ny10 = arith.muli %ny, %c10 : i32
  %nz100 = arith.muli %nz, %c100 : i32
  %n = arith.addi %nx, %ny10 : i32
  %n2 = arith.addi %n, %nz100 : i32
  %n3 = arith.muli %n2, %c1000 : i32
  %v = arith.addi %ids2, %n3 : i32
  %vf = arith.sitofp %v : i32 to f32
  %vb = arith.addf %vf, %base : f32
  %t = fakv.splat %vb : f32 -> tensor<1xf32>
  // linear index (z * ny + y) * nx + x
  %zy = arith.muli %z, %ny : i32
  %zy2 = arith.addi %zy, %y : i32
  %lin = arith.muli %zy2, %nx : i32
  %lin2 = arith.addi %lin, %x : i32
  %s1 = arith.constant 1 : i64
  %old = fakv.load %out[%lin2] strides [%s1] : !fakv.ptr<f32> -> tensor<1xf32>
  %sum = arith.addf %old, %t : tensor<1xf32>
  fakv.store %sum, %out[%lin2] strides [%s1] : tensor<1xf32>, !fakv.ptr<f32>
  return
}

func.func @main() {
  %out = memref.alloc() : memref<12xf32>
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<12xf32>)
  %po = fakv.ptr_of %out : memref<12xf32> -> !fakv.ptr<f32>
  %gx = arith.constant 3 : i32
  %gy = arith.constant 2 : i32
  %gz = arith.constant 2 : i32
  %base = arith.constant 0.5 : f32
  fakv.launch @ids[%gx, %gy, %gz](%po, %base) : (!fakv.ptr<f32>, f32)
  %d = memref.cast %out : memref<12xf32> to memref<?xf32>
  func.call @print_f32(%d) : (memref<?xf32>) -> ()
  return
}
