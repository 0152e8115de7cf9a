// fakv-compile on a function that carries a warp count but is no outlined kernel (no tensor-map or shared-memory
// facts): no kernel, said so (its launch facts read the missing attributes: a segfault).
// RUN: %not fakv-compile %s -o %t --format=isa 2>&1 | FileCheck %s
// CHECK: holds no kernel

llvm.func @f() attributes {fakvgpu.num_warps = 4 : i32} {
  llvm.return
}
