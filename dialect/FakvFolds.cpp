//===- FakvFolds.cpp - folders and canonicalization patterns --------------===//
//
// What folds: shape ops of a constant splat become a constant; identity
// broadcasts, reshapes and casts, and zero pointer offsets, disappear; a
// reshape of a reshape is one reshape; a broadcast of a splat or of a
// broadcast is one op. Tests: test/dialect/canonicalize.mlir.
//
//===----------------------------------------------------------------------===//

#include "dialect/FakvDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::fakv;

namespace {
/// A splat constant of `type` when `operand` is a splat constant (or a
/// scalar constant), else null.
Attribute splatOf(Attribute operand, ShapedType type) {
  Attribute value;
  if (auto dense = dyn_cast_if_present<SplatElementsAttr>(operand))
    value = dense.getSplatValue<Attribute>();
  else if (isa_and_present<IntegerAttr, FloatAttr>(operand))
    value = operand;
  // (a constant typed otherwise than the elements, `llvm.mlir.constant(-1 : i8) : i64`: its bits are not
  // the element's value; DenseElementsAttr::get asserts they agree)
  auto typed = dyn_cast_if_present<TypedAttr>(value);
  if (!typed || typed.getType() != type.getElementType())
    return {};
  return DenseElementsAttr::get(type, value);
}
} // namespace

OpFoldResult SplatOp::fold(FoldAdaptor adaptor) {
  return splatOf(adaptor.getValue(), getType());
}

OpFoldResult BroadcastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return splatOf(adaptor.getSrc(), getType());
}

OpFoldResult ExpandDimsOp::fold(FoldAdaptor adaptor) {
  return splatOf(adaptor.getSrc(), getType());
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  if (auto inner = getSrc().getDefiningOp<ReshapeOp>()) {
    getSrcMutable().assign(inner.getSrc());
    return getResult();
  }
  return splatOf(adaptor.getSrc(), getType());
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return {};
}

OpFoldResult AddPtrOp::fold(FoldAdaptor adaptor) {
  if (matchPattern(getOffset(), m_Zero()))
    return getPtr();
  return {};
}

namespace {
/// broadcast(splat x) -> splat x; broadcast(broadcast x) -> broadcast x.
struct FoldBroadcastOfProducer : OpRewritePattern<BroadcastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastOp op,
                                PatternRewriter &rewriter) const override {
    if (auto splat = op.getSrc().getDefiningOp<SplatOp>()) {
      rewriter.replaceOpWithNewOp<SplatOp>(op, op.getType(), splat.getValue());
      return success();
    }
    if (auto inner = op.getSrc().getDefiningOp<BroadcastOp>()) {
      rewriter.replaceOpWithNewOp<BroadcastOp>(op, op.getType(),
                                               inner.getSrc());
      return success();
    }
    if (auto expand = op.getSrc().getDefiningOp<ExpandDimsOp>())
      if (auto splat = expand.getSrc().getDefiningOp<SplatOp>()) {
        rewriter.replaceOpWithNewOp<SplatOp>(op, op.getType(),
                                             splat.getValue());
        return success();
      }
    return failure();
  }
};
} // namespace

void BroadcastOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<FoldBroadcastOfProducer>(context);
}
