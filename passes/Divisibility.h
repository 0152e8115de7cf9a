//===- Divisibility.h - what fakv IR says of an integer's divisors -*- C++ -*-===//
//
// The power of two an i32/i64 value is known to be a multiple of, and the
// byte alignment of a !fakv.ptr, from constants, `fakv.divisibility` kernel
// arguments, arithmetic (mul, add, sub, shl, extensions, select, divisions
// and right shifts by powers of two that divide the value) and
// fakv.addptr. The GPU lowering uses it to move vectors without run-time
// address checks.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_PASSES_DIVISIBILITY_H
#define FAKV_PASSES_DIVISIBILITY_H

#include "mlir/IR/Value.h"

namespace mlir::fakv {

/// The largest power of two (at most 2^30) that `v` is known to be a
/// multiple of; 1 when nothing is known.
int64_t knownDivisor(Value v);

/// The alignment in bytes known of the address a !fakv.ptr value holds (at
/// least its element's size).
int64_t knownAlignment(Value ptr);

} // namespace mlir::fakv

#endif // FAKV_PASSES_DIVISIBILITY_H
