"""float32 rounding for the checks the host makes of what kernels get as
float32 (the API's softmax_scale and softcap, the DSL's softcap bound): a
module of its own, importing nothing of fakv, so that both the API's warm
path (interface.py) and the DSL (language.py) use it without one loading
the other."""
import math
import struct


def as_float32(x):
    """x as a float32 parameter holds it, back as a Python float: inf past
    float32's range (an int of any size too), 0 below its least subnormal."""
    try:
        return struct.unpack("<f", struct.pack("<f", float(x)))[0]
    except OverflowError:
        return math.inf if x > 0 else -math.inf
