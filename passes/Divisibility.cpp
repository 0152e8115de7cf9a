//===- Divisibility.cpp - what fakv IR says of an integer's divisors ------===//

#include "passes/Divisibility.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::fakv;

namespace {

constexpr int64_t kMax = int64_t(1) << 30;
constexpr unsigned kMaxDepth = 32;

int64_t ofConstant(const APInt &c) {
  if (c.isZero())
    return kMax;
  return int64_t(1) << std::min(30u, c.countr_zero()); // the lowest set bit
}

/// The `fakv.divisibility` of a kernel argument, or 1.
int64_t ofArgument(BlockArgument arg) {
  Block *block = arg.getOwner();
  auto fn = dyn_cast_or_null<FunctionOpInterface>(block->getParentOp());
  if (!fn || !block->isEntryBlock())
    return 1;
  auto attr = fn.getArgAttrOfType<IntegerAttr>(
      arg.getArgNumber(), FakvDialect::getDivisibilityAttrName());
  return attr ? std::min<int64_t>(attr.getInt(), kMax) : 1;
}

/// Memoised per query: shared subexpressions are visited once.
int64_t divisor(Value v, unsigned depth, llvm::DenseMap<Value, int64_t> &memo);

int64_t divisorUncached(Value v, unsigned depth,
                        llvm::DenseMap<Value, int64_t> &memo) {
  APInt c;
  if (matchPattern(v, m_ConstantInt(&c)))
    return ofConstant(c);
  if (auto arg = dyn_cast<BlockArgument>(v))
    return ofArgument(arg);
  Operation *op = v.getDefiningOp();
  auto d = [&](unsigned i) { return divisor(op->getOperand(i), depth + 1, memo); };
  if (isa<arith::MulIOp>(op))
    return std::min(kMax, d(0) * d(1));
  if (isa<arith::AddIOp, arith::SubIOp>(op))
    return std::min(d(0), d(1));
  if (isa<arith::ExtSIOp, arith::ExtUIOp, arith::IndexCastOp>(op))
    return d(0);
  if (isa<arith::SelectOp>(op))
    return std::min(d(1), d(2));
  if (isa<arith::ShLIOp>(op) && matchPattern(op->getOperand(1), m_ConstantInt(&c)) &&
      c.ult(30))
    return std::min(kMax, d(0) << c.getZExtValue());
  // x / 2^k with 2^k dividing x is exact (every rounding agrees): a multiple
  // of divisor(x) / 2^k. (rotary_dim // 2, say.)
  int64_t by = 0;
  if (isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp, arith::CeilDivSIOp>(op) &&
      matchPattern(op->getOperand(1), m_ConstantInt(&c)) && c.isStrictlyPositive() &&
      c.isPowerOf2() && c.ult(kMax))
    by = c.getZExtValue();
  if (isa<arith::ShRSIOp, arith::ShRUIOp>(op) && matchPattern(op->getOperand(1), m_ConstantInt(&c)) &&
      c.ult(30))
    by = int64_t(1) << c.getZExtValue();
  if (by) {
    int64_t x = d(0);
    return x % by == 0 ? std::max<int64_t>(1, x / by) : 1;
  }
  return 1;
}

int64_t divisor(Value v, unsigned depth, llvm::DenseMap<Value, int64_t> &memo) {
  if (depth > kMaxDepth)
    return 1;
  auto it = memo.find(v);
  if (it != memo.end())
    return it->second;
  int64_t result = divisorUncached(v, depth, memo);
  memo[v] = result;
  return result;
}

int64_t alignment(Value ptr, unsigned depth) {
  auto type = cast<PtrType>(ptr.getType());
  int64_t elem = std::max<int64_t>(1, type.getElementType().getIntOrFloatBitWidth() / 8);
  if (depth > kMaxDepth)
    return elem;
  if (auto arg = dyn_cast<BlockArgument>(ptr))
    return std::max(elem, ofArgument(arg));
  if (auto add = ptr.getDefiningOp<AddPtrOp>())
    return std::max(elem, std::min(alignment(add.getPtr(), depth + 1),
                                   std::min(kMax, knownDivisor(add.getOffset()) * elem)));
  return elem;
}

} // namespace

int64_t mlir::fakv::knownDivisor(Value v) {
  llvm::DenseMap<Value, int64_t> memo;
  return divisor(v, 0, memo);
}

int64_t mlir::fakv::knownAlignment(Value ptr) { return alignment(ptr, 0); }
