//===- LaunchFacts.h - what the host needs to launch a kernel ---*- C++ -*-===//
//
// Read off a module after fakvgpu-to-llvm: per kernel its name, threads,
// dynamic shared memory, parameter kinds ("ptr", "tensormap", "i32", ...)
// and the tensor maps to encode (the parameter of the cache each describes
// and its box). fakv-compile writes them as JSON next to a cubin; the
// Python extension returns them (runtime/README.md says how they are used).
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_LOWERING_LAUNCHFACTS_H
#define FAKV_LOWERING_LAUNCHFACTS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

namespace mlir::fakv {

/// One JSON object per kernel of `module`.
llvm::json::Array launchFacts(ModuleOp module);

} // namespace mlir::fakv

#endif // FAKV_LOWERING_LAUNCHFACTS_H
