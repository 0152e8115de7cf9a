//===- PointerLowering.cpp - fakv pointers to LLVM, CPU and GPU -----------===//

#include "lowering/PointerLowering.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::fakv;

Value mlir::fakv::elementAddress(OpBuilder &b, Location loc, Value base,
                                 Value index, Type elementType) {
  return LLVM::GEPOp::create(b, loc, base.getType(), elementType, base,
                             ValueRange{index});
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

} // namespace

void mlir::fakv::populatePointerLoweringPatterns(const TypeConverter &converter,
                                                 RewritePatternSet &patterns) {
  patterns.add<AddPtrLowering, LoadScalarLowering>(converter,
                                                   patterns.getContext());
}
