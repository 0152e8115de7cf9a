// fakv-opt: a pipeline or pass option out of range is an error with a
// non-zero exit, checked before any work (issue 10: format=zip once exited
// 0, stages=100000 ran for minutes; an option given to fakv-to-llvm-cpu,
// which takes none, exited 1 with no message).
// RUN: %not fakv-opt %s --fakv-to-cubin=format=zip 2>&1 | FileCheck %s --check-prefix=FORMAT
// RUN: %not fakv-opt %s --fakv-to-cubin=chip=sm_80 2>&1 | FileCheck %s --check-prefix=CHIP
// RUN: %not fakv-opt %s --fakv-to-cubin=llvm-opt-level=7 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: %not fakv-opt %s "--fakv-to-cubin=stages=100000 format=isa" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: %not fakv-opt %s --fakv-pipeline=stages=0 2>&1 | FileCheck %s --check-prefix=STAGES0
// RUN: %not fakv-opt %s "--fakv-to-fakvgpu=producer-registers=13" 2>&1 | FileCheck %s --check-prefix=REGS
// RUN: %not fakv-opt %s --fakv-to-llvm-cpu=stages=3 2>&1 | FileCheck %s --check-prefix=CPU
// RUN: fakv-opt %s "--fakv-to-cubin=format=isa stages=3" | FileCheck %s --check-prefix=OK
// RUN: fakv-opt %s --fakv-to-fakvgpu=llvm-opt-level=3 -o /dev/null

// FORMAT: error: fakv-to-cubin: format must be isa (PTX), bin (cubin) or fatbin, got 'zip'
// CHIP: error: fakv-to-cubin: chip must be sm_90a (the kernels use wgmma and TMA), got 'sm_80'
// OPT: error: fakv-to-cubin: llvm-opt-level must be 0-3, got 7
// STAGES: error: stages must be in [1, 8] (each is a K/V buffer in shared memory), got 100000
// STAGES0: error: stages must be in [1, 8] (each is a K/V buffer in shared memory), got 0
// REGS: error: producer-registers must be 0 (none) or a multiple of 8 in [24, 256] (setmaxnreg), got 13
// CPU: fakv-to-llvm-cpu takes no options, got 'stages=3'
// OK: gpu.binary @fakv_kernels

func.func @copy(%p: !fakv.ptr<f32>, %i: i32, %s: i64) attributes {fakv.kernel} {
  %x = fakv.load %p[%i] strides [%s] : !fakv.ptr<f32> -> tensor<128xf32>
  fakv.store %x, %p[%i] strides [%s] : tensor<128xf32>, !fakv.ptr<f32>
  return
}
