//===- CPUCodegen.h - shared helpers of the fakv -> CPU lowering -*- C++ -*-===//
//
// Small builders of FakvToCPU.cpp and MemoryToCPU.cpp: constants and
// conversions, element addresses, guarded selects, run-time checks that
// abort, and tiles built element by element (tensor.generate) or mapped
// (linalg.generic / linalg.reduce).
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_CPUCODEGEN_H
#define FAKV_LOWERING_CPUCODEGEN_H

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::fakv::cpu {

Value cstI32(ImplicitLocOpBuilder &b, int64_t v);
Value cstI64(ImplicitLocOpBuilder &b, int64_t v);
Value cstIndex(ImplicitLocOpBuilder &b, int64_t v);
Value zeroOf(ImplicitLocOpBuilder &b, Type t);
Value indexToI32(ImplicitLocOpBuilder &b, Value v);
Value indexToI64(ImplicitLocOpBuilder &b, Value v);
Value i32ToI64(ImplicitLocOpBuilder &b, Value v);
Value toF32(ImplicitLocOpBuilder &b, Value v);
Value fromF32(ImplicitLocOpBuilder &b, Value v, Type t);
/// Element `idx` (i64, in elements) of the array at `base`.
Value elementAddress(ImplicitLocOpBuilder &b, Value base, Value idx,
                     Type elementType);
/// `scf.if cond { then() } else { otherwise() }` yielding one value of `t`.
Value select(ImplicitLocOpBuilder &b, Value cond,
             function_ref<Value(ImplicitLocOpBuilder &)> then,
             function_ref<Value(ImplicitLocOpBuilder &)> otherwise);
/// Stops the program with `message` on stderr unless `ok`: a guard against
/// reading outside a buffer. (cf.assert prints to stdout, which is lost when
/// buffered output meets abort().)
void emitRuntimeCheck(ImplicitLocOpBuilder &b, ModuleOp module, Value ok,
                      StringRef message);
RankedTensorType plain(RankedTensorType t);
/// A tensor.generate over `type`'s shape whose element at `ivs` is `body`.
Value generate(ImplicitLocOpBuilder &b, RankedTensorType type,
               function_ref<Value(ImplicitLocOpBuilder &, ValueRange)> body);
/// An all-parallel linalg.generic producing `type` from `inputs`, each read
/// through its indexing map; `body` maps the input elements to the output.
Value mapTiles(ImplicitLocOpBuilder &b, RankedTensorType type,
               ValueRange inputs, ArrayRef<AffineMap> maps,
               function_ref<Value(ImplicitLocOpBuilder &, ValueRange)> body);
/// Reduce `src` along `axis` with `kind`.
Value reduceTile(ImplicitLocOpBuilder &b, Value src, int64_t axis,
                 ReduceKind kind);

/// The i32 global `fakv_cpu_fault` the launcher reads and clears after each
/// call (found, or made at the module's top): fakv-guard-cpu-division ors 1
/// into it, fakv-guard-cpu-memory 2.
LLVM::GlobalOp faultGlobal(ModuleOp module);
/// `fault |= bits()` (i32; built after the fault's load) at `b`'s insertion point.
void orIntoFault(OpBuilder &b, Location loc, LLVM::GlobalOp fault, function_ref<Value()> bits);

/// The memory patterns of convert-fakv-to-cpu (MemoryToCPU.cpp): guarded
/// loads, stores and paged loads.
void populateMemoryToCPUPatterns(const TypeConverter &converter, RewritePatternSet &patterns);

} // namespace mlir::fakv::cpu

#endif // FAKV_LOWERING_CPUCODEGEN_H
