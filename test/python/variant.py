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


def _imported(path):
    """The module of the Python file at `path` (named by its file)."""
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module(directory, name, src):
    """`src` written to directory/name.py and imported."""
    path = os.path.join(directory, name + ".py")
    with open(path, "w") as f:
        f.write(src)
    return _imported(path)


def load(directory):
    """The variant's module (its `decode` is the kernel)."""
    return _imported(write(directory))


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
    return _module(directory, "temperature_decode", src)


LAST = 8
CAUSAL_LINE = "        s = fl.causal_mask(s, q_pos, k_pos, seqlen_k - seqlen_q)\n"


def load_last_keys(directory):
    """A variant whose causal rule also keeps each query row's LAST latest keys only (a local window written
    under decode's CAUSAL): at one query row fakv's own causal mask is a no-op, this one is not."""
    src = open(os.path.join(ROOT, "kernels", "decode.py")).read()
    assert src.count(CAUSAL_LINE) == 1, "kernels/decode.py's causal mask changed: update test/python/variant.py"
    rule = f"        s = fl.where((k_pos[None, :] > q_pos[:, None] + seqlen_k - seqlen_q - {LAST}), s, float('-inf'))\n"
    return _module(directory, "last_keys_decode", src.replace(CAUSAL_LINE, CAUSAL_LINE + rule))


COMBINE_LINE = "    return fl.lse_combine(parts, lses)\n"


def load_doubling_combine(directory):
    """A combine variant whose output is twice the merged one (what merges the splits is seen in it)."""
    src = open(os.path.join(ROOT, "kernels", "combine.py")).read()
    assert src.count(COMBINE_LINE) == 1, "kernels/combine.py changed: update test/python/variant.py"
    return _module(directory, "doubling_combine", src.replace(
        COMBINE_LINE, "    out, lse = fl.lse_combine(parts, lses)\n    return out * 2.0, lse\n"))
