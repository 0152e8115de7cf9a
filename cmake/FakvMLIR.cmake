# fakv_link_mlir(<target> <MLIR static library names...>)
#
# Links a target against MLIR/LLVM: the shared libMLIR + libLLVM by default
# (fast links for everyday builds), or, with FAKV_STATIC, the named static
# MLIR libraries with the LLVM component archives in place of libLLVM.so, so
# that the result runs where no LLVM is installed.
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
    OrcJIT OrcShared OrcTargetProcess ExecutionEngine RuntimeDyld JITLink)
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
endif()

function(fakv_link_mlir target)
  if(FAKV_STATIC)
    target_link_libraries(${target} PUBLIC ${ARGN})
  else()
    target_link_libraries(${target} PUBLIC MLIR LLVM)
  endif()
endfunction()
