//===- fakv-compile.cpp - fakv IR to a GPU binary and its launch facts ----===//
//
//   fakv-compile kernel.mlir -o out [--format=bin|isa|fatbin] [--stages=N]
//                [--no-warp-specialize]
//
// Runs fakv-to-cubin and writes `out.cubin` (or `out.ptx`, `out.fatbin`)
// and `out.json`:
// for each kernel its name, threads per block, dynamic shared memory,
// parameters (in order) and the tensor maps to pass by value after them
// (which parameter is the cache and the box rows). runtime/ launches from
// these two files.
//
//===----------------------------------------------------------------------===//

#include "lowering/LaunchFacts.h"
#include "lowering/Passes.h"
#include "tools/init/FakvInit.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVM/NVVM/Utils.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

static llvm::cl::OptionCategory category("fakv-compile options");
static llvm::cl::opt<std::string> inputFile(llvm::cl::Positional,
                                            llvm::cl::desc("<fakv IR file>"),
                                            llvm::cl::Required, llvm::cl::cat(category));
static llvm::cl::opt<std::string> outputBase("o", llvm::cl::desc("output path without extension"),
                                             llvm::cl::Required, llvm::cl::cat(category));
static llvm::cl::opt<std::string> format("format",
                                         llvm::cl::desc("bin (a cubin, by ptxas), isa (PTX) or fatbin"),
                                         llvm::cl::init("bin"), llvm::cl::cat(category));
static llvm::cl::opt<std::string> chip("chip", llvm::cl::desc("the GPU: sm_90a (the only one)"),
                                       llvm::cl::init("sm_90a"), llvm::cl::cat(category));
static llvm::cl::opt<unsigned> stages("stages", llvm::cl::desc("K/V ring depth, 1 to 8"),
                                      llvm::cl::init(2), llvm::cl::cat(category));
static llvm::cl::opt<bool> noWarpSpecialize(
    "no-warp-specialize", llvm::cl::desc("no producer warpgroup: every warp copies and computes"),
    llvm::cl::init(false), llvm::cl::cat(category));

/// The extension of the object `format` names (checkFakvToCubinOptions's list).
static llvm::StringRef extensionOf(llvm::StringRef format) {
  if (format == "isa" || format == "assembly")
    return ".ptx";
  if (format == "fatbin" || format == "fatbinary")
    return ".fatbin";
  return ".cubin";
}

/// A CUDA tool (ptxas, fatbinary) where gpu-module-to-binary looks for it
/// (PATH, then the CUDA toolkit's bin/): said before compiling, not after
/// the whole pipeline.
static bool findTool(llvm::StringRef tool) {
  llvm::SmallString<256> path(NVVM::getCUDAToolkitPath());
  llvm::sys::path::append(path, "bin", tool);
  return llvm::sys::fs::can_execute(path) || static_cast<bool>(llvm::sys::findProgramByName(tool));
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::HideUnrelatedOptions(category);
  llvm::cl::ParseCommandLineOptions(argc, argv, "fakv compiler: fakv IR -> cubin/PTX + launch facts\n");
  if (outputBase.empty()) {
    llvm::errs() << "fakv-compile: -o takes a path, got ''\n";
    return 1;
  }

  DialectRegistry registry;
  fakv::registerFakvDialects(registry);
  MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  ctx.printOpOnDiagnostic(false);     // (a pass's error on the module printed all of it: thousands of lines)
  llvm::SourceMgr sources;
  std::string error;
  auto file = openInputFile(inputFile, &error);
  if (!file) {
    llvm::errs() << "fakv-compile: " << error << "\n";
    return 1;
  }
  sources.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sources, &ctx);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sources, &ctx);
  if (!module)
    return 1;

  fakv::FakvToCubinOptions options;
  options.chip = chip;
  options.format = format;
  options.stages = stages;
  options.warpSpecialize = !noWarpSpecialize;
  // (an empty --chip crashed in NVVM's target verifier; --format=xyz wrote a cubin and exited 0)
  if (failed(fakv::checkFakvToCubinOptions(options, [](const llvm::Twine &message) {
        llvm::errs() << "fakv-compile: " << message << "\n";
        return failure();
      })))
    return 1;
  llvm::SmallVector<llvm::StringRef> tools;       // (what gpu-module-to-binary runs for the format)
  if (extensionOf(format) != ".ptx")
    tools.push_back("ptxas");
  if (extensionOf(format) == ".fatbin")
    tools.push_back("fatbinary");
  for (llvm::StringRef tool : tools) {
    if (findTool(tool))
      continue;
    llvm::StringRef toolkit = NVVM::getCUDAToolkitPath();
    llvm::errs() << "fakv-compile: --format=" << format << " needs " << tool << ", found none on PATH nor "
                 << (toolkit.empty() ? llvm::Twine("in a CUDA toolkit (CUDA_HOME, CUDA_ROOT, CUDA_PATH unset)")
                                     : "in " + toolkit + "/bin")
                 << ": set CUDA_HOME to the CUDA toolkit, or --format=isa for PTX\n";
    return 1;
  }
  PassManager toLLVM(&ctx);
  fakv::buildFakvToFakvGPUPipeline(toLLVM, options);
  fakv::buildFakvGPUToLLVMPipeline(toLLVM, options);
  if (failed(toLLVM.run(*module)))
    return 1;

  // Launch facts, read off the lowered kernels.
  llvm::json::Array kernels = fakv::launchFacts(*module);
  if (kernels.empty()) {
    llvm::errs() << "fakv-compile: " << inputFile << " holds no kernel (no fakv.func / gpu kernel to compile)\n";
    return 1;
  }

  PassManager toBinary(&ctx);
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = format;
  toBinary.addPass(createGpuModuleToBinaryPass(binary));
  if (failed(toBinary.run(*module)))
    return 1;
  std::string object;
  module->walk([&](gpu::BinaryOp bin) {
    for (Attribute a : bin.getObjects())
      object = cast<gpu::ObjectAttr>(a).getObject().getValue().str();
  });

  std::string ext = extensionOf(format).str();
  auto out = openOutputFile(outputBase + ext, &error);
  auto meta = openOutputFile(outputBase + ".json", &error);
  if (!out || !meta) {
    llvm::errs() << "fakv-compile: " << error << "\n";
    return 1;
  }
  out->os() << object;
  meta->os() << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object{
                                           {"format", format.getValue()},
                                           {"chip", chip.getValue()},
                                           {"kernels", std::move(kernels)}}))
             << "\n";
  out->keep();
  meta->keep();
  return 0;
}
