//===- LowerWarpSpecialize.cpp - fakvgpu-lower-warp-specialize --------------===//
//
// fakvgpu.warp_specialize becomes two scf.if regions on the thread id, each
// marked with its role (fakvgpu.role: first thread, thread count, named
// barrier), with setmaxnreg when the op rebalances registers (and
// fakvgpu.max_registers, the average, on the kernel). The patterns then
// emit per-role code. Test: test/lowering/lower-warp-specialize.mlir.
//
//===----------------------------------------------------------------------===//

#include "lowering/GPUCodegen.h"
#include "lowering/Passes.h"

#include "dialect/FakvDialect.h"
#include "dialect/FakvGPUDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::fakv {
#define GEN_PASS_DEF_FAKVGPULOWERWARPSPECIALIZE
#include "lowering/Passes.h.inc"
} // namespace mlir::fakv

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

namespace {

/// fakvgpu.warp_specialize -> two guarded regions, each marked with its
/// role (first thread, thread count, barrier id) for the patterns.
void lowerWarpSpecialize(fakvgpu::WarpSpecializeOp ws) {
  OpBuilder b(ws);
  Location loc = ws.getLoc();
  int64_t producerThreads = ws.getProducerWarps() * 32;
  int64_t consumerThreads = ws.getConsumerWarps() * 32;
  Value tid = arith::IndexCastOp::create(
      b, loc, b.getI32Type(), gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Value isProducer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, tid,
                                           i32(b, loc, producerThreads));
  auto producer = scf::IfOp::create(b, loc, isProducer, false);
  producer->setAttr(kRoleAttr, b.getDenseI64ArrayAttr({0, producerThreads, 1}));
  Block &pb = producer.getThenRegion().front();
  pb.getOperations().splice(pb.begin(), ws.getProducer().front().getOperations());
  int32_t producerRegs = ws.getProducerRegisters();
  int32_t consumerRegs = ws.getConsumerRegisters();
  bool rebalance = producerRegs > 0 && consumerRegs > 0;
  if (rebalance) {
    OpBuilder pbb = OpBuilder::atBlockBegin(&pb);
    NVVM::SetMaxRegisterOp::create(pbb, loc, producerRegs,
                                   NVVM::SetMaxRegisterAction::decrease);
  }
  Value isConsumer = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, tid,
                                           i32(b, loc, producerThreads));
  auto consumer = scf::IfOp::create(b, loc, isConsumer, false);
  consumer->setAttr(kRoleAttr,
                    b.getDenseI64ArrayAttr({producerThreads, consumerThreads, 2}));
  Block &cb = consumer.getThenRegion().front();
  cb.getOperations().splice(cb.begin(), ws.getConsumer().front().getOperations());
  if (rebalance) {
    OpBuilder cbb = OpBuilder::atBlockBegin(&cb);
    NVVM::SetMaxRegisterOp::create(cbb, loc, consumerRegs,
                                   NVVM::SetMaxRegisterAction::increase);
    // The kernel is compiled for the average, rounded down to a multiple of
    // 8: what the producer gives up, the consumer takes.
    int64_t average = (producerRegs * producerThreads + consumerRegs * consumerThreads) /
                      (producerThreads + consumerThreads);
    auto func = ws->getParentOfType<FunctionOpInterface>();   // (the verifier's: there is one)
    func->setAttr(kMaxRegistersAttr, b.getI32IntegerAttr(average / 8 * 8));
  }
  ws.erase();
}

struct LowerWarpSpecializePass
    : public fakv::impl::FakvGPULowerWarpSpecializeBase<LowerWarpSpecializePass> {
  void runOnOperation() override {
    SmallVector<fakvgpu::WarpSpecializeOp> ops;
    getOperation().walk([&](fakvgpu::WarpSpecializeOp ws) { ops.push_back(ws); });
    for (auto ws : ops)
      lowerWarpSpecialize(ws);
  }
};
} // namespace
