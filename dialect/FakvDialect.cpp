//===- FakvDialect.cpp - dialect registration and attribute checks -------===//

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::fakv;

#include "dialect/FakvDialect.cpp.inc"
#include "dialect/FakvEnums.cpp.inc"
#include "dialect/FakvAttrInterfaces.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialect/FakvTypes.cpp.inc"

void FakvDialect::initialize() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialect/FakvTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialect/FakvOps.cpp.inc"
      >();
}

Operation *FakvDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                            Type type, Location loc) {
  if (auto typed = dyn_cast<TypedAttr>(value))
    if (arith::ConstantOp::isBuildableWith(typed, type))
      return arith::ConstantOp::create(builder, loc, type, typed);
  return nullptr;
}

LogicalResult FakvDialect::verifyOperationAttribute(Operation *op,
                                                    NamedAttribute attr) {
  if (attr.getName() == getPackGQAAttrName()) {
    auto axis = dyn_cast<IntegerAttr>(attr.getValue());
    if (!axis || !axis.getType().isSignlessInteger(32) || axis.getInt() < 0 ||
        axis.getInt() > 2)
      return op->emitError() << "'fakv.pack_gqa' must be a grid axis: an i32 "
                                "in [0, 2]";
    if (!isKernel(dyn_cast<func::FuncOp>(op)))
      return op->emitError() << "'fakv.pack_gqa' applies to fakv kernels";
    return success();
  }
  if (attr.getName() == getGridPackingAttrName()) {
    auto packing = dyn_cast<DenseI32ArrayAttr>(attr.getValue());
    if (!packing || packing.size() != 3 ||
        llvm::any_of(packing.asArrayRef(), [](int32_t n) { return n < 1; }))
      return op->emitError() << "'fakv.grid_packing' must be an array<i32> "
                                "of 3 positive counts";
    return success();
  }
  if (attr.getName() == getWarmPagesAttrName()) {
    auto lead = dyn_cast<IntegerAttr>(attr.getValue());
    if (!lead || !lead.getType().isSignlessInteger(32) || lead.getInt() < 1 || lead.getInt() > 8)
      return op->emitError() << "'fakv.warm_pages' must be a number of tiles ahead: an i32 in [1, 8]";
    return success();
  }
  if (attr.getName() == getSwapABAttrName() || attr.getName() == getGatherPagesAttrName() ||
      attr.getName() == getRowBoxesAttrName() || attr.getName() == getSaturatedAttrName()) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << attr.getName().getValue() << "' must be a unit attribute";
    return success();
  }
  if (attr.getName() != getKernelAttrName())
    return op->emitError() << "unknown fakv attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<UnitAttr>(attr.getValue()))
    return op->emitError() << "'fakv.kernel' must be a unit attribute";
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return op->emitError() << "'fakv.kernel' applies to func.func only";
  if (func.isExternal())
    return op->emitError() << "a fakv kernel needs a body: a declaration is "
                              "neither compiled nor launched";
  if (func.getFunctionType().getNumResults() != 0)
    return op->emitError() << "a fakv kernel returns nothing; it writes its "
                              "results through pointer arguments";
  // (!llvm.ptr: a tensor map fakvgpu-tma-arguments appended.)
  for (Type t : func.getArgumentTypes())
    if (!isa<PtrType, IntegerType, FloatType, LLVM::LLVMPointerType>(t))
      return op->emitError() << "a fakv kernel argument must be a !fakv.ptr, "
                                "an integer or a float, got "
                             << t;
  return success();
}

LogicalResult FakvDialect::verifyRegionArgAttribute(Operation *op,
                                                    unsigned regionIndex,
                                                    unsigned argIndex,
                                                    NamedAttribute attr) {
  if (attr.getName() != getDivisibilityAttrName())
    return op->emitError() << "unknown fakv argument attribute '"
                           << attr.getName().getValue() << "'";
  auto value = dyn_cast<IntegerAttr>(attr.getValue());
  if (!value || !value.getType().isSignlessInteger() || value.getInt() <= 0 || !llvm::isPowerOf2_64(value.getInt()))
    return op->emitError() << "'fakv.divisibility' of argument " << argIndex
                           << " must be a positive power of two of a signless integer type (16 : i64), got "
                           << attr.getValue();
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn)
    return op->emitError() << "'fakv.divisibility' applies to function "
                              "arguments";
  Type t = fn.getArgumentTypes()[argIndex];
  if (!isa<PtrType, IntegerType>(t))
    return op->emitError() << "'fakv.divisibility' of argument " << argIndex
                           << " applies to integers and !fakv.ptr, not " << t;
  return success();
}

bool mlir::fakv::isKernel(func::FuncOp func) {
  return func && func->hasAttr(FakvDialect::getKernelAttrName());
}

bool mlir::fakv::isLoweredElementType(Type t) {
  if (auto i = dyn_cast<IntegerType>(t))
    return i.getWidth() <= 64;
  if (isa<FloatType>(t))
    return t.isF16() || t.isBF16() || t.isF32() || t.isF64();
  return true;
}

LogicalResult mlir::fakv::checkNestedKernels(ModuleOp module) {
  WalkResult nested = module.walk([&](func::FuncOp func) {
    if (!isKernel(func) || func->getParentOp() == module.getOperation())
      return WalkResult::advance();
    func.emitError() << "a fakv kernel must be a function of the module the passes run on, not of a nested '"
                     << func->getParentOp()->getName().getStringRef() << "'";
    return WalkResult::interrupt();
  });
  return failure(nested.wasInterrupted());
}

LogicalResult PtrType::verify(function_ref<InFlightDiagnostic()> emitError,
                              Type elementType) {
  // (whole bytes: memory holds no i1 the GPU and the CPU path would read alike, bit-packed or a byte each)
  if (!(elementType.isSignlessInteger() && elementType.getIntOrFloatBitWidth() % 8 == 0 &&
        elementType.getIntOrFloatBitWidth() > 0) &&
      !isa<Float16Type, BFloat16Type, Float32Type, Float64Type, Float80Type, Float128Type>(elementType))
    return emitError() << "!fakv.ptr element type must be a signless integer of whole bytes (i8, i16, "
                          "i32, ...) or an f16, bf16, f32, f64, f80 or f128 float (what memory holds), got "
                       << elementType;
  return success();
}
