//===- Passes.td - fakv tile-level passes ------------------*- tablegen -*-===//
//
// Transformations on fakv / fakvgpu tiles, in the order the fakv-to-cubin
// pipeline runs them (lowering/Pipelines.cpp). Each has a lit test named
// after it in test/passes/.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_PASSES_TD
#define FAKV_PASSES_TD

include "mlir/Pass/PassBase.td"

def FakvPackGQA : Pass<"fakv-pack-gqa", "::mlir::ModuleOp"> {
  let summary = "Pack the query heads that share a kv head into the rows of one program's tiles";
  let description = [{
    For each kernel carrying `fakv.pack_gqa = axis`: the kernel is written
    for one query head h = program_id(axis) per program and reads K/V of kv
    head h / GROUP (GROUP a constant). The pass vectorises it over the GROUP
    heads of a kv head: program_id(axis) becomes the kv head, every tile
    that depends on the head holds the GROUP heads' copies stacked in its
    rows (so the query heads, times the query positions, are the M of the
    matmuls), loads and stores through head-dependent pointers gain a
    leading head dimension, and tiles that do not depend on the head are
    replicated where they meet ones that do. GROUP is padded to a power of
    two (the padding heads read and write nothing). The kernel then carries
    `fakv.grid_packing` (array<i32>: GROUP at `axis`, 1 elsewhere): a
    launch over the written grid runs grid[axis] / GROUP programs. What the
    pass cannot pack (a float scalar of the head, a branch on it, K/V rows
    or key positions that depend on it, a store every head makes to one
    address) is an error naming the op.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::scf::SCFDialect"];
}

def FakvDecompose : Pass<"fakv-decompose", "::mlir::ModuleOp"> {
  let summary = "Expand the composite fakv ops into reductions and elementwise math on tiles";
  let description = [{
    Rewrites fakv.online_softmax, fakv.lse_combine and the score modifiers
    (length/causal/window masks, softcap, ALiBi) into fakv.reduce,
    fakv.broadcast/expand_dims/arange/splat and arith/math ops on tiles, with
    the semantics of dialect/FakvOps.td. With `exp2`, exponentials become
    `math.exp2` of log2(e)-scaled values (the online softmax keeps its
    running max in natural-log units across iterations). Each arith.fptosi
    becomes the conversion docs/frontend.md defines (toward 0, saturating,
    NaN 0: selects around an fptosi marked `fakv.saturated`), as the CPU
    lowering makes it: the GPU's cvt.rzi.s64 gave INT64_MIN for NaN.
  }];
  let options = [
    Option<"useExp2", "exp2", "bool", /*default=*/"true",
           "compute exp(x) as exp2(x * log2(e)) with the factor folded into the scale">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def FakvAssignLayouts : Pass<"fakv-assign-layouts", "::mlir::ModuleOp"> {
  let summary = "Give every tile a place: a register layout or shared memory";
  let description = [{
    Anchors: fakv.dot results take the wgmma accumulator layout; its B
    operand (and an A operand not already in that layout) goes to shared
    memory; a fakv.paged_load feeding a dot loads into shared memory.
    Layouts then flow through elementwise ops, broadcasts, expand_dims,
    reshapes, reductions (which slice) and loop-carried values; tiles left
    over get a row-major blocked layout. Where an op's operands disagree, a
    fakvgpu.convert_layout is inserted. The kernel records its warp count
    (`fakvgpu.num_warps`).
  }];
  let options = [
    Option<"numWarps", "num-warps", "unsigned", /*default=*/"4",
           "warps that compute: 4, 8, 16 or 32 (one warpgroup for wgmma)">,
  ];
  let dependentDialects = ["::mlir::fakvgpu::FakvGPUDialect"];
}

def FakvPipeline : Pass<"fakv-pipeline", "::mlir::ModuleOp"> {
  let summary = "Software-pipeline paged K/V loads through shared-memory rings";
  let description = [{
    For an scf.for whose body loads tiles into shared memory with
    fakv.paged_load (at rows `iv * tile_rows`): each load gets a ring of
    `stages` buffers and a `full` barrier per buffer that the copy signals.
    The loads become fakvgpu.async_paged_load issued `stages - 1` iterations
    ahead (a prologue fills the ring) and their uses read fakvgpu.ring_view
    after fakvgpu.wait on `full`. The `empty` barriers that tell a separate
    copier when a buffer is free come with fakv-warp-specialize.
  }];
  let options = [
    Option<"stages", "stages", "unsigned", /*default=*/"2",
           "buffers per ring (copies in flight ahead of the math)">,
  ];
  let dependentDialects = ["::mlir::fakvgpu::FakvGPUDialect", "::mlir::scf::SCFDialect"];
}

def FakvWarpSpecialize : Pass<"fakv-warp-specialize", "::mlir::ModuleOp"> {
  let summary = "Give the copies of a pipelined loop to a producer warpgroup";
  let description = [{
    Splits a kernel whose loop fakv-pipeline has pipelined into a
    fakvgpu.warp_specialize: a producer warpgroup runs a loop that waits for
    free ring buffers and issues the async copies; the consumer warpgroup
    runs the math loop and the rest of the kernel; `empty` barriers hand
    consumed buffers back. With register counts (multiples of 8 in
    [24, 256]), the lowering moves registers from the producer to the
    consumer with `setmaxnreg` and compiles the kernel for the average
    (`.maxnreg`), so that more blocks fit on an SM; 0, 0 (the default)
    leaves every thread what ptxas allocates.
  }];
  let options = [
    Option<"producerRegisters", "producer-registers", "unsigned", /*default=*/"0",
           "registers per producer thread (0: no setmaxnreg)">,
    Option<"consumerRegisters", "consumer-registers", "unsigned", /*default=*/"0",
           "registers per consumer thread (0: no setmaxnreg)">,
  ];
  let dependentDialects = ["::mlir::fakvgpu::FakvGPUDialect", "::mlir::scf::SCFDialect"];
}

#endif // FAKV_PASSES_TD
