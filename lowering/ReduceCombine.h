//===- ReduceCombine.h - fakv.reduce's combiner, CPU and GPU ----*- C++ -*-===//
//
// How two elements of a `fakv.reduce` combine (sum, max, min over floats, or
// i32: wrapping sum, signed max / min), built the same by the CPU lowering
// (linalg.reduce's body) and the GPU one (in-thread, shuffles, across warps).
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_REDUCECOMBINE_H
#define FAKV_LOWERING_REDUCECOMBINE_H

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

namespace mlir::fakv {

inline Value combineReduced(OpBuilder &b, Location loc, ReduceKind kind, Value x, Value y) {
  bool isInt = isa<IntegerType>(x.getType());
  switch (kind) {
  case ReduceKind::sum:
    return isInt ? Value(arith::AddIOp::create(b, loc, x, y))
                 : Value(arith::AddFOp::create(b, loc, x, y));
  case ReduceKind::max:
    return isInt ? Value(arith::MaxSIOp::create(b, loc, x, y))
                 : Value(arith::MaximumFOp::create(b, loc, x, y));
  case ReduceKind::min:
    return isInt ? Value(arith::MinSIOp::create(b, loc, x, y))
                 : Value(arith::MinimumFOp::create(b, loc, x, y));
  }
  llvm_unreachable("reduce kind");
}

} // namespace mlir::fakv

#endif // FAKV_LOWERING_REDUCECOMBINE_H
