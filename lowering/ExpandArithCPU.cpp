//===- ExpandArithCPU.cpp - arith ops the CPU path's LLVM lowering lacks --===//
//
// fakv-expand-arith-cpu (Passes.td): arith-expand-ops' bf16 and ceil/floor
// division patterns, without its maximumf / minimumf ones (a compare and a
// select: maximum(+0.0, -0.0) was -0.0); arith-to-llvm takes those. Before
// the bf16 expansion, conversions to bf16 from f64 and from integers are
// made to round once, as the GPU's cvt.rn.bf16.{f64,s32,s64} do.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVEXPANDARITHCPU
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {
using P = arith::CmpFPredicate;

/// `t`, a value rounded to nearest, as that value rounded to odd instead:
/// toward zero, the last bit set where it was inexact. `inexact`: whether
/// `t` differs from the value; `away`: whether `t` is farther from zero. A
/// value rounded to odd at two bits or more beyond bf16's then rounds to
/// nearest as if once.
static Value roundedToOdd(ImplicitLocOpBuilder &b, Value t, Value inexact, Value away) {
  Type bitsType = b.getIntegerType(t.getType().getIntOrFloatBitWidth());
  Value bits = arith::BitcastOp::create(b, bitsType, t);
  Value one = arith::ConstantIntOp::create(b, bitsType, 1);
  Value toward = arith::SelectOp::create(b, away, arith::SubIOp::create(b, bits, one), bits);
  Value odd = arith::OrIOp::create(b, toward, one);
  return arith::BitcastOp::create(b, t.getType(), arith::SelectOp::create(b, inexact, odd, bits));
}

static Value zeroLike(ImplicitLocOpBuilder &b, Value x) {
  return arith::ConstantFloatOp::create(b, cast<FloatType>(x.getType()), APFloat::getZero(
      cast<FloatType>(x.getType()).getFloatSemantics()));
}

/// An f64 -> bf16 truncation through f32 rounded to odd: rounding that to
/// bf16 rounds once (arith's bf16 expansion narrows to f32 to nearest first,
/// a second rounding: 1 + 2^-8 + 2^-30 gave 1, not 1 + 2^-7).
struct TruncF64ToBF16Once : OpRewritePattern<arith::TruncFOp> {
  TruncF64ToBF16Once(MLIRContext *ctx) : OpRewritePattern(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(arith::TruncFOp op, PatternRewriter &rewriter) const override {
    if (!op.getIn().getType().isF64() || !op.getType().isBF16())
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value x = op.getIn();
    Value t = arith::TruncFOp::create(b, b.getF32Type(), x);
    Value back = arith::ExtFOp::create(b, b.getF64Type(), t);
    Value inexact = arith::CmpFOp::create(b, P::ONE, back, x);  // (never for NaN)
    Value zero = zeroLike(b, x);
    Value away = arith::SelectOp::create(b, arith::CmpFOp::create(b, P::OGT, x, zero),
                                         arith::CmpFOp::create(b, P::OGT, back, x),
                                         arith::CmpFOp::create(b, P::OLT, back, x));
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), roundedToOdd(b, t, inexact, away));
    return success();
  }
};

/// An integer -> bf16 conversion rounded once: through f32 up to 24 bits
/// (exact there), else through f64 (exact up to 32 bits; an i64 as its two
/// halves' sum rounded to odd, from the sum's exact error) and
/// TruncF64ToBF16Once. (Through f32 to nearest, 16842753 gave 2^24, not the
/// 16908288 a constexpr of it folds to.)
template <typename ToFloat>
struct IntToBF16Once : OpRewritePattern<ToFloat> {
  IntToBF16Once(MLIRContext *ctx) : OpRewritePattern<ToFloat>(ctx, /*benefit=*/2) {}
  LogicalResult matchAndRewrite(ToFloat op, PatternRewriter &rewriter) const override {
    auto from = dyn_cast<IntegerType>(op.getIn().getType());
    constexpr bool isSigned = std::is_same_v<ToFloat, arith::SIToFPOp>;
    if (!from || !op.getType().isBF16() || from.getWidth() > (isSigned ? 64u : 32u))
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type f64 = b.getF64Type();
    if (from.getWidth() <= 24) {              // (exact in f32: rounded once from there)
      rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(),
                                                   ToFloat::create(b, b.getF32Type(), op.getIn()));
      return success();
    }
    Value d;
    if (from.getWidth() <= 32) {
      d = ToFloat::create(b, f64, op.getIn());
    } else {                                  // (a signed i64)
      Value x = op.getIn();
      Value hi = arith::ShRSIOp::create(b, x, arith::ConstantIntOp::create(b, from, 32));
      Value lo = arith::AndIOp::create(b, x, arith::ConstantIntOp::create(b, from, 0xffffffffLL));
      Value scale = arith::ConstantFloatOp::create(b, cast<FloatType>(f64), APFloat(4294967296.0));
      Value high = arith::MulFOp::create(b, arith::SIToFPOp::create(b, f64, hi), scale);  // (exact)
      Value low = arith::UIToFPOp::create(b, f64, lo);                                     // (exact)
      Value sum = arith::AddFOp::create(b, high, low);
      // |high| >= 2^32 > low unless high is 0 (then the sum is exact): the error is low - (sum - high).
      Value err = arith::SubFOp::create(b, low, arith::SubFOp::create(b, sum, high));
      Value zero = zeroLike(b, sum);
      Value inexact = arith::CmpFOp::create(b, P::ONE, err, zero);
      Value away = arith::SelectOp::create(b, arith::CmpFOp::create(b, P::OGT, sum, zero),
                                           arith::CmpFOp::create(b, P::OLT, err, zero),
                                           arith::CmpFOp::create(b, P::OGT, err, zero));
      d = roundedToOdd(b, sum, inexact, away);
    }
    rewriter.replaceOpWithNewOp<arith::TruncFOp>(op, op.getType(), d);
    return success();
  }
};

struct FakvExpandArithCPUPass : public fakv::impl::FakvExpandArithCPUBase<FakvExpandArithCPUPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<TruncF64ToBF16Once, IntToBF16Once<arith::SIToFPOp>, IntToBF16Once<arith::UIToFPOp>>(
        &getContext());
    arith::populateCeilFloorDivExpandOpsPatterns(patterns);
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
