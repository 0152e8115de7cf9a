//===- GPUCodegen.cpp - shared helpers of the fakvgpu -> NVVM lowering ----===//

#include "lowering/GPUCodegen.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::fakv;
using namespace mlir::fakv::codegen;
using fakvgpu::LinearLayout;

Type codegen::ptrType(MLIRContext *ctx, unsigned space) {
  return LLVM::LLVMPointerType::get(ctx, space);
}

bool codegen::isLinearTile(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && isa_and_present<fakvgpu::LinearAttr>(rt.getEncoding());
}

Value codegen::vecElement(OpBuilder &b, Location loc, Value vec, int64_t i) {
  return vector::ExtractOp::create(b, loc, vec, ArrayRef<int64_t>{i});
}

Value codegen::fromElements(OpBuilder &b, Location loc, Type vecType,
                   ArrayRef<Value> elems) {
  return vector::FromElementsOp::create(b, loc, cast<VectorType>(vecType),
                                        elems);
}

Value codegen::ifValue(OpBuilder &b, Location loc, Value cond, Type t,
              function_ref<Value(OpBuilder &)> then,
              function_ref<Value(OpBuilder &)> otherwise) {
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{t}, cond, true);
  {
    OpBuilder tb = OpBuilder::atBlockBegin(&ifOp.getThenRegion().front());
    scf::YieldOp::create(tb, loc, then(tb));
  }
  {
    OpBuilder eb = OpBuilder::atBlockBegin(&ifOp.getElseRegion().front());
    scf::YieldOp::create(eb, loc, otherwise(eb));
  }
  return ifOp.getResult(0);
}

void codegen::griddepcontrol(OpBuilder &b, Location loc, StringRef ptx) {
  LLVM::InlineAsmOp::create(b, loc, TypeRange{}, ValueRange{}, b.getStringAttr(ptx),
                            b.getStringAttr("~{memory}"), b.getUnitAttr(), UnitAttr(),
                            LLVM::TailCallKindAttr(),
                            LLVM::AsmDialectAttr::get(b.getContext(), LLVM::AsmDialect::AD_ATT),
                            ArrayAttr());
}

Value codegen::i32(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 32);
}
Value codegen::i64(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIntOp::create(b, loc, v, 64);
}

Role codegen::roleOf(Operation *op) {
  for (Operation *p = op; p; p = p->getParentOp()) {
    if (auto role = p->getAttrOfType<DenseI64ArrayAttr>(kRoleAttr))
      return Role{role[0], role[1], role[2]};
    if (auto func = dyn_cast<FunctionOpInterface>(p)) {
      auto warps = func->getAttrOfType<IntegerAttr>(fakvgpu::kNumWarpsAttr);
      return Role{0, warps ? warps.getInt() * 32 : 128, 0};
    }
  }
  return Role{0, 128, 0};
}

Value codegen::roleThreadId(OpBuilder &b, Location loc, Operation *op) {
  Value tid = arith::IndexCastOp::create(
      b, loc, b.getI32Type(), gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x));
  Role role = roleOf(op);
  if (role.first)
    tid = arith::SubIOp::create(b, loc, tid, i32(b, loc, role.first));
  return tid;
}

void codegen::syncRole(OpBuilder &b, Location loc, Operation *op) {
  Role role = roleOf(op);
  if (role.barrier == 0) {
    NVVM::Barrier0Op::create(b, loc);
    return;
  }
  NVVM::BarrierOp::create(b, loc, TypeRange{}, i32(b, loc, role.barrier),
                          i32(b, loc, role.count), NVVM::BarrierReductionAttr(),
                          Value());
}

LinearLayout codegen::layoutOf(Type tileType) {
  auto t = cast<RankedTensorType>(tileType);
  return LinearLayout::fromAttr(cast<fakvgpu::LinearAttr>(t.getEncoding()));
}

SmallVector<Value> codegen::laneWarpCoords(OpBuilder &b, Location loc,
                                           const LinearLayout &layout,
                                           Value tid) {
  Value lane = arith::AndIOp::create(b, loc, tid, i32(b, loc, 31));
  Value warp = arith::ShRUIOp::create(b, loc, tid, i32(b, loc, 5));
  SmallVector<Value> coords;
  for (unsigned d = 0; d < layout.rank; ++d) {
    Value c = i32(b, loc, 0);
    auto addBits = [&](Value id, ArrayRef<fakvgpu::Coord> bases) {
      for (unsigned bit = 0; bit < bases.size(); ++bit) {
        int64_t v = bases[bit][d];
        if (!v)
          continue;
        Value set = arith::AndIOp::create(
            b, loc, arith::ShRUIOp::create(b, loc, id, i32(b, loc, bit)),
            i32(b, loc, 1));
        c = arith::OrIOp::create(
            b, loc, c,
            arith::ShLIOp::create(b, loc, set, i32(b, loc, llvm::Log2_64(v))));
      }
    };
    addBits(lane, layout.lanes);
    addBits(warp, layout.warps);
    coords.push_back(c);
  }
  return coords;
}

SmallVector<Value> codegen::elementCoords(OpBuilder &b, Location loc,
                                          const LinearLayout &layout,
                                          ArrayRef<Value> base, int64_t reg) {
  fakvgpu::Coord rc = layout.regCoord(reg);
  SmallVector<Value> out;
  for (unsigned d = 0; d < layout.rank; ++d)
    out.push_back(rc[d] ? Value(arith::OrIOp::create(b, loc, base[d],
                                                     i32(b, loc, rc[d])))
                        : base[d]);
  return out;
}

Value codegen::smemBase(OpBuilder &b, Location loc, Operation *op) {
  auto ptr3 = LLVM::LLVMPointerType::get(b.getContext(), 3);
  Value raw = LLVM::AddressOfOp::create(b, loc, ptr3, kSmemSymbol);
  // Round the window offset up to 1024 bytes (kSmemAlignSlack spare bytes).
  Value addr = LLVM::PtrToIntOp::create(b, loc, b.getI32Type(), raw);
  Value aligned = arith::AndIOp::create(
      b, loc, arith::AddIOp::create(b, loc, addr, i32(b, loc, 1023)),
      i32(b, loc, ~int64_t(1023)));
  return LLVM::GEPOp::create(b, loc, ptr3, b.getI8Type(), raw,
                             ValueRange{arith::SubIOp::create(b, loc, aligned, addr)});
}

LogicalResult codegen::requirePlacement(Operation *op) {
  if (op->hasAttr(kSmemOffsetAttr))
    return success();      // (an i64 >= 0: the dialect verifies it)
  return op->emitError() << "has no shared-memory placement ('" << kSmemOffsetAttr
                         << "'): run fakvgpu-plan-shared-memory first";
}

Value codegen::smemOf(OpBuilder &b, Location loc, Operation *op) {
  auto offset = op->getAttrOfType<IntegerAttr>(kSmemOffsetAttr);
  assert(offset && "op without a shared-memory placement");
  return addBytes(b, loc, smemBase(b, loc, op), i32(b, loc, offset.getInt()));
}

Value codegen::addBytes(OpBuilder &b, Location loc, Value base, Value bytes) {
  return LLVM::GEPOp::create(b, loc, base.getType(), b.getI8Type(), base,
                             ValueRange{bytes});
}

Value codegen::swizzledOffset(OpBuilder &b, Location loc, Value row, Value col,
                              int64_t rows) {
  // panel * rows * 128 + row * 128 + ((col % 64 / 8) ^ (row % 8)) * 16 + (col % 8) * 2
  Value panel = arith::ShRUIOp::create(b, loc, col, i32(b, loc, 6));
  Value chunk = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, col, i32(b, loc, 3)), i32(b, loc, 7));
  Value swz = arith::XOrIOp::create(
      b, loc, chunk, arith::AndIOp::create(b, loc, row, i32(b, loc, 7)));
  Value off = arith::MulIOp::create(b, loc, panel, i32(b, loc, rows * 128));
  off = arith::AddIOp::create(
      b, loc, off, arith::MulIOp::create(b, loc, row, i32(b, loc, 128)));
  off = arith::AddIOp::create(
      b, loc, off, arith::MulIOp::create(b, loc, swz, i32(b, loc, 16)));
  return arith::AddIOp::create(
      b, loc, off,
      arith::MulIOp::create(
          b, loc, arith::AndIOp::create(b, loc, col, i32(b, loc, 7)),
          i32(b, loc, 2)));
}

int64_t codegen::alignedVectorRegs(const fakvgpu::LinearLayout &l, int64_t maxElems) {
  int64_t width = 1;
  unsigned bits = 0;
  for (; bits < l.regs.size() && width < maxElems; ++bits, width *= 2) {
    fakvgpu::Coord expect(l.rank, 0);
    expect[l.rank - 1] = width;
    if (l.regs[bits] != expect)
      break;
  }
  // Shrink until every other basis moves the last coordinate by a multiple.
  auto starts = [&](ArrayRef<fakvgpu::Coord> bases, int64_t w) {
    return llvm::all_of(bases, [&](const fakvgpu::Coord &c) { return c[l.rank - 1] % w == 0; });
  };
  while (width > 1 && !(starts(ArrayRef(l.regs).drop_front(llvm::Log2_64(width)), width) &&
                        starts(l.lanes, width) && starts(l.warps, width)))
    width /= 2;
  return width;
}

int64_t codegen::sharedRows(Value tile) {
  int64_t rows = cast<RankedTensorType>(tile.getType()).getDimSize(0);
  if (tile.getDefiningOp<fakvgpu::RingViewOp>())
    return rows;
  if (auto conv = tile.getDefiningOp<fakvgpu::ConvertLayoutOp>())
    if (auto stored = conv->getAttrOfType<IntegerAttr>(fakvgpu::kStoredRowsAttr))
      return stored.getInt();
  return std::max<int64_t>(rows, 64);
}

int64_t codegen::sharedTileBytes(RankedTensorType tile, int64_t rows) {
  return rows * tile.getDimSize(1) * tile.getElementTypeBitWidth() / 8;
}

LogicalResult codegen::checkTiles(func::FuncOp func) {
  auto numWarps = func->getAttrOfType<IntegerAttr>(fakvgpu::kNumWarpsAttr);
  // Every tile has its place: registers (#fakvgpu.linear), or shared memory where a fakvgpu op put it.
  // (a layout over more warps than the kernel has: the missing warps' elements never computed or stored)
  // (hand-written fakvgpu IR comes here without fakv-assign-layouts' checks: an f80 tile aborted LLVM in
  // instruction selection, a layout of 16384 registers a thread took 82 s and 14 GB to lower)
  auto placed = [&](Value v, Operation *where) {
    if (!fakv::isLoweredElementType(getElementTypeOrSelf(v.getType()))) {
      where->emitOpError() << "the GPU lowering holds integers of up to 64 bits and f16, bf16, f32 or f64 "
                              "values, got "
                           << v.getType();
      return false;
    }
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return true;
    if (auto linear = dyn_cast_or_null<fakvgpu::LinearAttr>(t.getEncoding())) {
      LinearLayout layout = LinearLayout::fromAttr(linear);
      unsigned warps = layout.numWarps();
      if (numWarps && warps > numWarps.getInt()) {
        where->emitOpError() << "has a tile laid out over " << warps << " warps (" << t
                             << ") in a kernel of " << numWarps.getInt();
        return false;
      }
      if (layout.numRegs() > fakvgpu::kMaxTileRegisters) {
        where->emitOpError() << "has a tile of " << layout.numRegs() << " registers a thread (" << t
                             << "): the GPU lowering holds at most " << fakvgpu::kMaxTileRegisters;
        return false;
      }
      return true;
    }
    if (isa_and_present<fakvgpu::SharedAttr>(t.getEncoding())) {
      if (isa_and_present<fakvgpu::FakvGPUDialect>(where->getDialect()))
        return true;
      if (isa<PagedLoadOp>(where)) {
        where->emitOpError() << "feeds a dot from shared memory, which fakv-pipeline arranges "
                                "only inside an scf.for (a loop of one iteration is folded away)";
        return false;
      }
      where->emitOpError() << "makes a tile in shared memory (" << t
                           << "): only fakvgpu ops (ring_view, convert_layout) do";
      return false;
    }
    where->emitOpError() << "has a tile without a register layout (" << t
                         << "): run fakv-assign-layouts first";
    return false;
  };
  for (BlockArgument arg : func.getArguments())
    if (!placed(arg, func))
      return failure();
  WalkResult r = func.walk([&](Operation *op) {
    for (Value v : op->getResults())
      if (!placed(v, op))
        return WalkResult::interrupt();
    // (host functions are gone: a kernel calls none; the DSL inlines its helpers)
    if (auto call = dyn_cast<func::CallOp>(op)) {
      call.emitOpError() << "calls @" << call.getCallee()
                         << ": a kernel calls no function on the GPU (inline it)";
      return WalkResult::interrupt();
    }
    // (nor takes one's address: the function it names was erased, or outlined beside it, and the reference
    // failed the verifier after the lowering)
    if (auto ref = dyn_cast<func::ConstantOp>(op)) {
      ref.emitOpError() << "refers to @" << ref.getValue()
                        << ": a kernel calls no function on the GPU (inline it)";
      return WalkResult::interrupt();
    }
    // One value everywhere: a tile constant in registers is a splat.
    if (auto cst = dyn_cast<arith::ConstantOp>(op))
      if (isa<RankedTensorType>(cst.getType()) && !isa<SplatElementsAttr>(cst.getValue())) {
        cst.emitOpError() << "is a tile constant of several values: the GPU lowering takes "
                             "splat tile constants only (build others with fakv.arange and arith)";
        return WalkResult::interrupt();
      }
    // Only dots and fakvgpu ops read a tile in shared memory.
    if (!isa<DotOp>(op) && !isa_and_present<fakvgpu::FakvGPUDialect>(op->getDialect()))
      for (Value v : op->getOperands())
        if (auto t = dyn_cast<RankedTensorType>(v.getType());
            t && isa_and_present<fakvgpu::SharedAttr>(t.getEncoding())) {
          op->emitOpError() << "reads a tile in shared memory (" << t
                            << "): only fakv.dot and fakvgpu ops do";
          return WalkResult::interrupt();
        }
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (Value v : block.getArguments())
          if (!placed(v, op))
            return WalkResult::interrupt();
    return WalkResult::advance();
  });
  return failure(r.wasInterrupted());
}

LogicalResult codegen::forEachKernelWithLayouts(ModuleOp module,
                                                function_ref<void(func::FuncOp)> fn) {
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!isKernel(func))
      continue;
    if (!func->hasAttr(fakvgpu::kNumWarpsAttr))
      return func.emitError() << "has no layouts yet: run fakv-assign-layouts first";
    if (failed(checkTiles(func)))
      return failure();
    fn(func);
  }
  return success();
}
