//===- fakv-opt.cpp - mlir-opt with the fakv dialect and passes -----------===//
//
// The fakv dialect, the upstream dialects it lowers to, every fakv pass and
// pipeline, and the upstream passes (so that any stage can be re-run).
//
//===----------------------------------------------------------------------===//

#include "tools/init/FakvInit.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::fakv::registerFakvDialects(registry);
  mlir::registerAllPasses();
  mlir::fakv::registerFakvPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "fakv optimizer driver: fakv IR through its passes\n",
      registry));
}
