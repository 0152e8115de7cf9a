"""The variant of kernels/README.md, made the way a user makes it: a copy of
kernels/decode.py with one line added to its score_mod (tanh soft-capping of
the scores q.k at CAP, before the softmax scale)."""
import importlib.util
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CAP = 30.0
ANCHOR = "    s = fl.length_mask(s, k_pos, valid)\n"
LINE = f"    s = fl.softcap(s, {CAP})\n"


def write(directory):
    """Write softcap_decode.py into `directory`; return its path."""
    src = open(os.path.join(ROOT, "kernels", "decode.py")).read()
    assert src.count(ANCHOR) == 1, "kernels/decode.py's score_mod changed: update test/python/variant.py"
    path = os.path.join(directory, "softcap_decode.py")
    with open(path, "w") as f:
        f.write(src.replace(ANCHOR, LINE + ANCHOR))
    return path


def load(directory):
    """The variant's module (its `decode` is the kernel)."""
    spec = importlib.util.spec_from_file_location("softcap_decode", write(directory))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
