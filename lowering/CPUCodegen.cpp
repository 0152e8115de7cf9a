//===- CPUCodegen.cpp - shared helpers of the fakv -> CPU lowering --------===//

#include "lowering/CPUCodegen.h"
#include "lowering/PointerLowering.h"
#include "lowering/ReduceCombine.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/FunctionCallUtils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::cpu;

Value cpu::cstI32(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, v, 32);
}
Value cpu::cstI64(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIntOp::create(b, v, 64);
}
Value cpu::cstIndex(ImplicitLocOpBuilder &b, int64_t v) {
  return arith::ConstantIndexOp::create(b, v);
}
Value cpu::zeroOf(ImplicitLocOpBuilder &b, Type t) {
  return arith::ConstantOp::create(b, t, b.getZeroAttr(t));
}
Value cpu::indexToI32(ImplicitLocOpBuilder &b, Value v) {
  return arith::IndexCastOp::create(b, b.getI32Type(), v);
}
Value cpu::indexToI64(ImplicitLocOpBuilder &b, Value v) {
  return arith::IndexCastOp::create(b, b.getI64Type(), v);
}
Value cpu::i32ToI64(ImplicitLocOpBuilder &b, Value v) {
  return arith::ExtSIOp::create(b, b.getI64Type(), v);
}
Value cpu::toF32(ImplicitLocOpBuilder &b, Value v) {
  if (v.getType().isF32())
    return v;
  return arith::ExtFOp::create(b, b.getF32Type(), v);
}
Value cpu::fromF32(ImplicitLocOpBuilder &b, Value v, Type t) {
  if (t.isF32())
    return v;
  return arith::TruncFOp::create(b, t, v);
}

/// Element `idx` (i64, in elements) of the array at `base`.
Value cpu::elementAddress(ImplicitLocOpBuilder &b, Value base, Value idx,
                     Type elementType) {
  return fakv::elementAddress(b, b.getLoc(), base, idx, elementType);
}

/// `scf.if cond { then() } else { otherwise() }` yielding one value of `t`.
Value cpu::select(ImplicitLocOpBuilder &b, Value cond,
             function_ref<Value(ImplicitLocOpBuilder &)> then,
             function_ref<Value(ImplicitLocOpBuilder &)> otherwise) {
  auto ifOp = scf::IfOp::create(
      b, cond,
      [&](OpBuilder &ob, Location loc) {
        ImplicitLocOpBuilder ib(loc, ob);
        scf::YieldOp::create(ib, then(ib));
      },
      [&](OpBuilder &ob, Location loc) {
        ImplicitLocOpBuilder ib(loc, ob);
        scf::YieldOp::create(ib, otherwise(ib));
      });
  return ifOp.getResult(0);
}

/// Stops the program with `message` on stderr unless `ok`: a guard against
/// reading outside a buffer. (cf.assert prints to stdout, which is lost when
/// buffered output meets abort().)
void cpu::emitRuntimeCheck(ImplicitLocOpBuilder &b, ModuleOp module, Value ok,
                      StringRef message) {
  MLIRContext *ctx = b.getContext();
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto writeFn = LLVM::lookupOrCreateFn(b, module, "write", {i32, ptr, i64}, i64);
  auto abortFn = LLVM::lookupOrCreateFn(b, module, "abort", {},
                                        LLVM::LLVMVoidType::get(ctx));
  std::string text = ("fakv: " + message + "\n").str();
  std::string name = "__fakv_check_" + llvm::utohexstr(llvm::hash_value(text));
  auto arrayType = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  if (!module.lookupSymbol(name)) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    LLVM::GlobalOp::create(b, arrayType, /*isConstant=*/true,
                           LLVM::Linkage::Internal, name,
                           b.getStringAttr(text));
  }
  Value failed = arith::XOrIOp::create(
      b, ok, arith::ConstantIntOp::create(b, 1, 1));
  auto ifOp = scf::IfOp::create(b, failed, /*withElseRegion=*/false);
  ImplicitLocOpBuilder tb =
      ImplicitLocOpBuilder::atBlockBegin(b.getLoc(), &ifOp.getThenRegion().front());
  Value msg = LLVM::AddressOfOp::create(tb, ptr, name);
  Value stderrFd = arith::ConstantIntOp::create(tb, 2, 32);
  Value len = arith::ConstantIntOp::create(tb, text.size(), 64);
  LLVM::CallOp::create(tb, *writeFn, ValueRange{stderrFd, msg, len});
  LLVM::CallOp::create(tb, *abortFn, ValueRange{});
}

RankedTensorType cpu::plain(RankedTensorType t) {
  return RankedTensorType::get(t.getShape(), t.getElementType());
}

/// A tensor.generate over `type`'s shape whose element at `ivs` is `body`.
Value cpu::generate(ImplicitLocOpBuilder &b, RankedTensorType type,
               function_ref<Value(ImplicitLocOpBuilder &, ValueRange)> body) {
  return tensor::GenerateOp::create(
      b, plain(type), ValueRange{},
      [&](OpBuilder &ob, Location loc, ValueRange ivs) {
        ImplicitLocOpBuilder ib(loc, ob);
        tensor::YieldOp::create(ib, body(ib, ivs));
      });
}

/// An all-parallel linalg.generic producing `type` from `inputs`, each read
/// through its indexing map; `body` maps the input elements to the output.
Value cpu::mapTiles(ImplicitLocOpBuilder &b, RankedTensorType type,
               ValueRange inputs, ArrayRef<AffineMap> maps,
               function_ref<Value(ImplicitLocOpBuilder &, ValueRange)> body) {
  type = plain(type);
  Value init = tensor::EmptyOp::create(b, type.getShape(), type.getElementType());
  SmallVector<AffineMap> allMaps(maps);
  allMaps.push_back(b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iters(type.getRank(),
                                         utils::IteratorType::parallel);
  auto op = linalg::GenericOp::create(
      b, TypeRange{type}, inputs, ValueRange{init}, allMaps, iters,
      [&](OpBuilder &ob, Location loc, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, ob);
        linalg::YieldOp::create(ib, body(ib, args.drop_back()));
      });
  return op.getResult(0);
}

/// Reduce `src` along `axis` with `kind`. A float sum adds in f64, rounded
/// once to the element type: linalg.reduce adds in index order, and in f32
/// that drifted from the exact sum (15 % at 2^24 elements of 0.1, 6e-4 at
/// 65,536); the GPU adds as a tree.
Value cpu::reduceTile(ImplicitLocOpBuilder &b, Value src, int64_t axis,
                 ReduceKind kind) {
  auto srcType = cast<RankedTensorType>(src.getType());
  Type et = srcType.getElementType();
  SmallVector<int64_t> shape(srcType.getShape());
  shape.erase(shape.begin() + axis);
  Type acc = kind == ReduceKind::sum && isa<FloatType>(et) && et.getIntOrFloatBitWidth() < 64
                 ? b.getF64Type() : et;
  Value initScalar;
  if (auto intType = dyn_cast<IntegerType>(acc)) {      // (i32: signed max / min, wrapping sum)
    unsigned w = intType.getWidth();
    APInt initValue = kind == ReduceKind::max   ? APInt::getSignedMinValue(w)
                      : kind == ReduceKind::min ? APInt::getSignedMaxValue(w)
                                                : APInt::getZero(w);
    initScalar = arith::ConstantOp::create(b, IntegerAttr::get(intType, initValue));
  } else {
    auto floatType = cast<FloatType>(acc);
    // (a sum from -0.0, the additive identity that keeps signs: of -0.0s it is -0.0, as the GPU's, which
    // starts from the first element, gives it; +0.0 made it +0.0)
    APFloat initValue = APFloat::getZero(floatType.getFloatSemantics(), /*Negative=*/true);
    if (kind == ReduceKind::max)
      initValue = APFloat::getInf(floatType.getFloatSemantics(), /*neg=*/true);
    if (kind == ReduceKind::min)
      initValue = APFloat::getInf(floatType.getFloatSemantics(), /*neg=*/false);
    initScalar = arith::ConstantFloatOp::create(b, floatType, initValue);
  }
  Value init = tensor::SplatOp::create(b, RankedTensorType::get(shape, acc), initScalar);
  auto op = linalg::ReduceOp::create(
      b, ValueRange{src}, ValueRange{init}, ArrayRef<int64_t>{axis},
      [&](OpBuilder &ob, Location loc, ValueRange args) {
        ImplicitLocOpBuilder ib(loc, ob);
        Value x = acc == et ? args[0] : Value(arith::ExtFOp::create(ib, acc, args[0]));
        linalg::YieldOp::create(ib, combineReduced(ib, loc, kind, x, args[1]));
      });
  if (acc == et)
    return op.getResult(0);
  auto resultType = RankedTensorType::get(shape, et);
  return mapTiles(b, resultType, op.getResult(0), b.getMultiDimIdentityMap(resultType.getRank()),
                  [&](ImplicitLocOpBuilder &ib, ValueRange xs) -> Value {
                    return arith::TruncFOp::create(ib, et, xs[0]);
                  });
}

LLVM::GlobalOp cpu::faultGlobal(ModuleOp module) {
  constexpr llvm::StringLiteral name = "fakv_cpu_fault";
  if (auto fault = module.lookupSymbol<LLVM::GlobalOp>(name))
    return fault;
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  return LLVM::GlobalOp::create(b, module.getLoc(), b.getI32Type(), /*isConstant=*/false,
                                LLVM::Linkage::External, name, b.getI32IntegerAttr(0));
}

void cpu::orIntoFault(OpBuilder &b, Location loc, LLVM::GlobalOp fault, function_ref<Value()> bits) {
  Value addr = LLVM::AddressOfOp::create(b, loc, fault);
  Value old = LLVM::LoadOp::create(b, loc, b.getI32Type(), addr);
  LLVM::StoreOp::create(b, loc, arith::OrIOp::create(b, loc, old, bits()), addr);
}
