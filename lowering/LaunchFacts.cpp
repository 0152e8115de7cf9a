//===- LaunchFacts.cpp - what the host needs to launch a kernel -----------===//

#include "lowering/LaunchFacts.h"

#include "lowering/GPUCodegen.h"

#include "dialect/FakvDialect.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;

static std::string parameterKind(Type t) {
  if (auto p = dyn_cast<LLVM::LLVMPointerType>(t))
    return p.getAddressSpace() == 1 ? "ptr" : "tensormap";
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

llvm::json::Array mlir::fakv::launchFacts(ModuleOp module) {
  llvm::json::Array kernels;
  module->walk([&](LLVM::LLVMFuncOp f) {
    // (a kernel as the GPU pipeline outlines it: its warps, tensor-map arguments and shared memory; a
    // function that only carries a warp count, written so by hand, is none)
    auto warps = f->getAttrOfType<IntegerAttr>(fakvgpu::kNumWarpsAttr);
    auto tmaArgs = f->getAttrOfType<DenseI32ArrayAttr>(codegen::kTmaArgsAttr);
    auto tmaBoxes = f->getAttrOfType<DenseI32ArrayAttr>(codegen::kTmaBoxesAttr);
    auto smem = f->getAttrOfType<IntegerAttr>(codegen::kSmemBytesAttr);
    if (!warps || !tmaArgs || !tmaBoxes || !smem)
      return;
    llvm::json::Array params, maps, packing{1, 1, 1}, cluster{1, 1, 1};
    if (auto size = f->getAttrOfType<IntegerAttr>(codegen::kClusterSizeAttr))
      cluster = llvm::json::Array{1, 1, size.getInt()};
    if (auto p = f->getAttrOfType<DenseI32ArrayAttr>(
            fakv::FakvDialect::getGridPackingAttrName()))
      packing = llvm::json::Array(p.asArrayRef());
    for (Type t : f.getArgumentTypes())
      params.push_back(parameterKind(t));
    for (auto [arg, rows] : llvm::zip(tmaArgs.asArrayRef(), tmaBoxes.asArrayRef()))
      maps.push_back(llvm::json::Object{{"arg", arg}, {"rows", rows}, {"cols", 64}});
    kernels.push_back(llvm::json::Object{
        {"name", f.getName()},
        {"threads", warps.getInt() * 32},
        {"smem_bytes", smem.getInt()},
        {"params", std::move(params)},
        {"tensormaps", std::move(maps)},
        {"grid_packing", std::move(packing)},
        {"cluster", std::move(cluster)},
        {"dependent_launch", f->hasAttr(codegen::kDependentLaunchAttr)}});
  });
  return kernels;
}
