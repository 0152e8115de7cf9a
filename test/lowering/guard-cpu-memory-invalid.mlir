// fakv-guard-cpu-memory guards the host accesses of the module's own functions with a call to its check
// (@fakv_cpu_in_extents, of an !llvm.ptr): an access through another address space, or in a nested module
// that cannot see the check, became a call the verifier refused (a session 54 fuzz). Both are refused.
// RUN: fakv-opt %s -split-input-file -verify-diagnostics --fakv-guard-cpu-memory

func.func @global_memory(%p: !llvm.ptr<1>) -> f32 {
  // expected-error @+1 {{'llvm.load' op accesses address space 1: fakv-guard-cpu-memory guards host memory}}
  %x = llvm.load %p : !llvm.ptr<1> -> f32
  return %x : f32
}

// -----

module {
  module {
    func.func @nested(%p: !llvm.ptr) -> f32 {
      // expected-error @+1 {{'llvm.load' op is inside a nested symbol table}}
      %x = llvm.load %p : !llvm.ptr -> f32
      return %x : f32
    }
  }
}
