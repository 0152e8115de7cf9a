"""fakv IR to something that runs: a GPU binary (the C++ compiler's PTX,
assembled by fakv.ptx) with its launch facts, or a CPU module JIT-compiled
by the extension. jitfunction.py decides what to compile and caches it; this module
only compiles (it knows nothing of Python kernels)."""
import json
import os
import sys

from .errors import CompilationError


def _with_source(diagnostics):
    """The compiler's diagnostics (file:line:col: error: ...) each followed by
    the kernel's source line it names, as Python shows a traceback's."""
    import linecache
    import re
    out = []
    for line in str(diagnostics).splitlines():
        out.append(line)
        m = re.match(r"(.+?):(\d+):(\d+): (error|note): ", line)
        text = m and linecache.getline(m.group(1), int(m.group(2))).rstrip()
        if text:
            out.append(f"    {text}\n    {' ' * (int(m.group(3)) - 1)}^")
    return "\n".join(out)


def ext():
    """The C++ compiler (fakv._fakv), imported when first needed."""
    from . import _fakv
    return _fakv


def dump_ir():
    """FAKV_DUMP_IR=1: print each kernel's IR at every stage to stderr."""
    return os.environ.get("FAKV_DUMP_IR", "") not in ("", "0")


# Shared memory an SM has for its thread blocks, bytes, and what the hardware keeps of it for each block.
SM_SHARED_BYTES, BLOCK_RESERVED_BYTES = {"sm_90a": 228 * 1024}, 1024


def with_occupancy(facts, ctas_per_sm, chip):
    """The launch facts with each kernel's shared memory raised so that at
    most `ctas_per_sm` of its blocks share an SM (0: as many as fit): the
    largest request that still lets that many in, where the kernel needs
    less. Returns `facts` (changed in place)."""
    if ctas_per_sm:
        most = SM_SHARED_BYTES[chip] // ctas_per_sm - BLOCK_RESERVED_BYTES
        for kernel in facts["kernels"]:
            kernel["smem_bytes"] = max(kernel["smem_bytes"], most)
    return facts


def gpu_args(options):
    """The C++ compiler's arguments after the IR and the stage for @fakv.jit
    `options` (JITFunction.options plus "chip")."""
    return (options["stages"], options["warp_specialize"], options["chip"], *options.get("registers", (0, 0)))


def compile_gpu(name, ir, options):
    """(binary, facts) of kernel `name`'s module `ir` for options["chip"]:
    the PTX assembled to a cubin, and the launch facts (JSON of the
    compiler: kernels, parameters, shared memory, tensor maps;
    options["ctas_per_sm"]: with_occupancy's)."""
    args = gpu_args(options)
    compiler = ext()
    if dump_ir():
        for stage in ("fakvgpu", "llvm", "ptx"):
            text, _ = compiler.compile(ir, stage, *args)
            print(f"// {stage} of {name}\n{text}", file=sys.stderr)
    from . import ptx          # (not on a warm start's path)
    try:
        ptx_text, facts = compiler.compile(ir, "ptx", *args)
        binary = ptx.assemble(ptx_text, options["chip"])
    except (RuntimeError, ValueError) as e:
        hint = ""
        if "Insufficient registers" in str(e) and any(options.get("registers", (0, 0))):
            p, c = options["registers"]
            hint = (f"\n(@fakv.jit(registers=({p}, {c})) sets the kernel's register target, .maxnreg, to their "
                    f"average over its warp groups: raise the counts, or leave registers= out)")
        raise CompilationError(f"{name} does not compile for the GPU:\n{_with_source(e)}{hint}") from None
    return binary, with_occupancy(json.loads(facts), options.get("ctas_per_sm", 0), options["chip"])


def cpu_symbol(name):
    """Kernel `name`'s function in its CPU module: named apart from the C library's functions the lowering
    calls (a kernel `expf` using fl.exp was the function its exp called: it called itself until the stack ran
    out; `malloc`, `free`: the module did not link)."""
    return f"__fakv_kernel_{name}"


def compile_cpu(name, ir, params, types):
    """The CPU module of kernel `name` (its module `ir`, runtime parameters
    `params` of `types`) with a host function `__fakv_launch(params..., gx,
    gy, gz)` that runs the grid; the kernel's function is cpu_symbol(name)."""
    symbol = cpu_symbol(name)
    ir = ir.replace(f"func.func @{name}(", f"func.func @{symbol}(", 1)
    sig = ", ".join(f"%a{i}: {types[p].mlir()}" for i, p in enumerate(params))
    args = ", ".join(f"%a{i}" for i in range(len(params)))
    tys = ", ".join(types[p].mlir() for p in params)
    launch = (f"  func.func @__fakv_launch({sig}{', ' if sig else ''}%gx: i32, %gy: i32, %gz: i32) {{\n"
              f"    fakv.launch @{symbol}[%gx, %gy, %gz]({args})"
              f"{' : (' + tys + ')' if tys else ''}\n    return\n  }}\n")
    module = ir.rstrip().rstrip("}") + launch + "}\n"
    try:
        return ext().CpuModule(module)     # self-contained: no MLIR runtime library needed
    except RuntimeError as e:
        raise CompilationError(f"{name} does not compile for the CPU:\n{_with_source(e)}") from None
