//===- GuardCPUMemory.cpp - kernels' memory accesses checked on the host --===//
//
// fakv-guard-cpu-memory (Passes.td): on the CPU path a kernel reads and
// writes the host's memory through raw addresses, so an access outside the
// arrays it was given (a load or store without `bounds=` / `mask=`) would
// read garbage or corrupt the Python process. Right after
// convert-fakv-to-cpu every llvm.load / llvm.store is the kernel's (the
// lowering's own buffers come later): each runs only when its bytes lie in
// one of the ranges the launcher lists in the global `fakv_cpu_extents`
// (i64 count, then the address of count pairs [lo, hi) of i64, the
// launcher's; bit 63 of lo marks a range that is read only: no store there;
// an access whose last byte wraps past 2^64 lies in none); otherwise a load gives 0, a store does
// nothing, and 2 is or-ed into `fakv_cpu_fault`, which the launcher
// reads after the kernel (fakv.DataError). A count of 0 checks nothing
// (mlir-runner's tests, and calls whose arrays have no known extent).
//
//===----------------------------------------------------------------------===//

#include "lowering/CPUCodegen.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGUARDCPUMEMORY
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;

namespace {
constexpr llvm::StringLiteral kExtentsGlobal = "fakv_cpu_extents";
constexpr llvm::StringLiteral kCheckFunc = "fakv_cpu_in_extents";
constexpr int32_t kMemoryFault = 2;     // fakv_cpu_fault's bit (1: an integer division)

/// func.func @fakv_cpu_in_extents(%addr: !llvm.ptr, %bytes: i64, %store: i1)
/// -> i1: whether [addr, addr + bytes) lies in one of the extents, one that
/// may be written for a store (or none are set).
func::FuncOp buildCheck(OpBuilder &b, Location loc, LLVM::GlobalOp extents) {
  MLIRContext *ctx = b.getContext();
  Type i64 = b.getI64Type(), i1 = b.getI1Type(), ptr = LLVM::LLVMPointerType::get(ctx);
  auto func = func::FuncOp::create(b, loc, kCheckFunc, b.getFunctionType({ptr, i64, i1}, {i1}));
  func.setPrivate();
  Block *entry = func.addEntryBlock();
  OpBuilder fb = OpBuilder::atBlockBegin(entry);
  auto cst = [&](int64_t v) -> Value { return arith::ConstantIntOp::create(fb, loc, v, 64); };
  auto word = [&](OpBuilder &ob, Value base, Value index) -> Value {
    Value at = LLVM::GEPOp::create(ob, loc, ptr, i64, base, ValueRange{index});
    return LLVM::LoadOp::create(ob, loc, i64, at);
  };
  Value global = LLVM::AddressOfOp::create(fb, loc, extents);
  Value count = word(fb, global, cst(0));
  // (the pairs where the launcher keeps them: any number of arrays; a table in the global held 64, and a
  // launch of more checked nothing)
  Value base = LLVM::IntToPtrOp::create(fb, loc, ptr, word(fb, global, cst(1)));
  Value lo = LLVM::PtrToIntOp::create(fb, loc, i64, entry->getArgument(0));
  Value hi = arith::AddIOp::create(fb, loc, lo, entry->getArgument(1));
  // (an access whose end wraps past 2^64, a stride that reached the top of the address space, lies in no
  // array: its end of 0 or so passed `hi <= to`, and the store segfaulted)
  Value wraps = arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::ult, hi, lo);
  Value none = arith::CmpIOp::create(fb, loc, arith::CmpIPredicate::eq, count, cst(0));
  auto loop = scf::ForOp::create(
      fb, loc, cst(0), count, cst(1), ValueRange{none},
      [&](OpBuilder &lb, Location, Value i, ValueRange found) {
        Value at = arith::MulIOp::create(lb, loc, i, cst(2));
        Value tagged = word(lb, base, at);
        Value from = arith::AndIOp::create(lb, loc, tagged, cst(INT64_MAX));
        Value readOnly = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::slt, tagged, cst(0));
        Value to = word(lb, base, arith::AddIOp::create(lb, loc, at, cst(1)));
        Value fromLo = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::uge, lo, from);
        Value toHi = arith::CmpIOp::create(lb, loc, arith::CmpIPredicate::ule, hi, to);
        Value refused = arith::OrIOp::create(
            lb, loc, arith::AndIOp::create(lb, loc, readOnly, entry->getArgument(2)), wraps);
        Value inside = arith::AndIOp::create(
            lb, loc, arith::AndIOp::create(lb, loc, fromLo, toHi),
            arith::XOrIOp::create(lb, loc, refused, arith::ConstantIntOp::create(lb, loc, 1, 1)));
        scf::YieldOp::create(lb, loc, ValueRange{arith::OrIOp::create(lb, loc, found[0], inside)});
      });
  func::ReturnOp::create(fb, loc, loop.getResult(0));
  return func;
}

/// `op` (an llvm.load or llvm.store of `type` at `addr`) only where the
/// check passes; else the fault bit set (and a load's value 0).
void guard(Operation *op, Value addr, Type type, func::FuncOp check, LLVM::GlobalOp fault) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  int64_t bytes = (type.getIntOrFloatBitWidth() + 7) / 8;
  Value store = arith::ConstantIntOp::create(b, loc, isa<LLVM::StoreOp>(op), 1);
  Value ok = func::CallOp::create(b, loc, check,
                                  ValueRange{addr, arith::ConstantIntOp::create(b, loc, bytes, 64), store})
                 .getResult(0);
  auto record = [&](OpBuilder &eb) {
    fakv::cpu::orIntoFault(eb, loc, fault, [&] { return arith::ConstantIntOp::create(eb, loc, kMemoryFault, 32); });
  };
  if (auto load = dyn_cast<LLVM::LoadOp>(op)) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{type}, ok, /*withElseRegion=*/true);
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    Operation *moved = tb.clone(*load);
    scf::YieldOp::create(tb, loc, moved->getResults());
    OpBuilder eb = OpBuilder::atBlockBegin(&ifOp.getElseRegion().front());
    record(eb);
    Value zero = arith::ConstantOp::create(eb, loc, cast<TypedAttr>(eb.getZeroAttr(type)));
    scf::YieldOp::create(eb, loc, zero);
    load.getResult().replaceAllUsesWith(ifOp.getResult(0));
    load.erase();
    return;
  }
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{}, ok, /*withElseRegion=*/true);
  op->moveBefore(ifOp.getThenRegion().front().getTerminator());
  OpBuilder eb(ifOp.getElseRegion().front().getTerminator());
  record(eb);
}

struct FakvGuardCPUMemoryPass
    : public fakv::impl::FakvGuardCPUMemoryBase<FakvGuardCPUMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (module.lookupSymbol(kExtentsGlobal))   // (guarded already)
      return;
    SmallVector<std::tuple<Operation *, Value, Type>> accesses;
    WalkResult refused = module.walk([&](Operation *op) {
      Value addr;
      if (auto load = dyn_cast<LLVM::LoadOp>(op))
        accesses.push_back({op, addr = load.getAddr(), load.getType()});
      else if (auto store = dyn_cast<LLVM::StoreOp>(op))
        accesses.push_back({op, addr = store.getAddr(), store.getValue().getType()});
      if (!addr)
        return WalkResult::advance();
      // The check it calls is the module's, over host addresses (a session 54 fuzz: an access through
      // another address space, or inside a nested module, became a call that failed the verifier).
      if (auto ptr = dyn_cast<LLVM::LLVMPointerType>(addr.getType()); ptr && ptr.getAddressSpace() != 0) {
        op->emitOpError() << "accesses address space " << ptr.getAddressSpace()
                          << ": fakv-guard-cpu-memory guards host memory (address space 0) only";
        return WalkResult::interrupt();
      }
      if (op->getParentWithTrait<OpTrait::SymbolTable>() != module.getOperation()) {
        op->emitOpError() << "is inside a nested symbol table: fakv-guard-cpu-memory guards the "
                             "accesses of the module's own functions";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (refused.wasInterrupted())
      return signalPassFailure();
    // (only what the kernels address: not a global's own word)
    llvm::erase_if(accesses, [](auto &a) {
      return std::get<1>(a).template getDefiningOp<LLVM::AddressOfOp>() != nullptr ||
             !std::get<2>(a).isIntOrFloat();
    });
    if (accesses.empty())
      return;
    OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
    Location loc = module.getLoc();
    auto extentsType = LLVM::LLVMArrayType::get(b.getI64Type(), 2);
    auto extents = LLVM::GlobalOp::create(b, loc, extentsType, /*isConstant=*/false,
                                          LLVM::Linkage::External, kExtentsGlobal,
                                          b.getZeroAttr(RankedTensorType::get({2}, b.getI64Type())));
    LLVM::GlobalOp fault = fakv::cpu::faultGlobal(module);
    func::FuncOp check = buildCheck(b, loc, extents);
    for (auto [op, addr, type] : accesses)
      guard(op, addr, type, check, fault);
  }
};
} // namespace
