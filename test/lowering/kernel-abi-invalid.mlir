// fakv-kernel-abi makes a lowered kernel's last arguments, its tensor maps (as many as 'fakvgpu.tma_args'
// names), by-value grid constants. A hand-written function whose last arguments are not pointers is refused:
// the attributes it got (llvm.byval, llvm.align on an i32) were refused by the verifier after the pass.
// RUN: fakv-opt %s --fakv-kernel-abi -split-input-file -verify-diagnostics -o /dev/null
// RUN: sed '/^\/\/ -----/,$d' %s | fakv-opt --fakv-kernel-abi | FileCheck %s

// CHECK-LABEL: llvm.func @maps
// CHECK-SAME: %{{.*}}: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}
llvm.func @maps(%a: !llvm.ptr, %m: !llvm.ptr) attributes {fakvgpu.tma_args = array<i32: 0>, fakvgpu.tma_boxes = array<i32: 64>, nvvm.kernel} {
  llvm.return
}

// -----

// expected-error @+1 {{'llvm.func' op 'fakvgpu.tma_args' names 1 tensor maps, the last arguments, which must be !llvm.ptr: argument #1 is 'i32'}}
llvm.func @not_a_pointer(%a: !llvm.ptr, %n: i32) attributes {fakvgpu.tma_args = array<i32: 0>, fakvgpu.tma_boxes = array<i32: 64>, nvvm.kernel} {
  llvm.return
}

// -----

// A function that is not a kernel got nvvm.grid_constant arguments, which the verifier refuses there (it did
// not look while NVVM was not loaded: the pass's output did not parse back).
// expected-error @+1 {{'llvm.func' op has 'fakvgpu.tma_args' but is not a kernel ('nvvm.kernel'): tensor maps are kernel parameters}}
llvm.func @not_a_kernel(%a: !llvm.ptr, %m: !llvm.ptr) attributes {fakvgpu.tma_args = array<i32: 0>, fakvgpu.tma_boxes = array<i32: 64>} {
  llvm.return
}
