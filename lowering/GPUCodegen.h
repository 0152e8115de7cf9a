//===- GPUCodegen.h - shared helpers of the fakvgpu -> NVVM lowering -*- C++ -*-===//
//
// Per-thread code for tiles: which thread of which role runs an op, the
// coordinates a thread's registers hold, shared-memory addresses, role-wide
// barriers; and the pattern sets of convert-fakvgpu-to-nvvm by op family.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_GPUCODEGEN_H
#define FAKV_LOWERING_GPUCODEGEN_H

#include "dialect/FakvGPUDialect.h"
#include "dialect/LinearLayout.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fakv::codegen {

/// Attributes the lowering leaves on ops and kernels (named, and their values
/// verified, in dialect/FakvGPUDialect.h): shared-memory offsets and sizes,
/// warp roles, tensor-map arguments; the per-thread register count a kernel
/// is compiled for (`.maxnreg`) when its roles rebalance registers with
/// setmaxnreg; the programs of a kernel's clusters (on grid axis 2;
/// fakv.cluster_gather): the kernel's `.reqnctapercluster 1, 1, n`
/// (fakv-kernel-abi).
using fakvgpu::kClusterSizeAttr;
using fakvgpu::kMaxRegistersAttr;
using fakvgpu::kRoleAttr;
using fakvgpu::kSmemBytesAttr;
using fakvgpu::kSmemOffsetAttr;
using fakvgpu::kTmaArgsAttr;
using fakvgpu::kTmaBoxesAttr;
using fakvgpu::kTmaParamAttr;
/// A load or store whose vectors are aligned whatever the run-time values.
constexpr llvm::StringLiteral kAlignedAttr = "fakvgpu.aligned";
/// An aligned load or store whose last bound is a multiple of its vector
/// width: each vector is wholly inside the bounds or wholly outside, so its
/// first element's check decides it (no element-by-element fallback).
constexpr llvm::StringLiteral kWholeVectorsAttr = "fakvgpu.whole_vectors";
/// A kernel convert-fakvgpu-to-nvvm converted (its fakv.kernel attribute,
/// whose verifier wants fakv argument types, replaced), to be outlined.
constexpr llvm::StringLiteral kConvertedKernelAttr = "fakvgpu.converted_kernel";
/// A kernel that waits for the grids it depends on before it touches memory
/// (fakvgpu-dependent-launch): it may be launched with programmatic stream
/// serialization.
constexpr llvm::StringLiteral kDependentLaunchAttr = "fakvgpu.dependent_launch";
/// The PTX of the wait: at a kernel's top (fakvgpu-dependent-launch), or
/// where its fakv.dependency_wait was.
constexpr llvm::StringLiteral kGridDependencyWait = "griddepcontrol.wait;";
/// And of the release of the kernels behind it: at a kernel's top, after its
/// wait, or where its fakv.launch_dependents was.
constexpr llvm::StringLiteral kLaunchDependents = "griddepcontrol.launch_dependents;";
/// The dynamic shared memory of a kernel module.
constexpr llvm::StringLiteral kSmemSymbol = "fakv_smem";
/// The gpu.module fakvgpu-outline-kernels moves the kernels into.
constexpr llvm::StringLiteral kKernelsModule = "fakv_kernels";
/// Bytes added to a kernel's shared memory so its base can be 1024-aligned.
constexpr int64_t kSmemAlignSlack = 1024;

/// The threads that run an op: all of the kernel's, or one role of a
/// warp-specialized kernel (thread ids [first, first + count)).
struct Role {
  int64_t first = 0;
  int64_t count = 0;
  /// Hardware barrier used to synchronise the role (0 = all threads).
  int64_t barrier = 0;
};
Role roleOf(Operation *op);

/// i32 constants.
Value i32(OpBuilder &b, Location loc, int64_t v);
Value i64(OpBuilder &b, Location loc, int64_t v);

/// `ptx` (griddepcontrol.wait / .launch_dependents) as inline PTX with a
/// memory clobber rather than the NVVM intrinsics, which LLVM models as not
/// touching memory (loads could move across them).
void griddepcontrol(OpBuilder &b, Location loc, StringRef ptx);

/// The thread's id within its role (i32).
Value roleThreadId(OpBuilder &b, Location loc, Operation *op);
/// Synchronises the threads of `op`'s role.
void syncRole(OpBuilder &b, Location loc, Operation *op);

/// The linear layout of a tile type with a #fakvgpu.linear encoding.
fakvgpu::LinearLayout layoutOf(Type tileType);
/// Per dimension, the part of the coordinates given by the lane and warp
/// of thread `tid` (i32 values); add a register's regCoord to get an
/// element's coordinates (the bits are disjoint).
SmallVector<Value> laneWarpCoords(OpBuilder &b, Location loc,
                                  const fakvgpu::LinearLayout &layout,
                                  Value tid);
/// Coordinates of register `reg` for a thread whose lane/warp part is
/// `base` (i32 values).
SmallVector<Value> elementCoords(OpBuilder &b, Location loc,
                                 const fakvgpu::LinearLayout &layout,
                                 ArrayRef<Value> base, int64_t reg);

/// The 1024-aligned base of the kernel's dynamic shared memory.
Value smemBase(OpBuilder &b, Location loc, Operation *op);
/// Shared-memory address of the buffer placed for `op` (kSmemOffsetAttr;
/// a pattern checks requirePlacement(op) first).
Value smemOf(OpBuilder &b, Location loc, Operation *op);
/// Failure, with a diagnostic on `op`, when fakvgpu-plan-shared-memory left
/// it no placement (hand-written or edited IR): what smemOf needs.
LogicalResult requirePlacement(Operation *op);
/// `base + bytes` for a shared or global pointer.
Value addBytes(OpBuilder &b, Location loc, Value base, Value bytes);

/// Byte offset of element (row, col) of a 16-bit tile in the
/// #fakvgpu.shared layout with `rows` rows (i32 values).
Value swizzledOffset(OpBuilder &b, Location loc, Value row, Value col,
                     int64_t rows);

/// How many leading registers of `l` hold consecutive elements of the last
/// dimension, each group of them starting at a multiple of that count (a
/// power of two, at most `maxElems`): the width of a vector move of the tile.
int64_t alignedVectorRegs(const fakvgpu::LinearLayout &l, int64_t maxElems);

/// Rows a #fakvgpu.shared tile value is stored with: its own for a ring
/// slot (as the copies write it); a conversion's `fakvgpu.stored_rows`
/// (a swapped dot's A: wgmma's B of N rows); at least 64 for another tile
/// written from registers (wgmma reads 64 rows of A; fewer rows are
/// replicated).
int64_t sharedRows(Value tile);
/// Bytes of a #fakvgpu.shared tile stored with `rows` rows.
int64_t sharedTileBytes(RankedTensorType tile, int64_t rows);

/// An LLVM pointer in address space `space` (1: global, 3: shared).
Type ptrType(MLIRContext *ctx, unsigned space);
/// Whether `t` is a tile in a #fakvgpu.linear layout.
bool isLinearTile(Type t);
/// Element `i` of a thread's vector; a vector of `elems`.
Value vecElement(OpBuilder &b, Location loc, Value vec, int64_t i);
Value fromElements(OpBuilder &b, Location loc, Type vecType,
                   ArrayRef<Value> elems);
/// `if (cond) then() -> T else otherwise()`.
Value ifValue(OpBuilder &b, Location loc, Value cond, Type t,
              function_ref<Value(OpBuilder &)> then,
              function_ref<Value(OpBuilder &)> otherwise);

/// What the conversion takes of a kernel's tiles: each in registers
/// (#fakvgpu.linear, of at most the kernel's warps) or in shared memory where
/// a fakvgpu op put it and only dots and fakvgpu ops read it; no calls and
/// no tile constants of several values. An error at the first op that is
/// not (and failure).
LogicalResult checkTiles(func::FuncOp func);

/// Calls `fn` on each kernel of `module`; an error (and failure) for a
/// kernel without layouts (fakv-assign-layouts has not run) or whose tiles
/// checkTiles refuses.
LogicalResult forEachKernelWithLayouts(ModuleOp module,
                                       function_ref<void(func::FuncOp)> fn);

/// Marks the loads and stores of `func` whose vectors are aligned whatever
/// the run-time values (kAlignedAttr; MemoryToNVVM.cpp).
void markAlignedAccesses(func::FuncOp func);

/// The patterns of convert-fakvgpu-to-nvvm, one set per op family:
/// program ids, tile construction, elementwise math, reductions and layout
/// conversions (TileOpsToNVVM.cpp); global loads and stores
/// (MemoryToNVVM.cpp); rings, barriers and asynchronous copies
/// (AsyncCopyToNVVM.cpp); matmuls (DotToNVVM.cpp).
void populateTileOpsToNVVMPatterns(const TypeConverter &converter,
                                   RewritePatternSet &patterns);
void populateMemoryToNVVMPatterns(const TypeConverter &converter,
                                  RewritePatternSet &patterns);
void populateAsyncCopyToNVVMPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns);
void populateDotToNVVMPatterns(const TypeConverter &converter,
                               RewritePatternSet &patterns);

} // namespace mlir::fakv::codegen

#endif // FAKV_LOWERING_GPUCODEGEN_H
