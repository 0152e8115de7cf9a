//===- FakvGPUDialect.h - the fakvgpu dialect -------------------*- C++ -*-===//

#ifndef FAKV_DIALECT_FAKVGPUDIALECT_H
#define FAKV_DIALECT_FAKVGPUDIALECT_H

#include "dialect/FakvDialect.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/TensorEncoding.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/FakvGPUDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/FakvGPUAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/FakvGPUTypes.h.inc"

#define GET_OP_CLASSES
#include "dialect/FakvGPUOps.h.inc"

namespace mlir::fakvgpu {
/// The number of warps a kernel runs with, once layouts are assigned.
constexpr llvm::StringLiteral kNumWarpsAttr = "fakvgpu.num_warps";
/// On a fakvgpu.async_paged_load: every row of the cache starts 16-byte
/// aligned (its base and strides are known to be), as TMA needs.
constexpr llvm::StringLiteral kAlignedRowsAttr = "fakvgpu.aligned_rows";
/// On a fakvgpu.async_paged_load: aligned rows whose channels fill whole
/// 16-byte chunks, so the gather never needs an element-wise copy.
constexpr llvm::StringLiteral kWholeChunksAttr = "fakvgpu.whole_chunks";
/// On a fakvgpu.convert_layout to shared memory: the rows the tile is stored
/// with (i64), where not the default 64 (a swapped dot's A: AssignLayouts).
constexpr llvm::StringLiteral kStoredRowsAttr = "fakvgpu.stored_rows";

/// Attributes the lowering leaves on ops and kernels (lowering/GPUCodegen.h
/// says what each holds); the dialect verifies their values, so hand-written
/// or stale IR gets a diagnostic, not a lowering that trusts them.
/// An op's byte offset in the kernel's shared memory (i64 >= 0).
constexpr llvm::StringLiteral kSmemOffsetAttr = "fakvgpu.smem_offset";
/// A kernel's shared memory, bytes (i64 >= 0).
constexpr llvm::StringLiteral kSmemBytesAttr = "fakvgpu.smem_bytes";
/// A warp role's threads [first, first + count) and its hardware barrier:
/// array<i64: first, count, barrier>.
constexpr llvm::StringLiteral kRoleAttr = "fakvgpu.role";
/// A kernel's arguments read through tensor maps, and each map's box rows.
constexpr llvm::StringLiteral kTmaArgsAttr = "fakvgpu.tma_args";
constexpr llvm::StringLiteral kTmaBoxesAttr = "fakvgpu.tma_boxes";
/// On a fakvgpu.async_paged_load: the kernel argument holding its tensor map.
constexpr llvm::StringLiteral kTmaParamAttr = "fakvgpu.tma_param";
constexpr llvm::StringLiteral kMaxRegistersAttr = "fakvgpu.max_registers";
constexpr llvm::StringLiteral kClusterSizeAttr = "fakvgpu.cluster_size";

/// The most elements a register tile may hold on the GPU: 512 per thread of
/// a warpgroup, four times the decode kernel's largest tile (64x256 f32).
/// Register tiles are unrolled per thread: past this the kernel spills and
/// the compile takes minutes (a layout of 16384 registers a thread: 82 s).
constexpr int64_t kMaxTileElements = 65536;
constexpr int64_t kMaxTileRegisters = kMaxTileElements / 128;

} // namespace mlir::fakvgpu

#endif // FAKV_DIALECT_FAKVGPUDIALECT_H
