//===- PointerLowering.h - fakv pointers to LLVM, CPU and GPU ---*- C++ -*-===//
//
// fakv.addptr and fakv.load_scalar become the same LLVM on both paths (a GEP
// on the converted pointer, whatever its address space, and a load); the CPU
// and GPU conversions add these patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_POINTERLOWERING_H
#define FAKV_LOWERING_POINTERLOWERING_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fakv {

/// &base[index] for elements of `elementType`, in base's address space.
Value elementAddress(OpBuilder &b, Location loc, Value base, Value index,
                     Type elementType);

void populatePointerLoweringPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns);

} // namespace mlir::fakv

#endif // FAKV_LOWERING_POINTERLOWERING_H
