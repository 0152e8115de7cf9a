//===- PointerLowering.cpp - fakv pointers to LLVM, CPU and GPU -----------===//

#include "lowering/PointerLowering.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fakv;

Value mlir::fakv::elementAddress(OpBuilder &b, Location loc, Value base,
                                 Value index, Type elementType) {
  return LLVM::GEPOp::create(b, loc, base.getType(), elementType, base,
                             ValueRange{index});
}

void mlir::fakv::reportIf(OpBuilder &b, Location loc, Value error, Value cond,
                          Value code) {
  auto ifOp = scf::IfOp::create(b, loc, cond, /*withElseRegion=*/false);
  OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
  LLVM::StoreOp::create(tb, loc, code, error, /*alignment=*/4, /*isVolatile=*/true);
}

namespace {

struct AddPtrLowering : OpConversionPattern<AddPtrOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AddPtrOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, elementAddress(rewriter, op.getLoc(), a.getPtr(),
                                          a.getOffset(),
                                          op.getType().getElementType()));
    return success();
  }
};

struct LoadScalarLowering : OpConversionPattern<LoadScalarOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoadScalarOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value index = arith::ExtSIOp::create(rewriter, loc, rewriter.getI64Type(),
                                         a.getIndex());
    Value addr = elementAddress(rewriter, loc, a.getPtr(), index, op.getType());
    rewriter.replaceOpWithNewOp<LLVM::LoadOp>(op, op.getType(), addr);
    return success();
  }
};

struct ReportLowering : OpConversionPattern<ReportOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ReportOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    reportIf(rewriter, op.getLoc(), a.getError(), a.getCond(), a.getCode());
    rewriter.eraseOp(op);
    return success();
  }
};

/// One of two pointers (arith.select, what scf.if's canonicalisation makes
/// of `A if c else B`): the same select over the converted pointers.
struct SelectPointerLowering : OpConversionPattern<arith::SelectOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(arith::SelectOp op, OpAdaptor a,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<PtrType>(op.getType()))
      return failure();
    rewriter.replaceOpWithNewOp<arith::SelectOp>(op, a.getCondition(), a.getTrueValue(),
                                                 a.getFalseValue());
    return success();
  }
};

} // namespace

void mlir::fakv::populatePointerLoweringPatterns(const TypeConverter &converter,
                                                 RewritePatternSet &patterns) {
  patterns.add<AddPtrLowering, LoadScalarLowering, ReportLowering, SelectPointerLowering>(
      converter, patterns.getContext());
}
