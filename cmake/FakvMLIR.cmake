# fakv_link_mlir(<target> <MLIR static library names...>)
#
# Links a target against MLIR/LLVM: the shared libMLIR + libLLVM by default
# (fast links for everyday builds), or, with FAKV_STATIC, the named static
# MLIR libraries with the LLVM component archives in place of libLLVM.so, so
# that the result runs where no LLVM is installed (the wheel: scripts/wheel.sh).
option(FAKV_STATIC "link LLVM/MLIR statically" OFF)

if(FAKV_STATIC)
  # Debian builds LLVM with LLVM_LINK_LLVM_DYLIB=ON: every imported static
  # MLIR target names the shared `LLVM` as a dependency. Swap it for the
  # component archives.
  llvm_map_components_to_libnames(FAKV_LLVM_STATIC_LIBS
    Support Demangle Core IRReader IRPrinter AsmParser BitReader BitWriter
    Linker Analysis TransformUtils ScalarOpts InstCombine ipo Vectorize Passes
    Target TargetParser MC MCParser CodeGen CodeGenTypes SelectionDAG
    AsmPrinter Object FrontendOpenMP FrontendOffloading FrontendAtomic
    NVPTXCodeGen NVPTXDesc NVPTXInfo X86CodeGen X86Desc X86Info X86AsmParser
    OrcJIT OrcShared OrcTargetProcess ExecutionEngine RuntimeDyld JITLink
    # Debian's LLVM has LLVM_USE_PERF=1: MLIRExecutionEngine calls
    # createPerfJITEventListener(), defined here.
    PerfJITEvents)
  foreach(t IN LISTS MLIR_EXPORTED_TARGETS)
    if(TARGET ${t})
      get_target_property(kind ${t} TYPE)
      if(kind STREQUAL "STATIC_LIBRARY")
        get_target_property(deps ${t} INTERFACE_LINK_LIBRARIES)
        if(deps AND "LLVM" IN_LIST deps)
          list(REMOVE_ITEM deps LLVM)
          list(APPEND deps ${FAKV_LLVM_STATIC_LIBS})
          set_target_properties(${t} PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
        endif()
      endif()
    endif()
  endforeach()
  # LLVMSupport names the shared zlib, zstd and z3: link the zlib and zstd
  # archives instead, and leave z3 out (only LLVM's Z3 solver uses it), so
  # that the extension needs nothing but the C and C++ runtimes.
  find_library(FAKV_ZLIB_ARCHIVE libz.a REQUIRED)
  find_library(FAKV_ZSTD_ARCHIVE libzstd.a REQUIRED)
  get_target_property(deps LLVMSupport INTERFACE_LINK_LIBRARIES)
  list(TRANSFORM deps REPLACE "^ZLIB::ZLIB$" "${FAKV_ZLIB_ARCHIVE}")
  list(TRANSFORM deps REPLACE "^zstd::libzstd_(shared|static)$" "${FAKV_ZSTD_ARCHIVE}")
  list(FILTER deps EXCLUDE REGEX "libz3")
  set_target_properties(LLVMSupport PROPERTIES INTERFACE_LINK_LIBRARIES "${deps}")
endif()

# Link flags of a Python extension that carries LLVM/MLIR inside: the C++
# runtime linked in, every archive's symbols hidden (its LLVM cannot clash
# with another LLVM in the process, e.g. Triton's), unused sections dropped,
# no RPATH.
function(fakv_self_contained_module target)
  if(FAKV_STATIC)
    target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc
      -Wl,--exclude-libs,ALL -Wl,--gc-sections -Wl,--as-needed)
    set_target_properties(${target} PROPERTIES SKIP_BUILD_RPATH ON INSTALL_RPATH "")
  endif()
endfunction()

function(fakv_link_mlir target)
  if(FAKV_STATIC)
    target_link_libraries(${target} PUBLIC ${ARGN})
  else()
    target_link_libraries(${target} PUBLIC MLIR LLVM)
  endif()
endfunction()
