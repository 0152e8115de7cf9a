//===- Decompose.cpp - composite fakv ops into tile primitives ------------===//
//
// After this pass a kernel uses only the tile primitives the GPU lowering
// implements for any layout (reduce, broadcast, expand_dims, arange, splat,
// arith/math on tiles) besides loads, stores and dots. The formulas are the
// ones dialect/FakvOps.td gives; test/passes/decompose.mlir checks them.
// Float-to-int conversions get their saturation and NaN made explicit.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <tuple>

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVDECOMPOSE
#include "passes/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;

namespace {

constexpr double kLog2E = 1.4426950408889634;
constexpr double kLn2 = 0.6931471805599453;

/// Tile helpers on an ImplicitLocOpBuilder.
struct TileBuilder {
  ImplicitLocOpBuilder &b;

  Value f32(double v) {
    return arith::ConstantFloatOp::create(b, b.getF32Type(),
                                          APFloat(static_cast<float>(v)));
  }
  Value splat(Value scalar, ArrayRef<int64_t> shape) {
    return SplatOp::create(b, RankedTensorType::get(shape, scalar.getType()),
                           scalar);
  }
  Value splatF32(double v, ArrayRef<int64_t> shape) {
    return splat(f32(v), shape);
  }
  /// `v` (rank r) with a unit dimension inserted at `axis`, broadcast to `shape`.
  Value broadcastAlong(Value v, unsigned axis, ArrayRef<int64_t> shape) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> unitShape(t.getShape());
    unitShape.insert(unitShape.begin() + axis, 1);
    Value e = ExpandDimsOp::create(
        b, RankedTensorType::get(unitShape, t.getElementType()), v,
        b.getI32IntegerAttr(axis));
    return BroadcastOp::create(
        b, RankedTensorType::get(shape, t.getElementType()), e);
  }
  Value reduce(ReduceKind kind, Value v, unsigned axis) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape.erase(shape.begin() + axis);
    return ReduceOp::create(b, RankedTensorType::get(shape, t.getElementType()),
                            ReduceKindAttr::get(b.getContext(), kind), v,
                            b.getI32IntegerAttr(axis));
  }
  Value isNegInf(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    return arith::CmpFOp::create(
        b, arith::CmpFPredicate::OEQ, v,
        splatF32(-std::numeric_limits<double>::infinity(), t.getShape()));
  }
  Value exp(Value x, bool useExp2) {
    if (!useExp2)
      return math::ExpOp::create(b, x);
    auto t = cast<RankedTensorType>(x.getType());
    return math::Exp2Op::create(
        b, arith::MulFOp::create(b, x, splatF32(kLog2E, t.getShape())));
  }
  Value log(Value x, bool useExp2) {
    if (!useExp2)
      return math::LogOp::create(b, x);
    auto t = cast<RankedTensorType>(x.getType());
    return arith::MulFOp::create(b, math::Log2Op::create(b, x),
                                 splatF32(kLn2, t.getShape()));
  }
  /// scores where `visible` (an i1 tile of the scores' shape), else -inf.
  Value maskScores(Value scores, Value visible) {
    auto t = cast<RankedTensorType>(scores.getType());
    return arith::SelectOp::create(
        b, visible, scores,
        splatF32(-std::numeric_limits<double>::infinity(), t.getShape()));
  }
};

//===----------------------------------------------------------------------===//
// online_softmax
//===----------------------------------------------------------------------===//

struct DecomposeOnlineSoftmax : OpRewritePattern<OnlineSoftmaxOp> {
  DecomposeOnlineSoftmax(MLIRContext *ctx, bool useExp2)
      : OpRewritePattern(ctx), useExp2(useExp2) {}
  bool useExp2;

  LogicalResult matchAndRewrite(OnlineSoftmaxOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileBuilder tb{b};
    auto scoresType = op.getScores().getType();
    ArrayRef<int64_t> shape = scoresType.getShape();
    ArrayRef<int64_t> rows = op.getMax().getType().getShape();
    // Work in log2 units when using exp2: t2 = scores * scale * log2(e).
    double unit = useExp2 ? kLog2E : 1.0;
    Value factor = tb.f32(unit);
    if (op.getScale())
      factor = arith::MulFOp::create(b, op.getScale(), factor);
    Value t = arith::MulFOp::create(b, op.getScores(), tb.splat(factor, shape));
    Value m0 = arith::MulFOp::create(b, op.getMax(), tb.splatF32(unit, rows));
    Value m1 = arith::MaximumFOp::create(b, m0, tb.reduce(ReduceKind::max, t, 1));
    // A row still at -inf subtracts 0 instead, so that exp gives 0, not NaN.
    Value empty = tb.isNegInf(m1);
    Value safe = arith::SelectOp::create(b, empty, tb.splatF32(0, rows), m1);
    Value diff = arith::SubFOp::create(b, t, tb.broadcastAlong(safe, 1, shape));
    Value probs = useExp2 ? Value(math::Exp2Op::create(b, diff))
                          : Value(math::ExpOp::create(b, diff));
    Value alphaDiff = arith::SubFOp::create(b, m0, safe);
    Value alpha = useExp2 ? Value(math::Exp2Op::create(b, alphaDiff))
                          : Value(math::ExpOp::create(b, alphaDiff));
    alpha = arith::SelectOp::create(b, empty, tb.splatF32(1, rows), alpha);
    Value sum = arith::AddFOp::create(
        b, arith::MulFOp::create(b, alpha, op.getSum()),
        tb.reduce(ReduceKind::sum, probs, 1));
    Value newMax =
        useExp2 ? Value(arith::MulFOp::create(b, m1, tb.splatF32(kLn2, rows)))
                : m1;
    rewriter.replaceOp(op, {newMax, sum, probs, alpha});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// lse_combine
//===----------------------------------------------------------------------===//

struct DecomposeLseCombine : OpRewritePattern<LseCombineOp> {
  DecomposeLseCombine(MLIRContext *ctx, bool useExp2)
      : OpRewritePattern(ctx), useExp2(useExp2) {}
  bool useExp2;

  LogicalResult matchAndRewrite(LseCombineOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileBuilder tb{b};
    ArrayRef<int64_t> partsShape = op.getPartials().getType().getShape();
    ArrayRef<int64_t> lsesShape = op.getLses().getType().getShape();
    ArrayRef<int64_t> rows = op.getLse().getType().getShape();
    Value lses = op.getLses();
    Value mx = tb.reduce(ReduceKind::max, lses, 0);
    Value empty = tb.isNegInf(mx);
    Value safe = arith::SelectOp::create(b, empty, tb.splatF32(0, rows), mx);
    Value w = tb.exp(
        arith::SubFOp::create(b, lses, tb.broadcastAlong(safe, 0, lsesShape)),
        useExp2);
    Value sum = tb.reduce(ReduceKind::sum, w, 0);
    Value inv = arith::SelectOp::create(
        b, empty, tb.splatF32(0, rows),
        arith::DivFOp::create(b, tb.splatF32(1, rows), sum));
    Value wn = arith::MulFOp::create(b, w, tb.broadcastAlong(inv, 0, lsesShape));
    // Splits of weight 0 are not read into the sum (their partial may be
    // anything, even NaN).
    Value wn3 = tb.broadcastAlong(wn, 2, partsShape);
    Value zero3 = tb.splatF32(0, partsShape);
    Value skip = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, wn3, zero3);
    Value term = arith::SelectOp::create(
        b, skip, zero3, arith::MulFOp::create(b, wn3, op.getPartials()));
    Value out = tb.reduce(ReduceKind::sum, term, 0);
    Value lse = arith::SelectOp::create(
        b, empty, tb.splatF32(-std::numeric_limits<double>::infinity(), rows),
        arith::AddFOp::create(b, mx, tb.log(sum, useExp2)));
    rewriter.replaceOp(op, {out, lse});
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Score modifiers
//===----------------------------------------------------------------------===//

/// Each row's query position in keys: rows + offset (bottom-right alignment).
Value queryPositions(ImplicitLocOpBuilder &b, TileBuilder &tb, Value rows,
                     Value offset) {
  auto shape = cast<RankedTensorType>(rows.getType()).getShape();
  return arith::AddIOp::create(b, rows, tb.splat(offset, shape));
}

/// The (rows x cols) grids of row and column positions, as i32 tiles.
std::pair<Value, Value> positionGrids(TileBuilder &tb, Value rows, Value cols,
                                      ArrayRef<int64_t> shape) {
  return {tb.broadcastAlong(rows, 1, shape), tb.broadcastAlong(cols, 0, shape)};
}

struct DecomposeLengthMask : OpRewritePattern<LengthMaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LengthMaskOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileBuilder tb{b};
    ArrayRef<int64_t> cols = op.getCols().getType().getShape();
    Value ok = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, op.getCols(),
                                     tb.splat(op.getValid(), cols));
    Value visible = tb.broadcastAlong(ok, 0, op.getType().getShape());
    rewriter.replaceOp(op, tb.maskScores(op.getScores(), visible));
    return success();
  }
};

struct DecomposeCausalMask : OpRewritePattern<CausalMaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CausalMaskOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileBuilder tb{b};
    ArrayRef<int64_t> shape = op.getType().getShape();
    Value q = queryPositions(b, tb, op.getRows(), op.getOffset());
    auto [qg, kg] = positionGrids(tb, q, op.getCols(), shape);
    Value visible = arith::CmpIOp::create(b, arith::CmpIPredicate::sle, kg, qg);
    rewriter.replaceOp(op, tb.maskScores(op.getScores(), visible));
    return success();
  }
};

struct DecomposeWindowMask : OpRewritePattern<WindowMaskOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(WindowMaskOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileBuilder tb{b};
    using P = arith::CmpIPredicate;
    ArrayRef<int64_t> shape = op.getType().getShape();
    ArrayRef<int64_t> rowShape = op.getRows().getType().getShape();
    Value q = queryPositions(b, tb, op.getRows(), op.getOffset());
    // Per row: the first and last visible key; a negative bound is open.
    Value zero = arith::ConstantIntOp::create(b, 0, 32);
    Value leftOpen = arith::CmpIOp::create(b, P::slt, op.getLeft(), zero);
    Value rightOpen = arith::CmpIOp::create(b, P::slt, op.getRight(), zero);
    Value minInt = arith::ConstantIntOp::create(b, INT32_MIN, 32);
    Value maxInt = arith::ConstantIntOp::create(b, INT32_MAX, 32);
    Value left = arith::SelectOp::create(b, leftOpen, zero, op.getLeft());
    Value right = arith::SelectOp::create(b, rightOpen, zero, op.getRight());
    // q - left and q + right saturate (left, right >= 0 here: a result on
    // the wrong side of q wrapped), so a bound past i32's range is open.
    Value lo = arith::SubIOp::create(b, q, tb.splat(left, rowShape));
    Value loOpen = arith::OrIOp::create(
        b, tb.splat(leftOpen, rowShape), arith::CmpIOp::create(b, P::sgt, lo, q));
    lo = arith::SelectOp::create(b, loOpen, tb.splat(minInt, rowShape), lo);
    Value hi = arith::AddIOp::create(b, q, tb.splat(right, rowShape));
    Value hiOpen = arith::OrIOp::create(
        b, tb.splat(rightOpen, rowShape), arith::CmpIOp::create(b, P::slt, hi, q));
    hi = arith::SelectOp::create(b, hiOpen, tb.splat(maxInt, rowShape), hi);
    Value kg = tb.broadcastAlong(op.getCols(), 0, shape);
    Value visible = arith::AndIOp::create(
        b, arith::CmpIOp::create(b, P::sge, kg, tb.broadcastAlong(lo, 1, shape)),
        arith::CmpIOp::create(b, P::sle, kg, tb.broadcastAlong(hi, 1, shape)));
    rewriter.replaceOp(op, tb.maskScores(op.getScores(), visible));
    return success();
  }
};

struct DecomposeSoftcap : OpRewritePattern<SoftcapOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SoftcapOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileBuilder tb{b};
    ArrayRef<int64_t> shape = op.getType().getShape();
    Value s = op.getScores();
    Value inv = arith::DivFOp::create(b, tb.f32(1.0), op.getCap());
    Value t = math::TanhOp::create(
        b, arith::MulFOp::create(b, s, tb.splat(inv, shape)));
    Value capped = arith::MulFOp::create(b, t, tb.splat(op.getCap(), shape));
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, tb.isNegInf(s), s, capped);
    return success();
  }
};

struct DecomposeAlibi : OpRewritePattern<AlibiOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AlibiOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    TileBuilder tb{b};
    ArrayRef<int64_t> shape = op.getType().getShape();
    Value q = queryPositions(b, tb, op.getRows(), op.getOffset());
    auto [qg, kg] = positionGrids(tb, q, op.getCols(), shape);
    // |q - k| as max(q - k, k - q): math.absi would become a libdevice call
    // on the GPU.
    Value dist = arith::MaxSIOp::create(b, arith::SubIOp::create(b, qg, kg),
                                        arith::SubIOp::create(b, kg, qg));
    Value distF = arith::SIToFPOp::create(
        b, RankedTensorType::get(shape, b.getF32Type()), dist);
    Value slopes = tb.broadcastAlong(op.getSlopes(), 1, shape);
    rewriter.replaceOpWithNewOp<arith::SubFOp>(
        op, op.getScores(), arith::MulFOp::create(b, slopes, distF));
    return success();
  }
};

struct FakvDecomposePass
    : public fakv::impl::FakvDecomposeBase<FakvDecomposePass> {
  using FakvDecomposeBase::FakvDecomposeBase;
  void runOnOperation() override {
    // (the parts are built without layouts: after fakv-assign-layouts they would not match their neighbours)
    WalkResult encoded = getOperation()->walk([](Operation *op) {
      if (!isDecomposable(op))
        return WalkResult::advance();
      for (Type t : op->getResultTypes())
        if (auto tile = dyn_cast<RankedTensorType>(t); tile && tile.getEncoding()) {
          op->emitOpError() << "has a GPU layout: fakv-decompose runs before fakv-assign-layouts";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (encoded.wasInterrupted())
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    populateFakvDecomposePatterns(patterns, useExp2);
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns),
                                     config)))
      return signalPassFailure();
    saturateFloatToInt(getOperation());
  }
};
} // namespace

void mlir::fakv::saturateFloatToInt(Operation *root) {
  constexpr StringLiteral kSaturated = FakvDialect::getSaturatedAttrName();
  SmallVector<arith::FPToSIOp> ops;
  root->walk([&](arith::FPToSIOp op) {
    if (!op->hasAttr(kSaturated))
      ops.push_back(op);
  });
  for (arith::FPToSIOp op : ops) {
    ImplicitLocOpBuilder b(op.getLoc(), op);
    Type from = getElementTypeOrSelf(op.getIn().getType());
    auto to = cast<IntegerType>(getElementTypeOrSelf(op.getType()));
    auto like = [&](Type shaped, TypedAttr scalar) -> Value {
      if (auto t = dyn_cast<ShapedType>(shaped))
        return arith::ConstantOp::create(b, DenseElementsAttr::get(t.clone(scalar.getType()), scalar));
      return arith::ConstantOp::create(b, scalar);
    };
    unsigned w = to.getWidth();
    auto bound = [&](bool neg) {       // -2^(w-1) and 2^(w-1): exact in binary floats (or +-inf in f16)
      APFloat v(std::ldexp(neg ? -1.0 : 1.0, w - 1));
      bool lost;
      v.convert(cast<FloatType>(from).getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      return like(op.getIn().getType(), FloatAttr::get(from, v));
    };
    using P = arith::CmpFPredicate;
    Value x = op.getIn();
    auto convert = arith::FPToSIOp::create(b, op.getType(), x);
    convert->setAttr(kSaturated, b.getUnitAttr());
    // (each operand a statement of its own: the IR's order does not hang on C++'s order of arguments)
    Value r = convert;
    for (auto [pred, neg, value] : {std::tuple(P::OGE, false, APInt::getSignedMaxValue(w)),
                                    std::tuple(P::OLE, true, APInt::getSignedMinValue(w))}) {
      Value limit = bound(neg);
      Value past = arith::CmpFOp::create(b, pred, x, limit);
      Value saturated = like(op.getType(), IntegerAttr::get(to, value));
      r = arith::SelectOp::create(b, past, saturated, r);
    }
    Value nan = arith::CmpFOp::create(b, P::UNO, x, x);
    Value zero = like(op.getType(), IntegerAttr::get(to, 0));
    r = arith::SelectOp::create(b, nan, zero, r);
    op.replaceAllUsesWith(r);
    op.erase();
  }
}

bool mlir::fakv::isDecomposable(Operation *op) {
  return isa<OnlineSoftmaxOp, LseCombineOp, LengthMaskOp, CausalMaskOp, WindowMaskOp, SoftcapOp, AlibiOp>(op);
}

void mlir::fakv::populateFakvDecomposePatterns(RewritePatternSet &patterns,
                                               bool useExp2) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<DecomposeOnlineSoftmax, DecomposeLseCombine>(ctx, useExp2);
  patterns.add<DecomposeLengthMask, DecomposeCausalMask, DecomposeWindowMask,
               DecomposeSoftcap, DecomposeAlibi>(ctx);
}
