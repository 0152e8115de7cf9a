//===- Passes.td - fakv lowerings (conversions) ------------*- tablegen -*-===//
//
// Every conversion out of the fakv dialect, named <Src>To<Dst>; the file that
// implements one carries its name, and so does its test folder.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_PASSES_TD
#define FAKV_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFakvToCPU : Pass<"convert-fakv-to-cpu", "::mlir::ModuleOp"> {
  let summary = "Lower fakv to upstream tensor/linalg/scf/llvm ops that run on the host";
  let description = [{
    Every fakv op, executable on the CPU. The composite ops are first
    rewritten by fakv-decompose's patterns (with exp2), as on the GPU, so
    the CPU runs the decomposition the GPU executes. Tiles stay
    tensors (to be bufferized by upstream passes); `!fakv.ptr` becomes
    `!llvm.ptr` and memory ops become guarded `llvm.load`/`llvm.store`; a kernel
    gets six trailing `i32` arguments (program id x, y, z, then the grid
    extents) that replace `fakv.program_id`/`fakv.num_programs`, and
    `fakv.launch` becomes a loop nest calling it. The whole way to an
    `mlir-runner`-ready module is the pipeline `fakv-to-llvm-cpu`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect",
  ];
}

def FakvGuardCPUMemory : Pass<"fakv-guard-cpu-memory", "::mlir::ModuleOp"> {
  let summary = "Check every memory access of the kernels on the host against the launch's arrays";
  let description = [{
    On the CPU path a kernel addresses the host's memory directly: a load
    or store outside the arrays it was given (no `bounds=` / `mask=`) would
    read garbage or corrupt the process. Right after convert-fakv-to-cpu
    (every `llvm.load` / `llvm.store` is then a kernel's) each access runs
    only when its bytes lie in one of the ranges the launcher wrote to the
    global `fakv_cpu_extents` (an i64 count, then the address of that many
    [lo, hi) pairs; bit 63 of lo: read only, no store; an access whose end
    wraps past 2^64 lies in none) and otherwise a load
    gives 0, a store is dropped, and 2 is
    or-ed into the i32 global `fakv_cpu_fault`, which the host reads after
    each launch (fakv.DataError). A count of 0 checks nothing.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect"];
}

def FakvFuseElementwiseCPU : Pass<"fakv-fuse-elementwise-cpu", "::mlir::ModuleOp"> {
  let summary = "Fuse chains of elementwise linalg ops where nothing is computed more often";
  let description = [{
    linalg's elementwise fusion (linalg-fuse-elementwise-ops' patterns) for
    the CPU path, before one-shot bufferization, whose time grew with the
    cube of a kernel's tile ops (1,024 took 7.5 s to compile). Only a
    producer with one use, in its consumer's block (never sunk into a loop
    to run each iteration) and read through a permutation (never a
    broadcast, which would compute an element once per copy). Each
    element's arithmetic is unchanged.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FakvExpandArithCPU : Pass<"fakv-expand-arith-cpu", "::mlir::ModuleOp"> {
  let summary = "Expand the arith ops the CPU path's LLVM lowering has no pattern for";
  let description = [{
    bf16 conversions (to integer ops: no compiler-runtime helper at run time;
    from integers and f64 rounded once, through f32 rounded to odd, as the
    GPU's cvt.rn.bf16 converts) and ceil / floor divisions, as arith-expand-ops does, but not
    `arith.maximumf` / `minimumf`: arith-expand-ops made them a compare and
    select that gave -0.0 for maximum(+0.0, -0.0) (and order-dependent
    fl.max reductions), where the compile-time folds and IEEE 754's maximum
    give +0.0; arith-to-llvm lowers them to llvm.maximum / llvm.minimum.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def FakvGuardCPUDivision : Pass<"fakv-guard-cpu-division", "::mlir::ModuleOp"> {
  let summary = "Make integer division by zero (and INT_MIN / -1) a reported fault on the host";
  let description = [{
    On x86 these trap (SIGFPE) and kill the process; on the GPU they give an
    unspecified value. In the CPU path every `arith.divsi/divui/remsi/remui/
    floordivsi/ceildivsi/ceildivui` whose divisor is not a safe constant
    divides by 1 instead when the divisor is 0 (or the signed division
    overflows) and ors 1 into the i32 global `fakv_cpu_fault`; the host
    reads it after each launch and raises (fakv.DataError). A division of
    tiles is checked element by element, the flags reduced to one
    (`linalg.reduce`). The CPU pipeline runs the pass before its first
    canonicalizer, so that a division whose result is unused or folded away
    is still checked, and after fakv-expand-arith-cpu; a checked division carries
    `fakv_cpu.divisor_checked` and is left alone.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::LLVM::LLVMDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
}

def ConvertFakvGPUToNVVM : Pass<"convert-fakvgpu-to-nvvm", "::mlir::ModuleOp"> {
  let summary = "Lower prepared kernels with layouts (fakv + fakvgpu) to NVVM, LLVM and vector ops";
  let description = [{
    Each tile becomes the vector of the elements its thread holds (or a
    shared-memory address); each op, the per-thread code for its layouts;
    rings, barriers and copies, mbarrier + TMA (`cp.async.bulk.tensor`) or
    cp.async; fakv.dot, wgmma; fakvgpu.warp_specialize, a branch per
    warpgroup. Kernels move into `gpu.module @fakv_kernels` as gpu.func with
    `fakvgpu.smem_bytes`, `fakvgpu.tma_args` and `fakvgpu.tma_boxes` (what a
    launch needs) and tensor-map pointer arguments appended. Host functions
    are dropped.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
  ];
}

def FakvGPULowerWarpSpecialize : Pass<"fakvgpu-lower-warp-specialize", "::mlir::ModuleOp"> {
  let summary = "Split fakvgpu.warp_specialize into one scf.if per warpgroup role";
  let description = [{
    Each region of a `fakvgpu.warp_specialize` moves into an `scf.if` on the
    thread id, marked `fakvgpu.role = [first thread, threads, named barrier]`;
    with register counts, `setmaxnreg` opens each role and the kernel gets
    `fakvgpu.max_registers` (their average). First step of the lowering to NVVM.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::NVVM::NVVMDialect", "::mlir::scf::SCFDialect"];
}

def FakvGPUPlanSharedMemory : Pass<"fakvgpu-plan-shared-memory", "::mlir::ModuleOp"> {
  let summary = "Place a kernel's shared-memory buffers";
  let description = [{
    Rings (1024-aligned), barriers and shared operand tiles one after the
    other, then one scratch area (128-aligned) that every layout conversion
    and cross-warp reduction reuses: `fakvgpu.smem_offset` on each, and
    `fakvgpu.smem_bytes` (plus 1024 bytes of alignment slack) on the kernel.
  }];
}

def FakvGPUTmaArguments : Pass<"fakvgpu-tma-arguments", "::mlir::ModuleOp"> {
  let summary = "Append a tensor-map argument per cache copied by TMA";
  let description = [{
    Each `fakvgpu.async_paged_load` that uses TMA gets `fakvgpu.tma_param`,
    the index of a new trailing pointer argument (one per cache argument and
    box height); the kernel gets `fakvgpu.tma_args` (the cache arguments they
    describe) and `fakvgpu.tma_boxes` (box rows), which the host reads.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FakvGPUMarkAligned : Pass<"fakvgpu-mark-aligned", "::mlir::ModuleOp"> {
  let summary = "Mark loads and stores whose vectors are aligned whatever the run-time values";
  let description = [{
    From the divisibility of pointers, offsets and strides
    (`fakv.divisibility` and constants): `fakvgpu.aligned` on a `fakv.load` /
    `fakv.store` lets the conversion emit one vector access without a
    run-time address check.
  }];
}

def FakvGPUOutlineKernels : Pass<"fakvgpu-outline-kernels", "::mlir::ModuleOp"> {
  let summary = "Move converted kernels into gpu.module @fakv_kernels as gpu.func";
  let description = [{
    After convert-fakvgpu-to-nvvm: each kernel becomes a `gpu.func` with
    `known_block_size`, `fakvgpu.smem_bytes`, `fakvgpu.tma_args`,
    `fakvgpu.tma_boxes`, `fakvgpu.num_warps` and, when set,
    `fakvgpu.max_registers` and `fakv.grid_packing`; the module gets the
    external shared array `fakv_smem`.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::LLVM::LLVMDialect"];
}

def FakvGPUDependentLaunch : Pass<"fakvgpu-dependent-launch", "::mlir::ModuleOp"> {
  let summary = "Let each kernel launch before the previous one has finished (programmatic dependent launch)";
  let description = [{
    After fakvgpu-outline-kernels: each `gpu.func` kernel starts with
    `griddepcontrol.wait` (before any memory access: the grids it depends on
    have finished and their writes are visible) and
    `griddepcontrol.launch_dependents`, as inline PTX that clobbers memory,
    and gets
    `fakvgpu.dependent_launch`; the runtime launches such kernels with
    programmatic stream serialization, so that a kernel's launch and setup
    overlap the tail of the one before it (append -> decode -> combine).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def FakvKernelABI : Pass<"fakv-kernel-abi", "::mlir::ModuleOp"> {
  let summary = "Make the tensor-map arguments of lowered kernels by-value grid constants";
  let description = [{
    After convert-gpu-to-nvvm: the arguments listed by a kernel's
    `fakvgpu.tma_args` (the trailing ones) become
    `{llvm.byval = !llvm.array<128 x i8>, llvm.align = 64, nvvm.grid_constant}`,
    i.e. `const __grid_constant__ CUtensorMap` parameters, so that TMA reads
    the descriptor from the parameter space.
  }];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

#endif // FAKV_LOWERING_PASSES_TD
