#!/usr/bin/env python3
"""Compare the memrefs a CPU test printed (printMemrefF32) with expected values.

usage: mlir-runner ... | compare_memrefs.py EXPECTED

EXPECTED holds one block per printed memref, in order:
    # <label> atol=<absolute tolerance>
    <whitespace-separated values>      (nan, inf, -inf allowed)
('##' lines are comments.) Every printed element must be within
atol + 5e-6 * |expected| of its expected value (the second term covers the 6
significant digits printMemrefF32 prints); NaN only matches NaN, infinities
only themselves. Exit status 0 when all match; the
worst element of each block is reported either way.
"""
import math
import re
import sys

PRINT_RTOL = 5e-6
NUMBER = re.compile(r"-?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)")


def printed_blocks(text):
    """The data of each 'Unranked Memref ... data =' print, flattened."""
    blocks = []
    for part in text.split("Unranked Memref")[1:]:
        data = part.split("data =", 1)[1]
        blocks.append([float(x) for x in NUMBER.findall(data)])
    return blocks


def expected_blocks(path):
    blocks, cur = [], None
    for line in open(path):
        line = line.strip()
        if line.startswith("##"):
            continue
        if line.startswith("#"):
            label = line[1:].split()[0]
            atol = float(re.search(r"atol=(\S+)", line).group(1))
            cur = (label, atol, [])
            blocks.append(cur)
        elif line:
            cur[2].extend(float(x) for x in line.split())
    return blocks


def close(got, want, atol):
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    if math.isinf(want) or math.isinf(got):
        return got == want
    return abs(got - want) <= atol + PRINT_RTOL * abs(want)


def main():
    got_blocks = printed_blocks(sys.stdin.read())
    want_blocks = expected_blocks(sys.argv[1])
    ok = len(got_blocks) == len(want_blocks)
    if not ok:
        print(f"FAIL: printed {len(got_blocks)} memrefs, expected {len(want_blocks)}")
    for got, (label, atol, want) in zip(got_blocks, want_blocks):
        if len(got) != len(want):
            print(f"FAIL {label}: {len(got)} values printed, {len(want)} expected")
            ok = False
            continue
        bad = [i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w, atol)]
        finite = [abs(g - w) for g, w in zip(got, want) if math.isfinite(g) and math.isfinite(w)]
        worst = max(finite, default=0.0)
        status = "ok" if not bad else "FAIL"
        print(f"{status} {label}: {len(want)} values, max |got - want| = {worst:.3g} (atol {atol:g})")
        for i in bad[:5]:
            print(f"    [{i}] got {got[i]!r} want {want[i]!r}")
        ok &= not bad
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
