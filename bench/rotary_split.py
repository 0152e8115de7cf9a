#!/usr/bin/env python3
"""Which rotation costs an interleaved appending call its extra GPU time,
q's or the new key's? Writes two copies of the installed fakv's kernels for
FAKV_KERNELS: qneox/ (decode.py rotates q NeoX-style, the new keys
interleaved) and kneox/ (the reverse). Their numerics are wrong on purpose:
only bench/append_cost.py's timings of them mean anything.

    python bench/rotary_split.py OUTDIR
    for v in qneox kneox; do FAKV_KERNELS=OUTDIR/$v python bench/append_cost.py; done
"""
import os
import re
import shutil
import sys


def main(out):
    import fakv.cache
    src = next(d for d in fakv.cache.kernel_dirs() if os.path.exists(os.path.join(d, "decode.py")))
    for name in ("qneox", "kneox"):
        folder = os.path.join(out, name)
        shutil.copytree(src, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.mlir"))
        path = os.path.join(folder, "decode.py")
        text = open(path).read()
        q_call = re.search(r"q = rotated_rows\(.*?INTERLEAVED\)", text, re.S)
        assert q_call, "decode.py's rotation of q not found"
        if name == "qneox":
            text = text[:q_call.start()] + q_call.group(0)[:-len("INTERLEAVED)")] + "False)" + text[q_call.end():]
        else:
            head, tail = text[:q_call.end()], text[q_call.end():]
            found = tail.count("ROTARY, INTERLEAVED)")
            assert found == 2, f"expected the append's and the new keys' INTERLEAVED after q's, found {found}"
            text = head + tail.replace("ROTARY, INTERLEAVED)", "ROTARY, False)")
        open(path, "w").write(text)
        print("wrote", folder)


if __name__ == "__main__":
    main(sys.argv[1])
