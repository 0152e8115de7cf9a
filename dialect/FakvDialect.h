//===- FakvDialect.h - the fakv dialect, its types and ops ------*- C++ -*-===//
//
// The one header to include for anything in the fakv dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_DIALECT_FAKVDIALECT_H
#define FAKV_DIALECT_FAKVDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialect/FakvDialect.h.inc"
#include "dialect/FakvEnums.h.inc"

namespace mlir::fakv {
/// The memory that tiles in a memory encoding live in (FakvInterfaces.td):
/// shared memory on the GPU.
struct TileMemoryResource : public SideEffects::Resource::Base<TileMemoryResource> {
  StringRef getName() override { return "<fakv tile memory>"; }
};
} // namespace mlir::fakv

#include "dialect/FakvAttrInterfaces.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/FakvTypes.h.inc"

namespace mlir::fakv {
/// The most elements a tile may hold (2^24: 64 MiB of f32), checked on every
/// fakv op by the BoundedTiles trait, so that a typo in a shape is a
/// diagnostic, not an allocation that never ends.
constexpr int64_t kMaxTileElements = int64_t(1) << 24;
/// Verifies that every tile (ranked tensor) an op takes or gives is within
/// kMaxTileElements.
LogicalResult verifyBoundedTiles(Operation *op);
/// A static tile's elements, or limit + 1 when they are more than `limit`
/// (counted without overflow: a shape's product may pass int64).
int64_t elementsUpTo(RankedTensorType tile, int64_t limit);
} // namespace mlir::fakv

namespace mlir::OpTrait::fakv {
template <typename ConcreteType>
class BoundedTiles : public TraitBase<ConcreteType, BoundedTiles> {
public:
  static LogicalResult verifyTrait(Operation *op) {
    return ::mlir::fakv::verifyBoundedTiles(op);
  }
};
} // namespace mlir::OpTrait::fakv

#define GET_OP_CLASSES
#include "dialect/FakvOps.h.inc"

namespace mlir::fakv {
/// True when `func` carries the `fakv.kernel` attribute.
bool isKernel(func::FuncOp func);
/// Whether the lowerings (GPU and CPU) hold values of element type `t`:
/// integers of 1 to 64 bits and f16 / bf16 / f32 / f64 (NVPTX selects nothing
/// for f80, f128 or the 8-bit floats: LLVM aborted in instruction selection;
/// the CPU lowering left f8 ops in its output). Other types (pointers, index)
/// are not elements of this check.
bool isLoweredElementType(Type t);
/// Failure, with a diagnostic, when a kernel of `module` is not one of its
/// own functions (a nested module's, a gpu.module's): the passes take the
/// kernels of the module they run on, and the conversions would reach a
/// nested one unprepared.
LogicalResult checkNestedKernels(ModuleOp module);
} // namespace mlir::fakv

#endif // FAKV_DIALECT_FAKVDIALECT_H
