# lit configuration for the fakv IR tests (see test/README.md).
import os
import platform
import shlex

import lit.formats

config.name = "fakv"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fakv_obj_root, "test")
# Inputs shared by several tests, not tests themselves.
config.excludes = ["Inputs", "lit.cfg.py", "README.md"]

config.environment["PATH"] = os.pathsep.join(
    [config.fakv_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])

runner_libs = ",".join(
    os.path.join(config.llvm_lib_dir, lib)
    for lib in ("libmlir_runner_utils.so", "libmlir_c_runner_utils.so"))
q = shlex.quote         # paths pasted into RUN lines: a checkout whose path holds a space
tools = os.path.join(config.fakv_src_root, "test", "tools")

config.substitutions += [
    # Run a module lowered by fakv-to-llvm-cpu: its @main, nothing returned.
    # On x86 without VCVTNEPS2BF16 (AVX512-BF16, AVX-NE-CONVERT), which flushes bf16 subnormals to zero:
    # LLVM then rounds through __truncsfbf2, exactly, as the Python CPU path does (FakvPython.cpp).
    ("%mlir-runner", f"{q(config.mlir_runner)} -e main -entry-point-result=void -shared-libs={q(runner_libs)}"
                     + (" --mattr=-avx512bf16,-avxneconvert" if platform.machine() in ("x86_64", "AMD64") else "")),
    # Compare printed memrefs with expected values: %compare <expected> [--atol A]
    ("%compare", f"{q(config.python_executable)} {q(os.path.join(tools, 'compare_memrefs.py'))}"),
    ("%fakv-obj", q(config.fakv_obj_root)),
    ("%fakv-src", q(config.fakv_src_root)),
    ("%kernels-as", "sh " + q(os.path.join(tools, "kernels_as.sh"))),
    ("%kernels", q(os.path.join(config.fakv_src_root, "kernels"))),
    ("%python", q(config.python_executable)),
    # LLVM's `not`: a non-zero exit, not a crash (lit's own `not` takes a signal for a failure, so a tool
    # that printed the expected diagnostic and then crashed passed).
    ("%not", q(os.path.join(config.llvm_tools_dir, "not"))),
]
if config.ptxas and os.path.exists(config.ptxas):
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", q(config.ptxas)))
