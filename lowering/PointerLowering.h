//===- PointerLowering.h - fakv pointers to LLVM, CPU and GPU ---*- C++ -*-===//
//
// fakv.addptr, fakv.load_scalar and fakv.report become the same LLVM on both
// paths (a GEP on the converted pointer, whatever its address space, a load,
// a guarded store); the CPU and GPU conversions add these patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_POINTERLOWERING_H
#define FAKV_LOWERING_POINTERLOWERING_H

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fakv {

/// &base[index] for elements of `elementType`, in base's address space.
Value elementAddress(OpBuilder &b, Location loc, Value base, Value index,
                     Type elementType);

/// `if (cond) error[0] = code` (fakv.report; paged loads that meet a page
/// outside the cache). `error` is the converted i32 pointer.
void reportIf(OpBuilder &b, Location loc, Value error, Value cond, Value code);

void populatePointerLoweringPatterns(const TypeConverter &converter,
                                     RewritePatternSet &patterns);

} // namespace mlir::fakv

#endif // FAKV_LOWERING_POINTERLOWERING_H
