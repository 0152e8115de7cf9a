//===- GuardCPUDivision.cpp - integer division faults on the host ---------===//
//
// fakv-guard-cpu-division (Passes.td): a kernel that divides an integer by
// zero on the CPU path would take the process down with SIGFPE. Each
// division whose divisor may be 0 (or -1 with a signed dividend of INT_MIN)
// divides by 1 instead and records the fault in the global
// `fakv_cpu_fault`, which the launcher reads and clears after the kernel.
//
//===----------------------------------------------------------------------===//

#include "lowering/CPUCodegen.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Matchers.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGUARDCPUDIVISION
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {

/// Whether dividing by `divisor` can trap: unless it is a constant other
/// than 0 (and, for a signed division, other than -1).
bool mayTrap(Value divisor, bool isSigned) {
  APInt c;
  if (!matchPattern(divisor, m_ConstantInt(&c)))
    return true;
  return c.isZero() || (isSigned && c.isAllOnes());
}

void guard(Operation *op, bool isSigned, LLVM::GlobalOp fault) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Type t = rhs.getType();
  if (!t.isIntOrIndex() || !mayTrap(rhs, isSigned))
    return;
  OpBuilder b(op);
  Location loc = op->getLoc();
  auto cst = [&](int64_t v) -> Value {
    return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, v));
  };
  Value bad = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, cst(0));
  if (isSigned) {
    unsigned width = t.isIndex() ? 64 : t.getIntOrFloatBitWidth();
    Value intMin = arith::ConstantOp::create(
        b, loc, t, b.getIntegerAttr(t, APInt::getSignedMinValue(width)));
    Value overflow = arith::AndIOp::create(
        b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lhs, intMin),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rhs, cst(-1)));
    bad = arith::OrIOp::create(b, loc, bad, overflow);
  }
  op->setOperand(1, arith::SelectOp::create(b, loc, bad, cst(1), rhs));
  // fakv_cpu_fault |= bad
  fakv::cpu::orIntoFault(b, loc, fault, [&] { return arith::ExtUIOp::create(b, loc, b.getI32Type(), bad); });
}

struct FakvGuardCPUDivisionPass
    : public fakv::impl::FakvGuardCPUDivisionBase<FakvGuardCPUDivisionPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<Operation *, bool>> divisions;
    module.walk([&](Operation *op) {
      if (isa<arith::DivSIOp, arith::RemSIOp>(op))
        divisions.push_back({op, true});
      else if (isa<arith::DivUIOp, arith::RemUIOp>(op))
        divisions.push_back({op, false});
    });
    if (divisions.empty())
      return;
    LLVM::GlobalOp fault = fakv::cpu::faultGlobal(module);
    for (auto [op, isSigned] : divisions)
      guard(op, isSigned, fault);
  }
};
} // namespace
