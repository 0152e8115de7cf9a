//===- LinearLayout.h - register layouts as bit-linear maps -----*- C++ -*-===//
//
// A register layout maps (register, lane, warp) to tile coordinates: each
// set bit of the register index, lane id or warp id contributes a basis
// vector, and the coordinates are the xor of the contributions (tile
// dimensions are powers of two, so xor is the sum of distinct bits). A zero
// basis replicates. `#fakvgpu.linear` stores one; the passes build them and
// the GPU lowering reads coordinates off them.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_DIALECT_LINEARLAYOUT_H
#define FAKV_DIALECT_LINEARLAYOUT_H

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::fakvgpu {
class LinearAttr;

using Coord = SmallVector<int64_t, 4>;

struct LinearLayout {
  unsigned rank = 0;
  SmallVector<Coord> regs, lanes, warps;

  /// The f32 accumulator of `wgmma m64nNk16` for an `M x N` tile (M <= 64)
  /// in `numWarps` warps (a multiple of 4; warps past the first warpgroup
  /// replicate). Also the register layout of wgmma's A operand.
  static LinearLayout wgmmaAccumulator(ArrayRef<int64_t> shape,
                                       unsigned numWarps);
  /// The f32 result of an `M x N` dot (M < 64, N a multiple of 64) computed
  /// with its operands swapped: `wgmma m64nM'k16` (M' = M rounded up to a
  /// power of two, at least 8) of the transposes, one per 64 columns, so
  /// element (i, j) sits where the accumulator of the j / 64-th wgmma holds
  /// (j mod 64, i). Rows past M repeat (the operand's rows in shared memory
  /// do). Lowered by DotToNVVM.cpp's lowerSwapped.
  static LinearLayout wgmmaSwappedAccumulator(ArrayRef<int64_t> shape,
                                              unsigned numWarps);
  /// M' of the swapped form for a dot of `rows` rows: wgmma's N, the rows
  /// its old A is stored with.
  static int64_t wgmmaSwappedN(int64_t rows) {
    return std::max<int64_t>(8, llvm::PowerOf2Ceil(rows));
  }
  /// Row-major blocked: `vector` consecutive elements of the last dimension
  /// per register group, then lanes, then warps, then more registers.
  static LinearLayout blocked(ArrayRef<int64_t> shape, unsigned numWarps,
                              unsigned vector);

  static LinearLayout fromAttr(LinearAttr attr);
  LinearAttr toAttr(MLIRContext *ctx) const;

  /// Keep only the coordinate bits that fit `shape` (bases past a
  /// dimension's size become zero) and drop zero register bases.
  LinearLayout restricted(ArrayRef<int64_t> shape) const;
  /// The layout of the tile with dimension `dim` removed (a reduction or a
  /// slice along it).
  LinearLayout sliced(unsigned dim) const;
  /// The layout with a size-1 dimension inserted at `dim`.
  LinearLayout expanded(unsigned dim) const;
  /// The same elements seen with another row-major shape.
  LinearLayout reshaped(ArrayRef<int64_t> from, ArrayRef<int64_t> to) const;

  int64_t numRegs() const { return int64_t(1) << regs.size(); }
  unsigned numWarps() const { return 1u << warps.size(); }
  /// Coordinates contributed by register index `reg` alone.
  Coord regCoord(int64_t reg) const;
  /// Register holding `coord` minus the lane/warp part, if any.
  std::optional<int64_t> regOf(ArrayRef<int64_t> regPart) const;

  bool operator==(const LinearLayout &o) const {
    return rank == o.rank && regs == o.regs && lanes == o.lanes &&
           warps == o.warps;
  }
  bool operator!=(const LinearLayout &o) const { return !(*this == o); }
};

/// True when every dimension is a power of two.
bool isPowerOfTwoShape(ArrayRef<int64_t> shape);

} // namespace mlir::fakvgpu

#endif // FAKV_DIALECT_LINEARLAYOUT_H
