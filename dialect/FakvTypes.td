//===- FakvTypes.td - fakv types and type constraints ------*- tablegen -*-===//

#ifndef FAKV_TYPES_TD
#define FAKV_TYPES_TD

include "dialect/FakvDialect.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

def Fakv_PtrType : Fakv_Type<"Ptr", "ptr"> {
  let summary = "pointer to elements in global memory";
  let description = [{
    `!fakv.ptr<T>` is the address of an array of `T` in global (device, or
    host for the CPU path) memory. Loads and stores index it in elements, with
    strides given as `i64` operands. `T` is a signless integer of whole bytes
    (i8, i16, i32, i64, ...) or f16, bf16, f32, f64, f80, f128 (no i1, no
    8-bit floats, no tf32).

    Example: `!fakv.ptr<bf16>`, `!fakv.ptr<i32>`.
  }];
  let parameters = (ins "::mlir::Type":$elementType);
  let assemblyFormat = "`<` $elementType `>`";
  let genVerifyDecl = 1;
}

// A pointer to the int32 entries of a block table; buildable, so that the
// assembly format need not spell its type.
def Fakv_I32Ptr : Type<
    And<[CPred<"::llvm::isa<::mlir::fakv::PtrType>($_self)">,
         CPred<"::llvm::cast<::mlir::fakv::PtrType>($_self).getElementType().isInteger(32)">]>,
    "pointer to i32", "::mlir::fakv::PtrType">,
  BuildableType<"::mlir::fakv::PtrType::get($_builder.getContext(), $_builder.getI32Type())">;

// Tiles are statically shaped tensors; an encoding attribute (a layout, once a
// pass assigns one) is allowed. Element-type and shape rules live in each op's
// verifier so that the messages can name the operand.
def Fakv_Tile : Type<And<[IsRankedTensorTypePred,
                          CPred<"::llvm::cast<::mlir::RankedTensorType>($_self).hasStaticShape()">]>,
                     "statically shaped tile", "::mlir::RankedTensorType">;

#endif // FAKV_TYPES_TD
