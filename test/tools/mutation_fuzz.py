#!/usr/bin/env python3
"""A bounded mutation fuzz of fakv-opt: random small edits of valid fakv IR
(a line dropped or duplicated, a number or an element type changed, two
tokens swapped, an op renamed), each run through fakv-opt pipelines with a
time limit. Any outcome is fine but a crash (a signal, an LLVM assertion or
"PLEASE submit a bug report") or a hang; exit status 1 lists those.

usage: mutation_fuzz.py --opt FAKV_OPT --cases N --seed S [--level fakv|fakvgpu] [--timeout T] FILE...
"""
import argparse
import random
import re
import subprocess
import sys
import tempfile

PIPELINES = {
    "fakv": [["--canonicalize"], ["--fakv-to-llvm-cpu"], ["--fakv-to-fakvgpu"], ["--fakv-pack-gqa", "--fakv-decompose"],
             ["--fakv-to-fakvgpu", "--fakvgpu-to-llvm"]],
    "fakvgpu": [["--fakvgpu-to-llvm"], ["--canonicalize"], ["--fakvgpu-lower-warp-specialize"],   # IR after fakv-to-fakvgpu
                ["--fakvgpu-plan-shared-memory"], ["--fakvgpu-tma-arguments"], ["--fakvgpu-mark-aligned"],
                ["--convert-fakvgpu-to-nvvm"], ["--fakvgpu-outline-kernels"],
                ["--fakvgpu-lower-warp-specialize", "--fakvgpu-plan-shared-memory", "--fakvgpu-tma-arguments",
                 "--convert-fakvgpu-to-nvvm", "--fakvgpu-outline-kernels"]],
}
TYPES = ["f32", "f16", "bf16", "i32", "i64", "i1", "index"]
OPS = ["fakv.dot", "fakv.load", "fakv.store", "fakv.online_softmax", "fakv.reduce", "fakv.splat", "fakv.arange",
       "fakv.paged_load", "fakv.lse_combine", "fakv.broadcast", "arith.addf", "scf.yield", "fakv.program_id"]


def mutate(rng, text):
    lines = text.split("\n")
    body = [i for i, l in enumerate(lines) if l.strip() and not l.strip().startswith("//")]
    i = rng.choice(body)
    kind = rng.randrange(7)
    line = lines[i]
    if kind == 0:
        del lines[i]
    elif kind == 1:
        lines.insert(i, line)
    elif kind == 2:                                   # a number
        nums = list(re.finditer(r"\b\d+\b", line))
        if nums:
            m = rng.choice(nums)
            new = str(rng.choice([0, 1, 3, 7, 1 << 20, 1 << 31, int(m.group()) * 2 + 1]))
            lines[i] = line[:m.start()] + new + line[m.end():]
    elif kind == 3:                                   # an element type
        m = list(re.finditer(r"\b(f32|f16|bf16|i32|i64|i1|index)\b", line))
        if m:
            m = rng.choice(m)
            lines[i] = line[:m.start()] + rng.choice(TYPES) + line[m.end():]
    elif kind == 4:                                   # two tokens swapped
        toks = line.split(" ")
        if len(toks) > 2:
            a, b = rng.sample(range(len(toks)), 2)
            toks[a], toks[b] = toks[b], toks[a]
            lines[i] = " ".join(toks)
    elif kind == 5:                                   # another op
        m = re.search(r"\b(fakv|arith|scf)\.[a-z_]+\b", line)
        if m:
            lines[i] = line[:m.start()] + rng.choice(OPS) + line[m.end():]
    else:                                             # a shape dimension
        m = list(re.finditer(r"(\d+)x", line))
        if m:
            m = rng.choice(m)
            lines[i] = line[:m.start()] + str(rng.choice([1, 3, 5, 128, 4096])) + "x" + line[m.end():]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opt", required=True)
    ap.add_argument("--cases", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--level", choices=sorted(PIPELINES), default="fakv")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    sources = [open(f).read() for f in args.files]
    for f, text in zip(args.files, sources):
        if not any(l.strip() and not l.strip().startswith("//") for l in text.split("\n")):
            sys.exit(f"{f}: no IR to mutate")
    bad, outcomes = [], {"ok": 0, "error": 0}
    for case in range(args.cases):
        src = rng.randrange(len(sources))
        text = mutate(rng, sources[src])
        pipeline = rng.choice(PIPELINES[args.level])
        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
            f.write(text)
        try:
            p = subprocess.run([args.opt, f.name, "-split-input-file", *pipeline], capture_output=True,
                               text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            bad.append((case, args.files[src], pipeline, "hang", f.name))
            continue
        # (a failure without a diagnostic is no diagnosis: /bin/false as the tool passed as 200 diagnosed)
        crashed = p.returncode < 0 or p.returncode > 1 or "PLEASE submit a bug report" in p.stderr \
            or "Assertion" in p.stderr or "LLVM ERROR" in p.stderr or (p.returncode == 1 and "error:" not in p.stderr)
        if crashed:
            bad.append((case, args.files[src], pipeline, f"rc {p.returncode}: {p.stderr[-300:]}", f.name))
        else:
            outcomes["ok" if p.returncode == 0 else "error"] += 1
    print(f"{args.cases} mutants: {outcomes['ok']} compiled, {outcomes['error']} diagnosed, {len(bad)} crashed or hung")
    for case, src, pipeline, what, path in bad:
        print(f"case {case} ({src}, {' '.join(pipeline)}, kept in {path}): {what}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
