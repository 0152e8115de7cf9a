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
} // namespace mlir::fakvgpu

#endif // FAKV_DIALECT_FAKVGPUDIALECT_H
