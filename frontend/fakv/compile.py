"""Print a @fakv.jit kernel at any stage of its compilation.

    python -m fakv.compile FILE [--kernel NAME] --emit STAGE
                           [--arg NAME=TYPE ...] [--const NAME=VALUE ...] [-o OUT]
    python -m fakv.compile kernels/decode.py --emit ptx \\
        --attention batch=32,heads=32,kv_heads=8,head_dim=128,page_size=256

FILE is imported to find its @fakv.jit functions (its top-level code runs:
keep a test's prints under `if __name__ == "__main__":`).
STAGE: fakv (the IR the DSL emits, verified), fakvgpu (layouts, pipeline,
warp roles), llvm (the gpu.module of LLVM/NVVM), ptx, cubin (written to -o).
TYPE: *bf16 / *f16 / *f32 / *i32 for a pointer (a tensor argument), or i1,
i32, i64, f32 for a scalar. VALUE: a Python literal. --attention gives the
specialisation fakv.flash_attn_with_kvcache would use for decode.py or
combine.py (keys: batch, seqlen_q, heads, kv_heads, head_dim, page_size
(0 = contiguous), seqlen_k, causal, num_splits, dtype), compiled with the
options that call launches it with (ring depth, blocks an SM, registers,
warp roles) unless --stages, --ctas-per-sm, --registers or
--no-warp-specialize say otherwise.
"""
import argparse
import ast
import importlib.util
import json
import os
import sys
import traceback

from .errors import CompilationError
from .ir import PtrType, ScalarType
from .jitfunction import JITFunction

STAGES = ("fakv", "fakvgpu", "llvm", "ptx", "cubin")


_SCALARS = ("i1", "i8", "i32", "i64", "f32", "f16", "bf16")


def parse_type(text):
    text = text.strip()
    if text.startswith("*") and text[1:] in _SCALARS:
        return PtrType(text[1:])
    if text in _SCALARS:
        return ScalarType(text)
    raise SystemExit(f"fakv.compile: unknown type {text!r} (a scalar {', '.join(_SCALARS)}, or a pointer to one: "
                     f"*bf16, ...)")


def load_kernels(path):
    spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
    if spec is None:                     # (not a .py file: Python finds no loader for it)
        raise SystemExit(f"fakv.compile: {path!r} is not a Python file (kernels are @fakv.jit functions in a .py)")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        spec.loader.exec_module(module)
    except SyntaxError as e:             # (the file's own error, not a traceback through importlib)
        raise SystemExit(f"fakv.compile: {e.filename}:{e.lineno}: SyntaxError: {e.msg}") from None
    except Exception as e:               # (its top-level code failed: an import, a name, a kernel refused)
        here = [f for f in traceback.extract_tb(e.__traceback__)
                if os.path.abspath(f.filename) == os.path.abspath(path)]
        where = f"{path}:{here[-1].lineno}: " if here else f"{path}: "
        raise SystemExit(f"fakv.compile: {where}importing it failed: {type(e).__name__}: {e}") from None
    return {n: v for n, v in vars(module).items() if isinstance(v, JITFunction)}


def attention_specialisations(config, kernels):
    """(name -> (specialisation, its @fakv.jit options)) of the kernels one
    flash_attn_with_kvcache call with these shapes would compile (run in
    compile-only mode), with the file's `decode` and `combine` in place of
    kernels/'s."""
    import ml_dtypes
    import numpy as np
    os.environ["FAKV_COMPILE_ONLY"] = "1"
    from . import api, interface
    c = {"batch": 1, "seqlen_q": 1, "heads": 32, "kv_heads": 8, "head_dim": 128, "page_size": 0,
         "seqlen_k": 4096, "causal": False, "num_splits": 1, "dtype": "bf16"}
    for item in filter(None, config.split(",")):
        key, _, value = item.partition("=")
        if key not in c:
            raise SystemExit(f"fakv.compile: unknown --attention key {key!r}")
        if key == "dtype":
            dtypes = {"bf16": "bf16", "bfloat16": "bf16", "f16": "f16", "float16": "f16"}
            if value not in dtypes:
                raise SystemExit(f"fakv.compile: --attention dtype={value}: bf16 or f16")
            c[key] = dtypes[value]
            continue
        try:
            c[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            c[key] = None
        want = bool if key == "causal" else int
        if type(c[key]) is not want:
            raise SystemExit(f"fakv.compile: --attention {key}={value}: "
                             f"{'True or False (causal=True)' if want is bool else 'an integer'}")
        least = 0 if key in ("page_size", "num_splits") else 1
        if want is int and c[key] < least:     # (numpy's "negative dimensions" or the API's refusal, as tracebacks)
            raise SystemExit(f"fakv.compile: --attention {key}={value}: at least {least}")
    dt = ml_dtypes.bfloat16 if c["dtype"] == "bf16" else np.float16
    q = _zeros((c["batch"], c["seqlen_q"], c["heads"], c["head_dim"]), dt)
    if c["page_size"]:
        pages = -(-c["seqlen_k"] // c["page_size"])
        cache = _zeros((c["batch"] * pages, c["page_size"], c["kv_heads"], c["head_dim"]), dt)
        table = np.arange(c["batch"] * pages, dtype=np.int32).reshape(c["batch"], pages)
    else:
        cache = _zeros((c["batch"], c["seqlen_k"], c["kv_heads"], c["head_dim"]), dt)
        table = None
    default_decode, default_combine = interface._kernels()
    decode, combine = kernels.get("decode", default_decode), kernels.get("combine", default_combine)
    # The variant (ring depth) the call launches is one of decode's.
    kernels_used = [decode, *decode._variants.values(), combine]
    for fn in kernels_used:
        fn.clear()
    try:
        api.with_kernels(decode, combine)(q, cache, cache, cache_seqlens=c["seqlen_k"], block_table=table,
                                    causal=c["causal"], num_splits=c["num_splits"])
    except (ValueError, NotImplementedError) as e:      # the call's own refusal (heads % kv_heads, head_dim ...)
        raise SystemExit(f"fakv.compile: --attention {config}: {e}") from None
    out = {}
    for fn in [decode, *decode._variants.values(), combine]:
        for compiled in fn._compiled.values():
            out[fn.__name__] = compiled, fn.options
    return out


def _zeros(shape, dtype):
    """A zero array of any size the address space holds: pages mapped without
    reserving memory (np.zeros of a 64 GiB cache failed where the call only
    needs its shape; compile-only calls read none of it)."""
    import mmap
    import numpy as np
    import math
    size = math.prod(shape) * np.dtype(dtype).itemsize      # (Python ints: np.prod wrapped past 2**63)
    try:
        if size >= sys.maxsize:
            raise OverflowError("past the address space")
        noreserve = getattr(mmap, "MAP_NORESERVE", 0x4000 if sys.platform == "linux" else 0)   # (Python >= 3.13)
        buffer = mmap.mmap(-1, max(size, 1), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | noreserve)
    except (OSError, OverflowError) as e:
        raise SystemExit(f"fakv.compile: --attention: cannot map {size} bytes for an array of shape {shape}: "
                         f"{e}") from None
    return np.frombuffer(buffer, dtype, math.prod(shape)).reshape(shape)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m fakv.compile", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("file")
    ap.add_argument("--kernel", help="which @fakv.jit function (default: the only or the last one)")
    ap.add_argument("--emit", choices=STAGES, default="fakv")
    ap.add_argument("--arg", action="append", default=[], help="NAME=TYPE of a runtime parameter")
    ap.add_argument("--const", action="append", default=[], help="NAME=VALUE of a constexpr parameter")
    ap.add_argument("--attention", help="shapes of a flash_attn_with_kvcache call (keys: below)")
    ap.add_argument("--stages", type=int, choices=range(1, 9), metavar="N",
                    help="K/V ring depth, 1 to 8 (default 2; with --attention the call's)")
    ap.add_argument("--no-warp-specialize", action="store_true")
    ap.add_argument("--ctas-per-sm", type=int, choices=range(0, 33), metavar="N",
                    help="at most N blocks an SM: the launch's shared memory raised to leave room for no more "
                    "(default 0: as many as fit; with --attention the call's)")
    ap.add_argument("--registers",
                    help="P,C: registers per producer / consumer thread moved with setmaxnreg (default 0,0: none; "
                    "with --attention the call's)")
    ap.add_argument("--divisible", default="",
                    help="NAMES: the run-time parameters (comma-separated, or `all`) marked divisible by 16, as the "
                    "JIT marks 16-byte-aligned tensors and integers that are multiples of 16 (default: none)")
    ap.add_argument("-o", "--output", help="output file (required for cubin)")
    args = ap.parse_args(argv)
    if args.output == "":
        ap.error("-o takes a file name, got ''")
    gpu_flags = [flag for flag, value in (("--stages", args.stages), ("--no-warp-specialize", args.no_warp_specialize),
                                          ("--ctas-per-sm", args.ctas_per_sm), ("--registers", args.registers))
                 if value is not None and value is not False]
    if gpu_flags and args.emit == "fakv":
        ap.error(f"{', '.join(gpu_flags)}: options of the GPU compilation (--emit fakvgpu, llvm, ptx or cubin), "
                 f"not of --emit fakv (the IR before it)")
    if args.emit == "cubin":           # (the facts go beside the cubin, FILE's extension replaced by .json)
        if not args.output:
            raise SystemExit("fakv.compile: --emit cubin needs -o FILE")
        if os.path.splitext(args.output)[1] == ".json":
            raise SystemExit(f"fakv.compile: -o {args.output}: the cubin's launch facts go to FILE with its "
                             f"extension replaced by .json; name the cubin otherwise (kernel.cubin)")
    if args.registers:
        counts = args.registers.split(",")
        if len(counts) != 2 or not all(c.strip().isdigit() for c in counts):
            ap.error(f"--registers takes P,C (two ints), got {args.registers!r}")
        args.registers = tuple(int(c) for c in counts)

    if not os.path.isfile(args.file):
        raise SystemExit(f"fakv.compile: no file {args.file!r}")
    kernels = load_kernels(args.file)
    if not kernels:
        raise SystemExit(f"fakv.compile: no @fakv.jit function in {args.file}")
    name = args.kernel or list(kernels)[-1]
    if name not in kernels:
        raise SystemExit(f"fakv.compile: no kernel {name!r} in {args.file} (has {', '.join(kernels)})")
    fn = kernels[name]
    options = dict(fn.options)             # the kernel's @fakv.jit options, or those the --attention call uses
    if args.attention is not None:
        if args.divisible:
            raise SystemExit("fakv.compile: --divisible is for --arg / --const; --attention marks what the call would")
        specs = attention_specialisations(args.attention, kernels)
        if name not in specs:
            raise SystemExit(f"fakv.compile: --attention specialises decode and combine (and this call used "
                             f"{', '.join(specs)}), not {name!r}")
        spec, options = specs[name]
        ir = spec.ir
    else:
        types = {}
        for item in args.arg:
            key, eq, value = item.partition("=")
            if not eq or key in types:
                raise SystemExit(f"fakv.compile: --arg {item}: " +
                                 ("give NAME=TYPE" if not eq else f"{key} is given more than once"))
            types[key] = parse_type(value)
        constexprs = {}
        for item in args.const:
            key, eq, value = item.partition("=")
            if not eq or key in constexprs:
                raise SystemExit(f"fakv.compile: --const {item}: " +
                                 ("give NAME=VALUE" if not eq else f"{key} is given more than once"))
            try:
                constexprs[key] = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                raise SystemExit(f"fakv.compile: --const {item}: the value must be a Python literal") from None
        for key in types:
            if key not in fn.params or key in fn.constexprs:
                raise SystemExit(f"fakv.compile: --arg {key}: {name} has no run-time parameter {key!r} "
                                 f"(run-time: {', '.join(p for p in fn.params if p not in fn.constexprs)})")
        for key in constexprs:
            if key not in fn.constexprs:
                raise SystemExit(f"fakv.compile: --const {key}: {name} has no constexpr parameter {key!r} "
                                 f"(constexprs: {', '.join(fn.constexprs) or 'none'}; give run-time ones with --arg)")
        missing = [p for p in fn.params if p not in types and p not in constexprs]
        if missing:
            raise SystemExit(f"fakv.compile: give --arg NAME=TYPE or --const NAME=VALUE for: {', '.join(missing)}")
        ordered = {p: types[p] for p in fn.params if p in types}
        def markable(p):          # (pointers and integers; not i1, not floats)
            return not isinstance(ordered[p], ScalarType) or ordered[p].dtype in ("i8", "i32", "i64")
        marked = [p for p in ordered if markable(p)] if args.divisible == "all" else \
            [n for n in args.divisible.split(",") if n]
        for key in marked:
            if key not in ordered:
                raise SystemExit(f"fakv.compile: --divisible {key}: not a run-time parameter of {name} "
                                 f"({', '.join(ordered)})")
            if not markable(key):
                raise SystemExit(f"fakv.compile: --divisible {key}: a {ordered[key].dtype} scalar is not marked "
                                 f"(integers and pointers are)")
        try:
            ir, _ = fn._ir(constexprs, ordered, tuple(p for p in ordered if p in marked))
        except CompilationError as e:
            raise SystemExit(f"fakv.compile: {e}") from None

    try:
        compiled = _compile(ir, args, options)
    except (RuntimeError, ValueError) as e:       # the compiler's diagnostics, as the JIT shows them
        from .compiler import _with_source
        raise SystemExit(f"fakv.compile: {name} does not compile:\n{_with_source(e)}") from None
    if compiled is None:
        return
    payload = compiled
    if args.output:
        _write(args.output, payload)
    else:
        sys.stdout.write(payload)


def _write(path, payload):
    """payload (text or bytes) to -o's path, or a message saying why it cannot be."""
    try:
        with open(path, "wb" if isinstance(payload, bytes) else "w") as f:
            f.write(payload)
    except OSError as e:
        raise SystemExit(f"fakv.compile: cannot write {path!r}: {e.strerror or e}") from None


def _compile(ir, args, options):
    """The text --emit asks for (None when a cubin was written to -o)."""
    if args.emit == "fakv":
        from . import _fakv
        _fakv.compile(ir, "fakv")          # verifies; print the IR as the DSL wrote it
        payload = ir
    else:
        from . import _fakv
        from .compiler import gpu_args, with_occupancy
        # The kernel's options: the defaults, then its @fakv.jit ones or the --attention call's, then the flags.
        opts = {"stages": 2, "warp_specialize": True, **options, "chip": "sm_90a"}
        given = dict(stages=args.stages, ctas_per_sm=args.ctas_per_sm, registers=args.registers,
                     warp_specialize=False if args.no_warp_specialize else None)
        opts.update((k, v) for k, v in given.items() if v is not None)
        try:
            payload, facts = _fakv.compile(ir, "ptx" if args.emit == "cubin" else args.emit, *gpu_args(opts))
        except TypeError:       # (a register count past the binding's int: 99999999999, given or the kernel's)
            p, c = opts.get("registers", (0, 0))
            raise SystemExit(f"fakv.compile: registers {p},{c}: out of range (0, or a multiple of 8 in [24, 256]: "
                             f"setmaxnreg)") from None
        if args.emit == "cubin":
            from . import ptx
            payload = ptx.assemble(payload, "sm_90a")
    if args.emit == "cubin":
        _write(args.output, payload)
        _write(os.path.splitext(args.output)[0] + ".json",
               json.dumps(with_occupancy(json.loads(facts), opts.get("ctas_per_sm", 0), opts["chip"]), indent=2))
        print(f"wrote {args.output} and {os.path.splitext(args.output)[0]}.json")
        return None
    return payload


if __name__ == "__main__":
    main()
