//===- GuardCPUDivision.cpp - integer division faults on the host ---------===//
//
// fakv-guard-cpu-division (Passes.td): a kernel that divides an integer by
// zero on the CPU path would take the process down with SIGFPE. Each
// division whose divisor may be 0 (or -1 with a signed dividend of INT_MIN)
// divides by 1 instead and records the fault in the global
// `fakv_cpu_fault`, which the launcher reads and clears after the kernel.
//
// The CPU pipeline runs it twice: on the tile program, before the first
// canonicalizer (which would drop a division whose result is unused or
// folded away, `(a // b) * 0`: Python raises there, so must we), where a
// division of tiles is checked element by element and reduced to one flag;
// and again after fakv-expand-arith-cpu, for the divisions that lowering made.
// A division checked once carries `fakv_cpu.divisor_checked` and is not checked
// again.
//
//===----------------------------------------------------------------------===//

#include "lowering/CPUCodegen.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGUARDCPUDIVISION
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kChecked = "fakv_cpu.divisor_checked";

/// Whether dividing by `divisor` can trap: unless it is a constant (a
/// scalar, or a tile of constants) with no element 0 (and, for a signed
/// division, none -1).
bool mayTrap(Value divisor, bool isSigned) {
  auto unsafe = [&](const APInt &c) { return c.isZero() || (isSigned && c.isAllOnes()); };
  APInt c;
  if (matchPattern(divisor, m_ConstantInt(&c)))
    return unsafe(c);
  DenseIntElementsAttr elements;
  if (matchPattern(divisor, m_Constant(&elements)))
    return llvm::any_of(elements.getValues<APInt>(), unsafe);
  return true;
}

/// `bad`, a tile of flags, reduced to one: whether any is set.
Value anyOf(OpBuilder &b, Location loc, Value bad) {
  auto type = cast<RankedTensorType>(bad.getType());
  Type i1 = b.getI1Type();
  Value init = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{}, i1);
  Value none = arith::ConstantIntOp::create(b, loc, 0, 1);
  init = linalg::FillOp::create(b, loc, none, init).getResult(0);
  SmallVector<int64_t> dims = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  auto reduce = linalg::ReduceOp::create(
      b, loc, ValueRange{bad}, ValueRange{init}, dims,
      [](OpBuilder &nb, Location nl, ValueRange args) {
        linalg::YieldOp::create(nb, nl, ValueRange{arith::OrIOp::create(nb, nl, args[0], args[1])});
      });
  return tensor::ExtractOp::create(b, loc, reduce.getResult(0), ValueRange{});
}

void guard(Operation *op, bool isSigned, LLVM::GlobalOp fault) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Type t = rhs.getType();
  Type elem = getElementTypeOrSelf(t);
  auto tile = dyn_cast<RankedTensorType>(t);
  if (op->hasAttr(kChecked) || !elem.isIntOrIndex() || (!tile && t != elem) || !mayTrap(rhs, isSigned))
    return;
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto cst = [&](const APInt &v) -> Value {
    TypedAttr scalar = b.getIntegerAttr(elem, v);
    if (tile)
      return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(tile, scalar));
    return arith::ConstantOp::create(b, loc, scalar);
  };
  unsigned width = elem.isIndex() ? 64 : elem.getIntOrFloatBitWidth();
  auto eq = [&](Value x, Value y) -> Value { return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, y); };
  Value bad = eq(rhs, cst(APInt(width, 0)));
  if (isSigned)
    bad = arith::OrIOp::create(
        b, loc, bad,
        arith::AndIOp::create(b, loc, eq(lhs, cst(APInt::getSignedMinValue(width))),
                              eq(rhs, cst(APInt::getAllOnes(width)))));
  op->setOperand(1, arith::SelectOp::create(b, loc, bad, cst(APInt(width, 1)), rhs));
  op->setAttr(kChecked, b.getUnitAttr());
  // fakv_cpu_fault |= bad (for a tile: whether any element is)
  Value any = tile ? anyOf(b, loc, bad) : bad;
  fakv::cpu::orIntoFault(b, loc, fault, [&] { return arith::ExtUIOp::create(b, loc, b.getI32Type(), any); });
}

struct FakvGuardCPUDivisionPass
    : public fakv::impl::FakvGuardCPUDivisionBase<FakvGuardCPUDivisionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<Operation *, bool>> divisions;
    module.walk([&](Operation *op) {
      if (isa<arith::DivSIOp, arith::RemSIOp, arith::FloorDivSIOp, arith::CeilDivSIOp>(op))
        divisions.push_back({op, true});
      else if (isa<arith::DivUIOp, arith::RemUIOp, arith::CeilDivUIOp>(op))
        divisions.push_back({op, false});
    });
    if (divisions.empty())
      return;
    // (its guard's constants are dense splats: of a dynamically shaped tensor they were IR that did not parse)
    for (auto [op, isSigned] : divisions)
      if (auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType()); t && !t.hasStaticShape()) {
        op->emitOpError() << "divides tensors of a dynamic shape (" << t
                          << "): the CPU path's tiles have static shapes";
        return signalPassFailure();
      }
    LLVM::GlobalOp fault = fakv::cpu::faultGlobal(module);
    for (auto [op, isSigned] : divisions)
      guard(op, isSigned, fault);
  }
};
} // namespace
