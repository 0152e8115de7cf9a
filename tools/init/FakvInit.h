//===- FakvInit.h - what a fakv tool registers ------------------*- C++ -*-===//
//
// One place that lists the dialects, interfaces, translations and passes the
// fakv compiler uses, shared by fakv-opt and the Python extension.
//
//===----------------------------------------------------------------------===//

#ifndef FAKV_TOOLS_INIT_FAKVINIT_H
#define FAKV_TOOLS_INIT_FAKVINIT_H

namespace mlir {
class DialectRegistry;
namespace fakv {
/// The fakv dialect, the upstream dialects its pipelines produce, and the
/// external interface models those pipelines need (bufferization, conversion
/// to LLVM, the NVVM target, LLVM IR translation).
void registerFakvDialects(DialectRegistry &registry);
/// fakv's own passes and named pipelines.
void registerFakvPasses();
} // namespace fakv
} // namespace mlir

#endif // FAKV_TOOLS_INIT_FAKVINIT_H
