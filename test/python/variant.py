"""The variants of kernels/README.md, made the way a user makes them: a copy
of kernels/decode.py with one line added to its score_mod (tanh soft-capping
of the scores q.k at CAP, before the softmax scale); and one whose score_mod
depends on the query head (a temperature 1 + TEMP * h, as a tile: decode's
`h` passed down through attend)."""
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


TEMP = 0.25
PER_HEAD = [   # (the line of decode.py, what the variant has there)
    ("def score_mod(s, q_pos, k_pos, valid, seqlen_k, seqlen_q, left, right, slopes,\n",
     "def score_mod(s, q_pos, k_pos, valid, seqlen_k, seqlen_q, left, right, slopes, hd,\n"),
    (ANCHOR, f"    s = s * (1.0 + {TEMP} * (q_pos * 0 + hd).to(fl.float32))[:, None]\n" + ANCHOR),
    ("scale, sm_scale, softcap,\n", "scale, sm_scale, softcap, hd,\n"),
    ("left, right, slopes, CAUSAL, WINDOW, ALIBI)\n", "left, right, slopes, hd, CAUSAL, WINDOW, ALIBI)\n"),
    ("softcap, CAUSAL, WINDOW, ALIBI, SOFTCAP, PRESCALE)\n", "softcap, h, CAUSAL, WINDOW, ALIBI, SOFTCAP, PRESCALE)\n"),
]


def load_per_head(directory):
    """The per-head variant's module (its `decode` is the kernel)."""
    src = open(os.path.join(ROOT, "kernels", "decode.py")).read()
    for line, new in PER_HEAD:
        assert src.count(line) == 1, f"kernels/decode.py changed ({line.strip()}): update test/python/variant.py"
        src = src.replace(line, new)
    path = os.path.join(directory, "temperature_decode.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location("temperature_decode", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
