//===- FakvGPUDialect.cpp - the fakvgpu dialect ---------------------------===//

#include "dialect/FakvGPUDialect.h"
#include "dialect/LinearLayout.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fakvgpu;

#include "dialect/FakvGPUDialect.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialect/FakvGPUAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/FakvGPUTypes.cpp.inc"

#define GET_OP_CLASSES
#include "dialect/FakvGPUOps.cpp.inc"

namespace {
/// Prints layouts as aliases (#linear, #linear1, ..., #shared) at the top of
/// a module, so that tile types stay readable.
struct FakvGPUAsmInterface : public OpAsmDialectInterface {
  using OpAsmDialectInterface::OpAsmDialectInterface;
  AliasResult getAlias(Attribute attr, raw_ostream &os) const override {
    if (isa<LinearAttr>(attr)) {
      os << "linear";
      return AliasResult::OverridableAlias;
    }
    if (isa<SharedAttr>(attr)) {
      os << "shared";
      return AliasResult::OverridableAlias;
    }
    return AliasResult::NoAlias;
  }
};
} // namespace

void FakvGPUDialect::initialize() {
  addInterfaces<FakvGPUAsmInterface>();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialect/FakvGPUAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/FakvGPUTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/FakvGPUOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// #fakvgpu.linear
//===----------------------------------------------------------------------===//

namespace {
/// Parses `[[a, b], [c, d]]` into flat values, checking each basis has
/// `rank` entries (rank is set from the first basis when still 0).
ParseResult parseBases(AsmParser &parser, unsigned &rank,
                       SmallVector<int64_t> &flat) {
  return parser.parseCommaSeparatedList(
      AsmParser::Delimiter::Square, [&]() -> ParseResult {
        SmallVector<int64_t> basis;
        if (parser.parseCommaSeparatedList(
                AsmParser::Delimiter::Square, [&]() -> ParseResult {
                  int64_t v;
                  if (parser.parseInteger(v))
                    return failure();
                  basis.push_back(v);
                  return success();
                }))
          return failure();
        if (rank == 0)
          rank = basis.size();
        if (basis.size() != rank)
          return parser.emitError(parser.getCurrentLocation())
                 << "every basis must have " << rank << " entries";
        llvm::append_range(flat, basis);
        return success();
      });
}

void printBases(AsmPrinter &printer, ArrayRef<int64_t> flat, unsigned rank) {
  printer << "[";
  for (size_t i = 0; i < flat.size(); i += rank) {
    if (i)
      printer << ", ";
    printer << "[";
    llvm::interleaveComma(flat.slice(i, rank), printer);
    printer << "]";
  }
  printer << "]";
}
} // namespace

Attribute LinearAttr::parse(AsmParser &parser, Type) {
  unsigned rank = 0;
  SmallVector<int64_t> regs, lanes, warps;
  if (parser.parseLess() || parser.parseKeyword("regs") ||
      parser.parseEqual() || parseBases(parser, rank, regs) ||
      parser.parseComma() || parser.parseKeyword("lanes") ||
      parser.parseEqual() || parseBases(parser, rank, lanes) ||
      parser.parseComma() || parser.parseKeyword("warps") ||
      parser.parseEqual() || parseBases(parser, rank, warps) ||
      parser.parseGreater())
    return {};
  return parser.getChecked<LinearAttr>(parser.getContext(), rank, regs, lanes,
                                       warps);
}

void LinearAttr::print(AsmPrinter &printer) const {
  printer << "<regs = ";
  printBases(printer, getRegs(), getRank());
  printer << ", lanes = ";
  printBases(printer, getLanes(), getRank());
  printer << ", warps = ";
  printBases(printer, getWarps(), getRank());
  printer << ">";
}

LogicalResult LinearAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 unsigned rank, ArrayRef<int64_t> regs,
                                 ArrayRef<int64_t> lanes,
                                 ArrayRef<int64_t> warps) {
  if (rank == 0)
    return emitError() << "a linear layout needs rank >= 1";
  if (lanes.size() != 5 * rank)
    return emitError() << "a linear layout has 5 lane bases (32 lanes), got "
                       << lanes.size() / rank;
  for (ArrayRef<int64_t> all : {regs, lanes, warps})
    for (int64_t v : all)
      if (v < 0 || (v & (v - 1)) != 0)
        return emitError() << "basis entries must be 0 or powers of two, got "
                           << v;
  return success();
}

LogicalResult LinearAttr::verifyEncoding(ArrayRef<int64_t> shape, Type,
                                         function_ref<InFlightDiagnostic()> emitError) const {
  unsigned rank = getRank();
  if (shape.size() != rank)
    return emitError() << "a rank-" << rank << " layout on a tile of rank " << shape.size();
  if (getRegs().size() / rank > 16)
    return emitError() << "a layout of at most 16 register bases (65536 registers), got "
                       << getRegs().size() / rank;
  if (getWarps().size() / rank > 5)
    return emitError() << "a layout of at most 5 warp bases (32 warps, a thread block's 1024 threads), got "
                       << getWarps().size() / rank;
  // Each basis inside the tile; the bases' span (over GF(2), one bit a power
  // of two of each dimension) the whole tile: every element held somewhere.
  SmallVector<unsigned> offset;
  unsigned bits = 0;
  for (int64_t n : shape) {
    if (n < 1 || (n & (n - 1)))
      return emitError() << "a linear layout's tile has power-of-two dimensions, got " << n;
    offset.push_back(bits);
    bits += llvm::Log2_64(n);
  }
  if (bits > 24)       // (fakv's kMaxTileElements: sizes past it would wrap the byte counts planned from them)
    return emitError() << "a tile in registers holds at most 2^24 elements, got 2^" << bits;
  SmallVector<uint64_t> span;
  for (auto [kind, all] : {std::pair<const char *, ArrayRef<int64_t>>{"regs", getRegs()},
                           {"lanes", getLanes()}, {"warps", getWarps()}})
    for (size_t i = 0; i + rank <= all.size(); i += rank) {
      uint64_t v = 0;
      for (unsigned d = 0; d < rank; ++d) {
        if (all[i + d] >= shape[d])
          return emitError() << kind << " basis #" << i / rank << " reaches " << all[i + d]
                             << " in dimension " << d << " of a tile of " << shape[d];
        if (all[i + d] && bits < 64)
          v |= uint64_t(1) << (offset[d] + llvm::Log2_64(all[i + d]));
      }
      for (uint64_t b : span)                     // (reduced against the span so far)
        v = std::min(v, v ^ b);
      if (v)
        span.push_back(v);
    }
  if (bits < 64 && span.size() < bits)
    return emitError() << "the layout holds " << (uint64_t(1) << span.size()) << " of the tile's "
                       << (uint64_t(1) << bits) << " elements";
  return success();
}

//===----------------------------------------------------------------------===//
// #fakvgpu.shared, !fakvgpu.ring, !fakvgpu.barriers
//===----------------------------------------------------------------------===//

LogicalResult SharedAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t swizzle) {
  if (swizzle != 128)
    return emitError() << "only 128-byte swizzle is supported, got " << swizzle;
  return success();
}

LogicalResult SharedAttr::verifyEncoding(ArrayRef<int64_t> shape, Type elementType,
                                         function_ref<InFlightDiagnostic()> emitError) const {
  // (the layout above: 2-D, 16-bit, whole panels; at most 2^20 elements, a bound on shared-memory sizes that
  // would otherwise wrap)
  if (shape.size() != 2 || !elementType.isIntOrFloat() ||
      elementType.getIntOrFloatBitWidth() != 16 || shape[0] < 1 || shape[1] < 64 ||
      shape[1] % 64 || shape[0] > (int64_t(1) << 20) / shape[1])
    return emitError() << "a #fakvgpu.shared tile is 2-D, of 16-bit elements, its columns whole 64-column "
                          "panels and at most 2^20 elements in all";
  return success();
}

LogicalResult RingType::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t stages, RankedTensorType tile) {
  if (stages < 1 || stages > 64)
    return emitError() << "a ring has 1 to 64 stages, got " << stages;
  auto shared = dyn_cast_or_null<SharedAttr>(tile.getEncoding());
  if (!shared)
    return emitError() << "ring tiles live in shared memory "
                          "(#fakvgpu.shared encoding), got "
                       << tile;
  if (!isa<Float16Type, BFloat16Type>(tile.getElementType()))
    return emitError() << "ring tiles are 2-D f16 or bf16 tiles of whole 64-column panels, at most "
                          "2^20 elements (#fakvgpu.shared), got "
                       << tile;
  // (the shape as the shared layout takes it: a tile made without its check, as a pass may, is checked here)
  return shared.verifyEncoding(tile.getShape(), tile.getElementType(), emitError);
}

LogicalResult BarriersType::verify(function_ref<InFlightDiagnostic()> emitError, int64_t count) {
  if (count < 1 || count > 1024)
    return emitError() << "an array of 1 to 1024 mbarriers (8 bytes each in shared memory), got "
                       << count;
  return success();
}

/// The integer `attr` holds when it is one in [lo, hi], else an error naming
/// what it must be.
static FailureOr<int64_t> integerIn(Operation *op, NamedAttribute attr, int64_t lo, int64_t hi,
                                    StringRef what) {
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (value && value.getType().isSignlessInteger() && value.getType().getIntOrFloatBitWidth() <= 64 &&
      value.getInt() >= lo && value.getInt() <= hi)
    return value.getInt();
  return op->emitError() << "'" << attr.getName().getValue() << "' must be an integer in [" << lo << ", "
                         << hi << "] (" << what << ")";
}

/// The function `op` is, or is in (attributes naming its arguments).
static FunctionOpInterface functionOf(Operation *op) {
  if (auto fn = dyn_cast<FunctionOpInterface>(op))
    return fn;
  return op->getParentOfType<FunctionOpInterface>();
}

LogicalResult FakvGPUDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto onKernel = [&]() -> LogicalResult {
    if (!isa<FunctionOpInterface>(op))
      return op->emitError() << "'" << name << "' applies to functions (the kernels)";
    return success();
  };
  if (name == kNumWarpsAttr) {
    auto warps = dyn_cast<IntegerAttr>(attr.getValue());
    if (!warps || !warps.getType().isSignlessInteger(32) || warps.getInt() < 1 || warps.getInt() > 32)
      return op->emitError() << "'" << kNumWarpsAttr << "' must be an i32 in [1, 32] (warps a "
                             << "program: at most 1024 threads)";
    return onKernel();
  }
  // What the lowering leaves (lowering/GPUCodegen.h): values it relies on.
  if (name == kSmemOffsetAttr)
    return integerIn(op, attr, 0, INT32_MAX, "a byte offset in shared memory");
  if (name == kSmemBytesAttr) {
    if (failed(integerIn(op, attr, 0, INT32_MAX, "the kernel's shared-memory bytes")))
      return failure();
    return onKernel();
  }
  if (name == kMaxRegistersAttr) {
    FailureOr<int64_t> regs = integerIn(op, attr, 24, 256, "registers a thread, a multiple of 8");
    if (failed(regs))
      return failure();
    if (*regs % 8 != 0)
      return op->emitError() << "'" << name << "' must be a multiple of 8 (setmaxnreg's), got " << *regs;
    return onKernel();
  }
  if (name == kClusterSizeAttr) {
    if (failed(integerIn(op, attr, 1, 16, "programs a cluster")))
      return failure();
    return onKernel();
  }
  if (name == kStoredRowsAttr) {
    if (failed(integerIn(op, attr, 1, 256, "the rows a shared tile is stored with: a wgmma's N at most")))
      return failure();
    if (!isa<ConvertLayoutOp>(op))
      return op->emitError() << "'" << name << "' applies to fakvgpu.convert_layout";
    return success();
  }
  if (name == kRoleAttr) {
    auto role = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (!role || role.size() != 3 || role[0] < 0 || role[0] % 32 != 0 || role[1] < 32 || role[1] % 32 != 0 ||
        role[0] + role[1] > 1024 || role[2] < 0 || role[2] > 15)
      return op->emitError() << "'" << name << "' must be array<i64: first, count, barrier>: threads "
                             << "[first, first + count) in whole warps within 1024, a barrier in [0, 15]";
    return success();
  }
  if (name == kTmaParamAttr || name == kTmaArgsAttr || name == kTmaBoxesAttr) {
    FunctionOpInterface fn = functionOf(op);
    int64_t args = fn ? int64_t(fn.getNumArguments()) : 0;
    if (name == kTmaParamAttr)
      return integerIn(op, attr, 0, args - 1, "the kernel argument holding the copy's tensor map");
    if (failed(onKernel()))           // (before its length is checked against a function's arguments)
      return failure();
    auto list = dyn_cast<DenseI32ArrayAttr>(attr.getValue());
    if (!list || int64_t(list.size()) > args)
      return op->emitError() << "'" << name << "' must be an array<i32> of one entry per tensor map, at most "
                             << "one per kernel argument (" << args << ")";
    bool boxes = name == kTmaBoxesAttr;
    for (int32_t v : list.asArrayRef())
      if (boxes ? (v < 1 || v > 256) : (v < 0 || v >= args))
        return op->emitError() << "'" << name << "' holds " << v << "; "
                               << (boxes ? "a box's rows are in [1, 256]" : "not one of the kernel's arguments");
    auto other = op->getAttrOfType<DenseI32ArrayAttr>(boxes ? kTmaArgsAttr : kTmaBoxesAttr);
    if (other && other.size() != list.size())
      return op->emitError() << "'" << kTmaArgsAttr << "' and '" << kTmaBoxesAttr << "' must have one length";
    return onKernel();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Ops
//===----------------------------------------------------------------------===//

LogicalResult ConvertLayoutOp::verify() {
  auto src = cast<RankedTensorType>(getSrc().getType());
  auto dst = cast<RankedTensorType>(getType());
  if (src.getShape() != dst.getShape() ||
      src.getElementType() != dst.getElementType())
    return emitOpError() << "must keep the shape and element type (it changes the layout only); got "
                         << src << " -> " << dst;
  if (isa_and_present<SharedAttr>(src.getEncoding()))
    return emitOpError() << "reads registers; a shared tile is read by its "
                            "consumer (fakv.dot) directly";
  return success();
}

OpFoldResult ConvertLayoutOp::fold(FoldAdaptor) {
  if (getSrc().getType() == getType())
    return getSrc();
  return {};
}

/// A slot or barrier index that is a constant must be one of the `count`
/// there are (only a constant can be checked here).
static LogicalResult checkIndex(Operation *op, Value index, int64_t count,
                                StringRef what) {
  APInt c;
  if (matchPattern(index, m_ConstantInt(&c)) &&
      (c.isNegative() || c.getSExtValue() >= count))
    return op->emitOpError() << what << " " << c.getSExtValue()
                             << " is outside [0, " << count << ")";
  return success();
}

LogicalResult RingViewOp::verify() {
  if (getType() != getRing().getType().getTile())
    return emitOpError() << "result type must be the ring's tile type "
                         << getRing().getType().getTile();
  return checkIndex(*this, getSlot(), getRing().getType().getStages(), "slot");
}

LogicalResult WaitOp::verify() {
  APInt phase;
  if (matchPattern(getPhase(), m_ConstantInt(&phase)) && phase.ugt(1))
    return emitOpError() << "phase parity is 0 or 1, got " << phase.getSExtValue();
  return checkIndex(*this, getIndex(), getBarriers().getType().getCount(), "barrier");
}

LogicalResult ArriveOp::verify() {
  return checkIndex(*this, getIndex(), getBarriers().getType().getCount(), "barrier");
}

LogicalResult ClearRowsOp::verify() {
  return checkIndex(*this, getSlot(), getRing().getType().getStages(), "slot");
}

LogicalResult AsyncPagedLoadOp::verify() {
  RankedTensorType tile = getRing().getType().getTile();
  if (getCache().getType().getElementType() != tile.getElementType())
    return emitOpError() << "cache element type "
                         << getCache().getType().getElementType()
                         << " does not match the ring's element type "
                         << tile.getElementType();
  if (!getTable() == !getPage())
    return emitOpError() << "expects exactly one of 'table' and 'page'";
  if (!getError() != !getErrorCode())
    return emitOpError() << "'report' takes an error pointer and a code";
  if (getSignal().getType().getCount() != getRing().getType().getStages())
    return emitOpError() << "needs one barrier per ring slot";
  return checkIndex(*this, getSlot(), getRing().getType().getStages(), "slot");
}

bool AsyncPagedLoadOp::usesTMA(RankedTensorType tile, Value cache, Value page,
                               Value leftpad, Value pageSizeValue, Value row) {
  auto arg = dyn_cast<BlockArgument>(cache);
  if (!arg || !isa_and_present<FunctionOpInterface>(arg.getOwner()->getParentOp()))
    return false;
  int64_t rows = tile.getDimSize(0), cols = tile.getDimSize(1);
  if (tile.getElementTypeBitWidth() != 16 || cols % 64 != 0 || rows > 256)
    return false;
  if (page)
    return true;
  if (leftpad && !matchPattern(leftpad, m_Zero()))
    return false;
  // Pages that hold whole tiles, or tiles of whole pages of whole 128-byte
  // swizzle atoms (8 rows): a box per page (tmaBoxRows).
  APInt pageSize;
  if (!matchPattern(pageSizeValue, m_ConstantInt(&pageSize)))
    return false;
  int64_t ps = pageSize.getSExtValue();
  if (ps <= 0 || (ps % rows != 0 && (rows % ps != 0 || ps % 8 != 0)))
    return false;
  // A tile of several pages: gathered instead when the kernel asks.
  if (ps % rows != 0 && arg.getOwner()->getParentOp()->hasAttr(
                            fakv::FakvDialect::getGatherPagesAttrName()))
    return false;
  // The tile starts at a multiple of its rows: row = x * c with c a multiple.
  APInt c;
  if (matchPattern(row, m_ConstantInt(&c)))
    return c.getSExtValue() % rows == 0;
  if (auto mul = row.getDefiningOp<arith::MulIOp>())
    for (Value factor : {mul.getLhs(), mul.getRhs()})
      if (matchPattern(factor, m_ConstantInt(&c)) && c.getSExtValue() % rows == 0)
        return true;
  return false;
}

int64_t AsyncPagedLoadOp::tmaBoxRows(RankedTensorType tile, Value pageSizeValue,
                                     Value table, bool rowBoxes) {
  int64_t rows = tile.getDimSize(0);
  APInt pageSize;
  if (table && matchPattern(pageSizeValue, m_ConstantInt(&pageSize)) &&
      pageSize.getSExtValue() > 0 && pageSize.getSExtValue() < rows)
    rows = pageSize.getSExtValue();
  // (a page of a block table is a multiple of the tile's rows, or a
  // multiple of 8 dividing them: 16-row boxes stay inside one page)
  return rowBoxes && rows > 16 && rows % 16 == 0 ? 16 : rows;
}

bool AsyncPagedLoadOp::rowBoxes(Operation *op) {
  auto func = op->getParentOfType<FunctionOpInterface>();
  return func && func->hasAttr(fakv::FakvDialect::getRowBoxesAttrName());
}

// The regions belong to the op's state before they are parsed (as scf.if's do): when one fails to parse, the
// parser's clean-up drops their operations' uses of values defined outside before those values go.
ParseResult WarpSpecializeOp::parse(OpAsmParser &parser, OperationState &result) {
  Region *producer = result.addRegion();
  Region *consumer = result.addRegion();
  Type i32 = parser.getBuilder().getIntegerType(32);
  auto &props = result.getOrAddProperties<Properties>();
  IntegerAttr producerWarps, consumerWarps, producerRegisters, consumerRegisters;
  if (parser.parseKeyword("producer_warps") ||
      parser.parseCustomAttributeWithFallback(producerWarps, i32) ||
      parser.parseKeyword("consumer_warps") ||
      parser.parseCustomAttributeWithFallback(consumerWarps, i32) ||
      parser.parseKeyword("registers") ||
      parser.parseCustomAttributeWithFallback(producerRegisters, i32) || parser.parseComma() ||
      parser.parseCustomAttributeWithFallback(consumerRegisters, i32))
    return failure();
  props.producer_warps = producerWarps;
  props.consumer_warps = consumerWarps;
  props.producer_registers = producerRegisters;
  props.consumer_registers = consumerRegisters;
  if (parser.parseRegion(*producer))
    return failure();
  if (producer->empty())
    producer->emplaceBlock();
  if (parser.parseComma() || parser.parseRegion(*consumer))
    return failure();
  if (consumer->empty())
    consumer->emplaceBlock();
  SMLoc loc = parser.getCurrentLocation();
  if (parser.parseOptionalAttrDict(result.attributes) ||
      failed(verifyInherentAttrs(result.name, result.attributes, [&]() {
        return parser.emitError(loc) << "'" << result.name.getStringRef() << "' op ";
      })))
    return failure();
  return success();
}

void WarpSpecializeOp::print(OpAsmPrinter &p) {
  p << " producer_warps ";
  p.printAttributeWithoutType(getProducerWarpsAttr());
  p << " consumer_warps ";
  p.printAttributeWithoutType(getConsumerWarpsAttr());
  p << " registers ";
  p.printAttributeWithoutType(getProducerRegistersAttr());
  p << ", ";
  p.printAttributeWithoutType(getConsumerRegistersAttr());
  p << ' ';
  p.printRegion(getProducer());
  p << ", ";
  p.printRegion(getConsumer());
  p.printOptionalAttrDict((*this)->getAttrs(), {getProducerWarpsAttrName(), getConsumerWarpsAttrName(),
                                                getProducerRegistersAttrName(), getConsumerRegistersAttrName()});
}

LogicalResult WarpSpecializeOp::verify() {
  int64_t producers = int32_t(getProducerWarps()), consumers = int32_t(getConsumerWarps());
  if (!(*this)->getParentOfType<FunctionOpInterface>())
    return emitOpError() << "splits a kernel's warps: it must be inside a kernel function";
  if (producers < 4 || consumers < 4 || producers % 4 || consumers % 4)
    return emitOpError() << "roles are whole warpgroups (positive multiples of 4 warps), got "
                         << producers << " and " << consumers;
  if (auto func = (*this)->getParentOfType<FunctionOpInterface>())
    if (auto warps = func->getAttrOfType<IntegerAttr>(kNumWarpsAttr))
      if (producers + consumers != warps.getInt())
        return emitOpError() << "the roles' " << producers + consumers
                             << " warps must be the kernel's " << kNumWarpsAttr << " ("
                             << warps.getInt() << ")";
  int32_t p = getProducerRegisters(), c = getConsumerRegisters();
  if (p == 0 && c == 0)
    return success(); // both roles keep the launch allocation
  for (int32_t r : {p, c})
    if (r < 24 || r > 256 || r % 8)
      return emitOpError() << "register counts are 0, 0 (no setmaxnreg) or "
                              "multiples of 8 in [24, 256], got "
                           << r;
  if (p > c)
    return emitOpError() << "the producer gives registers to the consumer: "
                            "producer count " << p << " above consumer count " << c;
  return success();
}

